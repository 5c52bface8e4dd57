package solana

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
)

// attempt is one signed transaction of an intent.
type attempt struct {
	Signature string    `json:"signature"`
	Raw       []byte    `json:"raw"`
	Blockhash string    `json:"blockhash"`
	LastValid uint64    `json:"lastValid"`
	At        time.Time `json:"at"`
}

// intent is the durable record of one payment, withdrawal or registration.
type intent = intents.Intent[attempt]

// builder returns the instructions of an attempt; it runs again for every
// rebuilt attempt, with fresh chain state.
type builder func(ctx context.Context) ([]solanago.Instruction, error)

// newLedger is the connector's intent ledger: an attempt whose blockhash
// expired (BlockhashNotFound at preflight, or not landed by its last valid
// block height) can never land, so the ledger has it rebuilt with a fresh
// blockhash and re-signed.
func (c *Connector) newLedger() *intents.Ledger[attempt] {
	return &intents.Ledger[attempt]{
		Options: c.opts, Base: c.Base, Table: TableIntents,
		AfterSign: FailAfterSign, BeforeSend: FailBeforeSend, AfterSend: FailAfterSend,
		Hash:   func(at attempt) string { return at.Signature },
		Resume: c.resume,
		Send: func(ctx context.Context, at attempt) error {
			_, err := c.rpc.SendRawTransactionWithOpts(ctx, at.Raw, rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed})
			return err
		},
		Verdict:   c.verdict,
		Exhausted: func(string) string { return "blockhashes kept expiring" },
	}
}

// run sends the intent under key exactly once (intents.Ledger.Run), its
// transaction built by build with a recent blockhash and the source as fee
// payer.
func (c *Connector) run(ctx context.Context, key string, it *intent, build builder) (chains.TxResult, error) {
	return c.ledger.Run(ctx, key, it, func(ctx context.Context, it *intent) (attempt, error) {
		src, err := parseAddress(it.Source)
		if err != nil {
			return attempt{}, err
		}
		return c.buildAttempt(ctx, it, src, build)
	})
}

// verdict reads sendTransaction's answer; a sent attempt is confirmed
// (or found expired) before it is judged.
func (c *Connector) verdict(ctx context.Context, it *intent, at attempt, sent error) (intents.Outcome, error) {
	v, txErr := classify(sent)
	switch v {
	case sentOK:
		landed, lerr, err := c.confirm(ctx, at)
		if err != nil {
			return intents.Unknown, err
		}
		if !landed {
			return intents.Stale, errors.New("blockhash expired before it landed")
		}
		if lerr != nil {
			return intents.Rejected, c.rejection(it.Op, lerr)
		}
		return intents.Landed, nil
	case sentExpired:
		return intents.Stale, errors.New("BlockhashNotFound")
	case sentUnknown:
		return intents.Unknown, fmt.Errorf("send: %w", sent)
	}
	if txErr != nil {
		return intents.Rejected, c.rejection(it.Op, txErr)
	}
	return intents.Rejected, fmt.Errorf("solana rejected the %s: %v", it.Op, sent)
}

// resume settles a pending intent found in the store: an attempt in the
// ledger completes it; the newest attempt, while its blockhash is valid,
// is sent again; otherwise every attempt is dead.
func (c *Connector) resume(ctx context.Context, key string, it *intent, ver uint64) (bool, error) {
	sigs := make([]solanago.Signature, len(it.Attempts))
	for i, a := range it.Attempts {
		sigs[i] = solanago.MustSignatureFromBase58(a.Signature)
	}
	st, err := c.rpc.GetSignatureStatuses(ctx, true, sigs...)
	if err != nil {
		return false, c.Unavailable("signature statuses", err)
	}
	for i, s := range st.Value {
		if s == nil {
			continue
		}
		if s.Err != nil {
			return true, c.ledger.Fail(ctx, key, it, ver, it.Attempts[i].Signature, c.rejection(it.Op, s.Err))
		}
		return true, c.ledger.Complete(ctx, key, it, ver, it.Attempts[i].Signature)
	}
	last := it.Attempts[len(it.Attempts)-1]
	valid, err := c.rpc.IsBlockhashValid(ctx, solanago.MustHashFromBase58(last.Blockhash), rpc.CommitmentConfirmed)
	if err != nil {
		return false, c.Unavailable("isBlockhashValid", err)
	}
	if !valid.Value {
		return false, nil // dead: rebuild
	}
	return c.ledger.Resend(ctx, key, it, ver, last)
}

// buildAttempt takes a recent blockhash, builds the transaction with the
// source as fee payer (or the relayer, for an intent with a relayer spend), has the Signer sign the message and checks it.
func (c *Connector) buildAttempt(ctx context.Context, it *intent, src solanago.PublicKey, build builder) (attempt, error) {
	if c.opts.Signer == nil {
		return attempt{}, errors.New("solana: no Signer configured")
	}
	ixs, err := build(ctx)
	if err != nil {
		return attempt{}, err
	}
	bh, err := c.rpc.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return attempt{}, c.Unavailable("getLatestBlockhash", err)
	}
	// The fee payer is the source, or the relayer (it.Relayer set): then
	// it signs first, under its own spend, and the source second.
	payer, signers := src, 1
	if it.Relayer != nil {
		if c.relayer == nil {
			return attempt{}, fmt.Errorf("%w: this withdrawal's fee payer is the relayer, which is not enabled on this server any more (--relayer)", chains.ErrUnavailable)
		}
		if payer, err = parseAddress(c.relayer.Address); err != nil {
			return attempt{}, err
		}
		signers = 2
	}
	tx, err := solanago.NewTransaction(ixs, bh.Value.Blockhash, solanago.TransactionPayer(payer))
	if err != nil {
		return attempt{}, fmt.Errorf("solana: build transaction: %w", err)
	}
	if int(tx.Message.Header.NumRequiredSignatures) != signers {
		return attempt{}, fmt.Errorf("solana: transaction needs %d signers, the connector signs for %d", tx.Message.Header.NumRequiredSignatures, signers)
	}
	msg, err := tx.Message.MarshalBinary()
	if err != nil {
		return attempt{}, err
	}
	if it.Relayer != nil {
		sig, err := c.sign(ctx, chains.SpendRequest(c.relayer.Key, msg, *it.Relayer), payer, msg)
		if err != nil {
			return attempt{}, err
		}
		tx.Signatures = append(tx.Signatures, sig)
	}
	req := chains.NoValueRequest(it.KeyRef, msg, nil, "")
	if it.Spend != nil {
		req = chains.SpendRequest(it.KeyRef, msg, *it.Spend)
		req.Fee = it.Fee
	}
	sig, err := c.sign(ctx, req, src, msg)
	if err != nil {
		return attempt{}, err
	}
	tx.Signatures = append(tx.Signatures, sig)
	raw, err := tx.MarshalBinary()
	if err != nil {
		return attempt{}, err
	}
	return attempt{Signature: tx.Signatures[0].String(), Raw: raw, Blockhash: bh.Value.Blockhash.String(),
		LastValid: bh.Value.LastValidBlockHeight, At: c.opts.Now().UTC()}, nil
}

// sign has the Signer sign msg as req says and checks that the signature
// is signer's.
func (c *Connector) sign(ctx context.Context, req chains.SignRequest, signer solanago.PublicKey, msg []byte) (solanago.Signature, error) {
	sig, err := c.opts.Signer.Sign(ctx, req)
	if err != nil {
		return solanago.Signature{}, fmt.Errorf("solana: sign: %w", err)
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(ed25519.PublicKey(signer[:]), msg, sig) {
		k := req.Key
		return solanago.Signature{}, fmt.Errorf("solana: key %s/%s/%d does not sign for %s", k.AgentID, k.Chain, k.Epoch, signer)
	}
	return solanago.SignatureFromBytes(sig), nil
}

// confirm polls the signature's status until it lands (its error, if it
// failed in the ledger) or its blockhash expires (landed = false).
func (c *Connector) confirm(ctx context.Context, at attempt) (landed bool, txErr any, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ConfirmTimeout)
	defer cancel()
	sig := solanago.MustSignatureFromBase58(at.Signature)
	for {
		st, err := c.rpc.GetSignatureStatuses(ctx, false, sig)
		if err == nil && len(st.Value) == 1 && st.Value[0] != nil {
			if s := st.Value[0]; s.ConfirmationStatus != rpc.ConfirmationStatusProcessed {
				return true, s.Err, nil
			}
		}
		h, herr := c.rpc.GetBlockHeight(ctx, rpc.CommitmentConfirmed)
		if herr == nil && h > at.LastValid {
			// One last look: it may have landed in the last valid block.
			st, err := c.rpc.GetSignatureStatuses(ctx, true, sig)
			if err == nil && len(st.Value) == 1 && st.Value[0] != nil {
				return true, st.Value[0].Err, nil
			}
			return false, nil, nil
		}
		select {
		case <-ctx.Done():
			return false, nil, fmt.Errorf("%s not confirmed yet: %w", at.Signature, ctx.Err())
		case <-time.After(c.cfg.PollInterval):
		}
	}
}

type verdict int

const (
	sentOK       verdict = iota
	sentExpired          // BlockhashNotFound: the attempt can never land
	sentRejected         // preflight or sanitize failure: it will never land as is
	sentUnknown          // no verdict (transport): it may have been forwarded
)

// classify reads sendTransaction's error; txErr is the TransactionError of
// a failed simulation.
func classify(err error) (verdict, any) {
	if err == nil {
		return sentOK, nil
	}
	var re *jsonrpc.RPCError
	if !errors.As(err, &re) {
		return sentUnknown, nil
	}
	var txErr any
	if m, ok := re.Data.(map[string]any); ok {
		txErr = m["err"]
	}
	switch txErr {
	case "BlockhashNotFound":
		return sentExpired, txErr
	case "AlreadyProcessed":
		return sentOK, nil
	}
	if re.Code == -32005 { // node unhealthy / behind
		return sentUnknown, nil
	}
	if txErr == nil {
		txErr = re.Message
	}
	return sentRejected, txErr
}

// rejection maps a TransactionError (its JSON form) to Veil's errors.
func (c *Connector) rejection(op string, txErr any) error {
	b, _ := json.Marshal(txErr)
	desc := string(b)
	switch v := txErr.(type) {
	case string:
		switch v {
		case "InsufficientFundsForFee", "AccountNotFound":
			return fmt.Errorf("%w: solana rejected the %s: %s", chains.ErrInsufficientFunds, op, v)
		}
		return fmt.Errorf("solana rejected the %s: %s", op, v)
	case map[string]any:
		if _, ok := v["InsufficientFundsForRent"]; ok {
			return fmt.Errorf("%w: solana rejected the %s: %s (an account would be left below the rent-exempt minimum, 0.00089088 SOL for a plain account)", chains.ErrInvalidAmount, op, desc)
		}
		if ie, ok := v["InstructionError"].([]any); ok && len(ie) == 2 {
			if m, ok := ie[1].(map[string]any); ok {
				if code, ok := number(m["Custom"]); ok && code == 1 {
					return fmt.Errorf("%w: solana rejected the %s: %s", chains.ErrInsufficientFunds, op, desc)
				}
			}
		}
	}
	return fmt.Errorf("solana rejected the %s: %s", op, desc)
}

// number reads a JSON number decoded as float64 or json.Number.
func number(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// Maintain is called by the chain actor (actors/chain): it delivers the
// settlements still kept and settles the pending intents (with restart,
// every one a previous process left; otherwise those a lost answer left)
// — an attempt found in the ledger completes its intent, one that may
// still land is sent again, and one whose attempts stay dead is reported
// failed (intents.Ledger.Settle). A retry of the key meanwhile rebuilds
// it, as always.
func (c *Connector) Maintain(ctx context.Context, restart bool) error {
	return c.ledger.Settle(ctx, restart)
}
