package x402

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/eip3009"
)

// Reasons a payment is invalid: the reference facilitator's invalidReason
// codes, so a client that knows them reads ours.
const (
	ReasonVersion          = "invalid_x402_version"
	ReasonPayload          = "invalid_payload"
	ReasonScheme           = "invalid_exact_evm_scheme"
	ReasonNetwork          = "invalid_exact_evm_network_mismatch"
	ReasonAsset            = "invalid_exact_evm_asset_mismatch"
	ReasonSignature        = "invalid_exact_evm_signature"
	ReasonRecipient        = "invalid_exact_evm_recipient_mismatch"
	ReasonExpired          = "invalid_exact_evm_payload_authorization_valid_before"
	ReasonNotYetValid      = "invalid_exact_evm_payload_authorization_valid_after"
	ReasonValue            = "invalid_exact_evm_payload_authorization_value_mismatch"
	ReasonNonceUsed        = "invalid_exact_evm_nonce_already_used"
	ReasonInsufficientFund = "invalid_exact_evm_insufficient_balance"
	ReasonSettlement       = "invalid_exact_evm_transaction_failed"
)

// ErrInvalid matches every *Invalid.
var ErrInvalid = errors.New("x402: invalid payment")

// Invalid is a payment a server refuses: Reason is one of the Reason
// codes, Message says what was wrong in words.
type Invalid struct {
	Reason  string
	Message string
}

func (e *Invalid) Error() string { return "x402: invalid payment (" + e.Reason + "): " + e.Message }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Invalid) Is(target error) bool { return target == ErrInvalid }

func invalid(reason, format string, args ...any) error {
	return &Invalid{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ReasonOf is err's Reason ("" when err is not an *Invalid).
func ReasonOf(err error) string {
	var inv *Invalid
	if errors.As(err, &inv) {
		return inv.Reason
	}
	return ""
}

// ExpiryMargin is how long before validBefore an authorization is taken
// as expired: the time its settlement needs to be mined (the reference
// uses 6 seconds).
const ExpiryMargin = 6 * time.Second

// Verify checks p against the server's own requirement want at now,
// without the chain: version, scheme, network and token; that the
// authorization is signed by its from over want's EIP-712 domain; that it
// pays want.PayTo exactly want.Amount; and that now is inside its validity
// window. It answers the typed authorization and its signature for
// settlement. What needs the chain (the nonce unused, the balance) is the
// settler's to check (chains.TransferAuthorizer).
func Verify(p Payload, want Requirements, now time.Time) (chains.TransferAuthorization, eip3009.Signature, error) {
	var none chains.TransferAuthorization
	switch {
	case p.X402Version != Version:
		return none, eip3009.Signature{}, invalid(ReasonVersion, "x402Version %d; this server speaks %d", p.X402Version, Version)
	case p.Accepted.Scheme != SchemeExact || want.Scheme != SchemeExact:
		return none, eip3009.Signature{}, invalid(ReasonScheme, "scheme %q; this resource accepts %q", p.Accepted.Scheme, SchemeExact)
	case p.Accepted.Network != want.Network:
		return none, eip3009.Signature{}, invalid(ReasonNetwork, "network %q; this resource is paid on %q", p.Accepted.Network, want.Network)
	case !strings.EqualFold(p.Accepted.Asset, want.Asset):
		return none, eip3009.Signature{}, invalid(ReasonAsset, "asset %q; this resource is paid in the token %s", p.Accepted.Asset, want.Asset)
	}
	a, sig, err := p.Payload.Typed(want)
	if err != nil {
		return none, sig, invalid(ReasonPayload, "%v", err)
	}
	if err := eip3009.Verify(a, sig); err != nil {
		return none, sig, invalid(ReasonSignature, "the authorization is not signed by its from over this token's EIP-712 domain: %v", err)
	}
	if common.HexToAddress(a.To) != common.HexToAddress(want.PayTo) {
		return none, sig, invalid(ReasonRecipient, "the authorization pays %s; this resource is paid to %s", a.To, want.PayTo)
	}
	unix := big.NewInt(now.Unix())
	if a.ValidBefore.Cmp(new(big.Int).Add(unix, big.NewInt(int64(ExpiryMargin/time.Second)))) < 0 {
		return none, sig, invalid(ReasonExpired, "the authorization expired or expires within %s (validBefore %s, now %s)", ExpiryMargin, a.ValidBefore, unix)
	}
	if a.ValidAfter.Cmp(unix) > 0 {
		return none, sig, invalid(ReasonNotYetValid, "the authorization is valid only after %s (now %s)", a.ValidAfter, unix)
	}
	if amt, ok := new(big.Int).SetString(want.Amount, 10); !ok || a.Value.Cmp(amt) != 0 {
		return none, sig, invalid(ReasonValue, "the authorization moves %s base units; this resource costs exactly %s", a.Value, want.Amount)
	}
	return a, sig, nil
}
