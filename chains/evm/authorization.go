package evm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/chains/evm/eip3009"
	"github.com/veilhq/veil/chains/internal/intents"
)

var _ chains.TransferAuthorizer = (*Connector)(nil)

// ErrAuthorizationRefused is chains.ErrAuthorizationRefused.
var ErrAuthorizationRefused = chains.ErrAuthorizationRefused

func (c *Connector) refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", chains.ErrAuthorizationRefused, c.cfg.Chain, fmt.Sprintf(format, args...))
}

// authToken resolves the token an authorization names and checks that it
// is for this chain.
func (c *Connector) authToken(auth chains.TransferAuthorization) (Token, error) {
	contract, err := eip3009.Address(auth.Contract)
	if err != nil {
		return Token{}, c.refused("verifyingContract: %v", err)
	}
	t, ok := c.tokenByAddress(contract)
	if !ok {
		return Token{}, c.refused("%s is not a token Veil knows on this chain", contract.Hex())
	}
	if auth.ChainID == nil || auth.ChainID.Cmp(c.chainID) != 0 {
		return Token{}, c.refused("the authorization is for chain id %v, this chain is %s", auth.ChainID, c.chainID)
	}
	return t, nil
}

func (c *Connector) readString(ctx context.Context, token common.Address, data []byte, unpack func([]byte) (string, error), what string) (string, error) {
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &token, Data: data}, nil)
	if err != nil {
		return "", c.callError(what, err)
	}
	s, err := unpack(out)
	if err != nil {
		return "", fmt.Errorf("evm: %s: %s of %s: %w", c.cfg.Chain, what, token.Hex(), err)
	}
	return s, nil
}

// AuthorizationDomain reads the EIP-712 name and version of the token
// whose symbol is assetSym (a symbol from outside: an x402 requirement's
// invoice, found once here).
func (c *Connector) AuthorizationDomain(ctx context.Context, assetSym string) (chains.TransferAuthorization, error) {
	d, err := c.Asset(assetSym)
	if err != nil {
		return chains.TransferAuthorization{}, err
	}
	return c.TokenDomain(ctx, d)
}

// TokenDomain reads the EIP-712 name and version of d, one of the
// connector's own tokens (Own).
func (c *Connector) TokenDomain(ctx context.Context, d chains.Asset) (chains.TransferAuthorization, error) {
	if err := c.Own(d); err != nil {
		return chains.TransferAuthorization{}, err
	}
	a := tokenOf(d)
	if a.Native() {
		return chains.TransferAuthorization{}, fmt.Errorf("%w: %s is the native asset of %s; EIP-3009 moves tokens only", chains.ErrNoAuthorizations, a.Symbol, c.cfg.Chain)
	}
	name, err := c.readString(ctx, a.token, c.token.PackName(), c.token.UnpackName, "name")
	if err != nil {
		return chains.TransferAuthorization{}, err
	}
	version, err := c.readString(ctx, a.token, c.token.PackVersion(), c.token.UnpackVersion, "version")
	if err != nil {
		return chains.TransferAuthorization{}, fmt.Errorf("%w (the token at %s may not implement EIP-3009)", err, a.token.Hex())
	}
	return chains.TransferAuthorization{Name: name, Version: version, ChainID: new(big.Int).Set(c.chainID),
		Contract: a.token.Hex(), Asset: a.Symbol}, nil
}

// SignAuthorization signs auth with from's key as a spend (see
// chains.TransferAuthorizer). The spend's asset is the token's symbol from
// the configuration, never auth.Asset as given.
func (c *Connector) SignAuthorization(ctx context.Context, from chains.KeyRef, auth chains.TransferAuthorization, idempotencyKey string) ([]byte, error) {
	if c.opts.Signer == nil {
		return nil, errors.New("evm: no Signer configured")
	}
	t, err := c.authToken(auth)
	if err != nil {
		return nil, err
	}
	d := t.asset(c.cfg.Chain)
	auth.Asset = d.Symbol
	digest, err := eip3009.Digest(auth)
	if err != nil {
		return nil, c.refused("%v", err)
	}
	if auth.Value.Sign() <= 0 {
		return nil, c.refused("the value must be greater than zero")
	}
	spend := d.Spend(idempotencyKey, from.AgentID, chains.NewAmount(auth.Value, d.Decimals), common.HexToAddress(auth.To).Hex())
	raw, err := c.opts.Signer.Sign(ctx, chains.AuthorizationRequest(from, digest[:], auth, spend))
	if err != nil {
		return nil, fmt.Errorf("evm: sign authorization: %w", err)
	}
	sig, err := eip3009.ParseSignature(raw)
	if err != nil {
		return nil, fmt.Errorf("evm: sign authorization: %w", err)
	}
	if err := eip3009.Verify(auth, sig); err != nil {
		return nil, fmt.Errorf("evm: key %s/%s/%d does not sign for from %s: %w", from.AgentID, from.Chain, from.Epoch, auth.From, err)
	}
	// Followed until its fate is known (settleAuthorizations), or not
	// handed out.
	if err := c.trackAuthorization(ctx, from.AgentID, idempotencyKey, auth); err != nil {
		return nil, fmt.Errorf("evm: track authorization: %w", err)
	}
	return sig[:], nil
}

// AuthorizationUsed reads the token's authorizationState(from, nonce).
func (c *Connector) AuthorizationUsed(ctx context.Context, auth chains.TransferAuthorization) (bool, error) {
	if _, err := c.authToken(auth); err != nil {
		return false, err
	}
	from, err := eip3009.Address(auth.From)
	if err != nil {
		return false, c.refused("from: %v", err)
	}
	token := common.HexToAddress(auth.Contract)
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &token, Data: c.token.PackAuthorizationState(from, auth.Nonce)}, nil)
	if err != nil {
		return false, c.callError("authorizationState", err)
	}
	return c.token.UnpackAuthorizationState(out)
}

// SettleAuthorization submits transferWithAuthorization from submitter
// (see chains.TransferAuthorizer), or from the relayer when one is set
// (UseRelayer): the submitter pays the gas and is the transaction's
// sender, so the agent's main account would be linked to the invoice's
// one-time address. The transaction moves no value of the
// submitter's: it is signed as a no-value request, which the enclave
// decodes (enclave/txcheck). The gas estimate runs the call first, so an
// authorization the token would refuse (expired, used nonce, bad
// signature, insufficient balance) is reported before anything is sent.
func (c *Connector) SettleAuthorization(ctx context.Context, submitter chains.KeyRef, submitterAddress string, auth chains.TransferAuthorization, rawSig []byte, idempotencyKey string) (chains.TxResult, error) {
	if _, err := c.authToken(auth); err != nil {
		return chains.TxResult{}, err
	}
	submitter, submitterAddress, relayed := c.settleSubmitter(submitter, submitterAddress)
	sender, err := parseAddress(submitterAddress)
	if err != nil {
		return chains.TxResult{}, err
	}
	sig, err := eip3009.ParseSignature(rawSig)
	if err != nil {
		return chains.TxResult{}, c.refused("%v", err)
	}
	if err := eip3009.Verify(auth, sig); err != nil {
		return chains.TxResult{}, c.refused("%v", err)
	}
	data, err := eip3009.Calldata(auth, sig)
	if err != nil {
		return chains.TxResult{}, c.refused("%v", err)
	}
	token := common.HexToAddress(auth.Contract)
	fp := intents.Fingerprint("settle", sender.Hex(), token.Hex(), common.HexToAddress(auth.From).Hex(), hexutil.Encode(auth.Nonce[:]))
	key := "settle/" + idempotencyKey
	r, done, err := c.lookup(ctx, key, fp)
	if err != nil {
		return chains.TxResult{}, err
	}
	if !done {
		gas, err := c.estimateGas(ctx, sender, token, nil, data)
		if err != nil {
			return chains.TxResult{}, err
		}
		r, err = c.submit(ctx, key, txSpec{op: "settle", fingerprint: fp, from: sender, ref: submitter, to: token, data: data, gas: gas,
			extra: map[string]string{"from": auth.From, "to": auth.To, "value": auth.Value.String()}})
		if err != nil {
			return chains.TxResult{}, fmt.Errorf("evm: %s: settle the authorization of %s: %w", c.cfg.Chain, auth.From, err)
		}
	}
	rc, err := c.WaitMined(ctx, r.TxHash)
	if err != nil {
		return r, c.OutcomeUnknown(key, r.TxHash, "receipt", err)
	}
	if rc.Status != types.ReceiptStatusSuccessful {
		return chains.TxResult{}, c.refused("the settlement %s reverted", r.TxHash)
	}
	if !hasTransfer(rc, token, common.HexToAddress(auth.From), common.HexToAddress(auth.To), auth.Value) {
		return chains.TxResult{}, c.refused("the settlement %s logged no transfer of %s from %s to %s", r.TxHash, auth.Value, auth.From, auth.To)
	}
	if relayed && !done {
		c.relayerPaid(rc, nil)
	}
	return r, nil
}

// hasTransfer says whether rc logs token's Transfer(from, to, value).
func hasTransfer(rc *types.Receipt, token, from, to common.Address, value *big.Int) bool {
	for _, l := range rc.Logs {
		if l.Address != token || len(l.Topics) != 3 || l.Topics[0] != transferTopic {
			continue
		}
		if common.BytesToAddress(l.Topics[1][:]) == from && common.BytesToAddress(l.Topics[2][:]) == to &&
			bytes.Equal(common.LeftPadBytes(value.Bytes(), 32), l.Data) {
			return true
		}
	}
	return false
}

// authorizationRevert names a token's refusal of an authorization.
func authorizationRevert(e any) (string, bool) {
	switch e.(type) {
	case *bindings.TestTokenAuthorizationExpired:
		return "the authorization expired (validBefore has passed)", true
	case *bindings.TestTokenAuthorizationNotYetValid:
		return "the authorization is not valid yet (validAfter)", true
	case *bindings.TestTokenAuthorizationUsedOrCanceled:
		return "the authorization's nonce was already used or canceled", true
	case *bindings.TestTokenInvalidSignature:
		return "the authorization's signature is not from its from address", true
	}
	return "", false
}
