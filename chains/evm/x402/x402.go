// Package x402 is the x402 HTTP payment protocol (version 2) for the
// `exact` scheme on EVM chains: the requirement, payload and settlement
// types, their headers, and the checks a resource server makes of a
// payment before it settles it. The shapes and header names are those of
// the reference implementation (npm @x402/core and @x402/evm 2.27.0);
// docs/x402.md describes the flows.
//
// A payment is an EIP-3009 transferWithAuthorization of the requirement's
// token (chains/evm/eip3009): the payer signs, the server submits it.
package x402

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/eip3009"
)

// Version is the protocol version this package speaks.
const Version = 2

// Header names (HTTP headers are case-insensitive).
const (
	// HeaderRequired carries a 402's PaymentRequired (base64 JSON).
	HeaderRequired = "PAYMENT-REQUIRED"
	// HeaderSignature carries the client's Payload (base64 JSON).
	HeaderSignature = "PAYMENT-SIGNATURE"
	// HeaderResponse carries the server's SettleResponse (base64 JSON).
	HeaderResponse = "PAYMENT-RESPONSE"
)

// SchemeExact is the only scheme this package pays and accepts.
const SchemeExact = "exact"

// MaxHeader bounds a header this package decodes (an exact EVM payload is
// under 2 KiB encoded; the rest is room for a resource description).
const MaxHeader = 16 << 10

// Resource describes what is paid for.
type Resource struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// Extra is the `exact` EVM scheme's extra: the token's EIP-712 domain name
// and version (and the transfer method, "eip3009" when absent).
type Extra struct {
	Name                string `json:"name"`
	Version             string `json:"version"`
	AssetTransferMethod string `json:"assetTransferMethod,omitempty"`
}

// Requirements is one way to pay (PaymentRequirements v2).
type Requirements struct {
	Scheme string `json:"scheme"`
	// Network is a CAIP-2 id, "eip155:<chain id>".
	Network string `json:"network"`
	// Amount is in the token's base units (decimal string).
	Amount string `json:"amount"`
	// Asset is the token contract.
	Asset             string `json:"asset"`
	PayTo             string `json:"payTo"`
	MaxTimeoutSeconds int64  `json:"maxTimeoutSeconds"`
	Extra             *Extra `json:"extra,omitempty"`
}

// PaymentRequired is a 402's offer (in HeaderRequired).
type PaymentRequired struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error,omitempty"`
	Resource    Resource       `json:"resource"`
	Accepts     []Requirements `json:"accepts"`
}

// Authorization is an EIP-3009 authorization as x402 carries it: addresses
// and a 0x-hex nonce, numbers as decimal strings.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

// ExactPayload is the `exact` EVM scheme's payload (EIP-3009 method).
type ExactPayload struct {
	Authorization Authorization `json:"authorization"`
	// Signature is 0x-hex r ‖ s ‖ v (65 bytes).
	Signature string `json:"signature"`
}

// Payload is what a client sends in HeaderSignature.
type Payload struct {
	X402Version int          `json:"x402Version"`
	Resource    *Resource    `json:"resource,omitempty"`
	Accepted    Requirements `json:"accepted"`
	Payload     ExactPayload `json:"payload"`
}

// SettleResponse is the settlement a server answers in HeaderResponse.
type SettleResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Payer       string `json:"payer,omitempty"`
	// Transaction is the settlement's transaction hash ("" on failure).
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Amount      string `json:"amount,omitempty"`
}

// ErrMalformed reports a header that does not decode to its type.
var ErrMalformed = errors.New("x402: malformed header")

// Encode is a header value: base64 (standard, padded) of v's JSON, as the
// reference encodes it.
func Encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// Decode reads a header value into v: base64 of one JSON object with no
// unknown fields that matter (unknown ones are ignored, as the reference's
// schemas ignore them), at most MaxHeader bytes.
func Decode(header string, v any) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(header) > MaxHeader {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(header), MaxHeader)
	}
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return fmt.Errorf("%w: not base64: %v", ErrMalformed, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: not the expected JSON: %v", ErrMalformed, err)
	}
	return nil
}

// Network is the CAIP-2 id of an EVM chain id.
func Network(chainID *big.Int) string { return "eip155:" + chainID.String() }

// ChainID parses "eip155:<id>".
func ChainID(network string) (*big.Int, error) {
	rest, ok := strings.CutPrefix(network, "eip155:")
	id, good := new(big.Int).SetString(rest, 10)
	if !ok || !good || id.Sign() <= 0 || rest != id.String() {
		return nil, fmt.Errorf("%w: network %q is not eip155:<chain id>", ErrMalformed, network)
	}
	return id, nil
}

// NonceFor derives an authorization nonce from the payer's agent id and
// the payment's idempotency key: a retried payment signs the same nonce,
// so at most one of its authorizations can ever be settled.
func NonceFor(agentID, idempotencyKey string) [32]byte {
	return sha256.Sum256([]byte("veil/x402/nonce\x00" + agentID + "\x00" + idempotencyKey))
}

func uint256(s, what string) (*big.Int, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Sign() < 0 || n.BitLen() > 256 || s != n.String() {
		return nil, fmt.Errorf("%w: %s %q is not a decimal uint256", ErrMalformed, what, s)
	}
	return n, nil
}

// Typed is the EIP-3009 authorization a paid under req: its message from
// the payload, its domain from req (name and version from Extra, chain id
// from Network, contract from Asset), and its signature.
func (p ExactPayload) Typed(req Requirements) (chains.TransferAuthorization, eip3009.Signature, error) {
	var t chains.TransferAuthorization
	if req.Extra == nil || req.Extra.Name == "" || req.Extra.Version == "" {
		return t, eip3009.Signature{}, fmt.Errorf("%w: the requirement has no EIP-712 domain (extra.name, extra.version)", ErrMalformed)
	}
	chainID, err := ChainID(req.Network)
	if err != nil {
		return t, eip3009.Signature{}, err
	}
	t = chains.TransferAuthorization{Name: req.Extra.Name, Version: req.Extra.Version, ChainID: chainID, Contract: req.Asset,
		From: p.Authorization.From, To: p.Authorization.To}
	for _, f := range []struct {
		dst  **big.Int
		s    string
		what string
	}{{&t.Value, p.Authorization.Value, "value"}, {&t.ValidAfter, p.Authorization.ValidAfter, "validAfter"}, {&t.ValidBefore, p.Authorization.ValidBefore, "validBefore"}} {
		if *f.dst, err = uint256(f.s, f.what); err != nil {
			return t, eip3009.Signature{}, err
		}
	}
	nonce, err := hexutil.Decode(p.Authorization.Nonce)
	if err != nil || len(nonce) != 32 {
		return t, eip3009.Signature{}, fmt.Errorf("%w: nonce %q is not 32 bytes of 0x-hex", ErrMalformed, p.Authorization.Nonce)
	}
	copy(t.Nonce[:], nonce)
	for _, a := range []string{t.From, t.To, t.Contract} {
		if _, err := eip3009.Address(a); err != nil {
			return t, eip3009.Signature{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	raw, err := hexutil.Decode(p.Signature)
	if err != nil {
		return t, eip3009.Signature{}, fmt.Errorf("%w: signature is not 0x-hex", ErrMalformed)
	}
	sig, err := eip3009.ParseSignature(raw)
	if err != nil {
		return t, eip3009.Signature{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return t, sig, nil
}

// PayloadOf is the x402 payload of a signed authorization paying req.
func PayloadOf(req Requirements, res *Resource, a chains.TransferAuthorization, sig []byte) Payload {
	return Payload{
		X402Version: Version, Resource: res, Accepted: req,
		Payload: ExactPayload{
			Authorization: Authorization{
				From: common.HexToAddress(a.From).Hex(), To: common.HexToAddress(a.To).Hex(), Value: a.Value.String(),
				ValidAfter: a.ValidAfter.String(), ValidBefore: a.ValidBefore.String(), Nonce: hexutil.Encode(a.Nonce[:]),
			},
			Signature: hexutil.Encode(sig),
		},
	}
}
