package stellar

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
)

// attempt is one signed transaction of an intent.
type attempt struct {
	Hash     string    `json:"hash"`
	Envelope string    `json:"envelope"`
	Seq      int64     `json:"seq"`
	MaxTime  int64     `json:"maxTime"`
	At       time.Time `json:"at"`
}

// intent is the durable record of one payment, withdrawal or registration.
type intent = intents.Intent[attempt]

// builder returns the operations (and memo) of an attempt; it runs again
// for every rebuilt attempt, with fresh chain state.
type builder func(ctx context.Context) ([]txnbuild.Operation, txnbuild.Memo, error)

// newLedger is the connector's intent ledger: an attempt rejected with
// tx_bad_seq or tx_too_late can never enter the ledger (its sequence number
// is used, or its time bounds passed), so the ledger has the transaction
// rebuilt with the current sequence number and re-signed.
func (c *Connector) newLedger() *intents.Ledger[attempt] {
	return &intents.Ledger[attempt]{
		Options: c.opts, Base: c.Base, Table: TableIntents,
		AfterSign: FailAfterSign, BeforeSend: FailBeforeSubmit, AfterSend: FailAfterSubmit,
		Hash:    func(at attempt) string { return at.Hash },
		Resume:  c.resume,
		Send:    c.submit,
		Verdict: c.verdict,
		Exhausted: func(source string) string {
			return source + " kept failing with a stale sequence number"
		},
	}
}

// run submits the intent under key exactly once (intents.Ledger.Run), its
// transaction built by build on the source's sequence number.
func (c *Connector) run(ctx context.Context, key string, it *intent, build builder) (chains.TxResult, error) {
	return c.ledger.Run(ctx, key, it, func(ctx context.Context, it *intent) (attempt, error) {
		return c.buildAttempt(ctx, it, build)
	})
}

// submit submits an attempt's envelope; a transaction Horizon reports as
// failed is an error too.
func (c *Connector) submit(ctx context.Context, at attempt) error {
	tx, err := c.submitEnvelope(ctx, at.Envelope)
	if err == nil && !tx.Successful {
		err = fmt.Errorf("stellar: transaction %s failed", tx.Hash)
	}
	return err
}

// verdict reads Horizon's answer to a submission.
func (c *Connector) verdict(_ context.Context, it *intent, at attempt, sent error) (intents.Outcome, error) {
	if sent == nil {
		return intents.Landed, nil
	}
	codes := resultCodes(sent)
	switch {
	case codes == nil:
		// No answer from the network: the attempt may be in the ledger.
		return intents.Unknown, fmt.Errorf("submit: %w", sent)
	case codes.TransactionCode == "tx_bad_seq" || codes.TransactionCode == "tx_too_late":
		return intents.Stale, fmt.Errorf("%s at sequence number %d", codes.TransactionCode, at.Seq)
	}
	return intents.Rejected, c.rejection(it.Op, codes)
}

// resume settles a pending intent found in the store: an attempt in the
// ledger completes it (done = true); the newest attempt, if it may still
// enter the ledger, is submitted again; otherwise every attempt is dead
// and the caller builds a new one.
func (c *Connector) resume(ctx context.Context, key string, it *intent, ver uint64) (bool, error) {
	for i := len(it.Attempts) - 1; i >= 0; i-- {
		tx, err := c.call(ctx, func() (any, error) { return c.hc.TransactionDetail(it.Attempts[i].Hash) })
		if err == nil {
			t := tx.(hProtocol.Transaction)
			if t.Successful {
				return true, c.ledger.Complete(ctx, key, it, ver, t.Hash)
			}
			return true, c.ledger.Fail(ctx, key, it, ver, t.Hash, fmt.Errorf("stellar: transaction %s of key %q failed in the ledger; nothing was paid", t.Hash, key))
		}
		if !horizonclient.IsNotFoundError(err) {
			return false, c.Unavailable("transaction", err)
		}
	}
	last := it.Attempts[len(it.Attempts)-1]
	acc, found, err := c.account(ctx, it.Source)
	if err != nil {
		return false, err
	}
	alive := found && last.Seq > acc.Sequence && (last.MaxTime == 0 || c.opts.Now().Unix() <= last.MaxTime)
	if !alive {
		return false, nil
	}
	return c.ledger.Resend(ctx, key, it, ver, last)
}

// buildAttempt reads the source's sequence number, builds the transaction,
// has the Signer sign its hash and checks the signature. An intent whose
// Params name an "account" other than its Source is a sponsored one
// (sponsor.go): the transaction's source (sequence number, fee) is the
// sponsor, which signs too, and the key of KeyRef signs for that account's
// operations.
func (c *Connector) buildAttempt(ctx context.Context, it *intent, build builder) (attempt, error) {
	if c.opts.Signer == nil {
		return attempt{}, errors.New("stellar: no Signer configured")
	}
	keyAccount, sponsored := it.Params["account"], false
	if keyAccount == "" || keyAccount == it.Source {
		keyAccount = it.Source
	} else {
		sponsored = true
		if c.sponsor() == nil || c.sponsor().Address() != it.Source {
			return attempt{}, fmt.Errorf("%w: the Stellar sponsor %s of this transaction is not configured", chains.ErrUnavailable, it.Source)
		}
	}
	acc, found, err := c.account(ctx, it.Source)
	if err != nil {
		return attempt{}, err
	}
	if !found {
		return attempt{}, fmt.Errorf("%w: stellar account %s does not exist (fund it first)", chains.ErrInsufficientFunds, it.Source)
	}
	ops, memo, err := build(ctx)
	if err != nil {
		return attempt{}, err
	}
	tb := txnbuild.NewTimebounds(0, c.opts.Now().Add(c.cfg.TxTimeout).Unix())
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: it.Source, Sequence: acc.Sequence}, IncrementSequenceNum: true,
		Operations: ops, BaseFee: BaseFee, Memo: memo, Preconditions: txnbuild.Preconditions{TimeBounds: tb},
	})
	if err != nil {
		return attempt{}, fmt.Errorf("stellar: build transaction: %w", err)
	}
	hash, err := tx.Hash(c.cfg.NetworkPassphrase)
	if err != nil {
		return attempt{}, err
	}
	unsigned, err := tx.MarshalBinary()
	if err != nil {
		return attempt{}, fmt.Errorf("stellar: encode transaction: %w", err)
	}
	var req chains.SignRequest
	if it.Spend != nil {
		req = chains.SpendRequest(it.KeyRef, hash[:], *it.Spend)
		req.Fee = it.Fee // the relayer's fee out of the same withdrawal
	} else {
		req = chains.NoValueRequest(it.KeyRef, hash[:], unsigned, c.cfg.NetworkPassphrase)
	}
	sig, err := c.opts.Signer.Sign(ctx, req)
	if err != nil {
		return attempt{}, fmt.Errorf("stellar: sign: %w", err)
	}
	if tx, err = addSignature(tx, keyAccount, hash[:], sig); err != nil {
		return attempt{}, fmt.Errorf("stellar: key %s/%s/%d: %w", it.KeyRef.AgentID, it.KeyRef.Chain, it.KeyRef.Epoch, err)
	}
	if sponsored {
		cost := SponsorCost{Key: it.Params["key"], Account: keyAccount, Fee: BaseFee * int64(len(ops))}
		if it.Spend != nil {
			cost.Key = it.Spend.Key
		}
		cost.Stroops = cost.Fee
		if it.Op == "activation" {
			cost.Stroops += 2 * BaseReserve
			if it.Params["asset"] != "native" {
				cost.Stroops += BaseReserve
			}
		}
		for _, op := range ops {
			// The sponsor's own new trustline (for its fee): its reserve.
			if ct, ok := op.(*txnbuild.ChangeTrust); ok && (ct.SourceAccount == "" || ct.SourceAccount == it.Source) && ct.Limit != "0" {
				cost.Stroops += BaseReserve
			}
		}
		ssig, err := c.sponsor().SignTransaction(ctx, hash[:], unsigned, c.cfg.NetworkPassphrase, cost)
		if err != nil {
			return attempt{}, fmt.Errorf("stellar: sponsor sign: %w", err)
		}
		if tx, err = addSignature(tx, it.Source, hash[:], ssig); err != nil {
			return attempt{}, fmt.Errorf("stellar: sponsor: %w", err)
		}
	}
	env, err := tx.Base64()
	if err != nil {
		return attempt{}, err
	}
	return attempt{Hash: fmt.Sprintf("%x", hash), Envelope: env, Seq: tx.SequenceNumber(), MaxTime: tb.MaxTime, At: c.opts.Now().UTC()}, nil
}

// addSignature checks that sig is addr's signature of hash and adds it.
func addSignature(tx *txnbuild.Transaction, addr string, hash, sig []byte) (*txnbuild.Transaction, error) {
	pub := pubKey(addr)
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, hash, sig) {
		return nil, fmt.Errorf("the signature is not %s's", addr)
	}
	var hint [4]byte
	copy(hint[:], pub[28:])
	return tx.AddSignatureDecorated(xdr.DecoratedSignature{Hint: xdr.SignatureHint(hint), Signature: sig})
}

func (c *Connector) submitEnvelope(ctx context.Context, env string) (hProtocol.Transaction, error) {
	v, err := c.call(ctx, func() (any, error) { return c.hc.SubmitTransactionXDR(env) })
	if err != nil {
		return hProtocol.Transaction{}, err
	}
	return v.(hProtocol.Transaction), nil
}

// resultCodes extracts Horizon's result codes; nil when the error is not
// the network's verdict on the transaction (transport, timeout).
func resultCodes(err error) *hProtocol.TransactionResultCodes {
	var he *horizonclient.Error
	if !errors.As(err, &he) {
		return nil
	}
	rc, rerr := he.ResultCodes()
	if rerr != nil || rc == nil || rc.TransactionCode == "" {
		return nil
	}
	return rc
}

// rejection maps the network's result codes to Veil's errors.
func (c *Connector) rejection(op string, rc *hProtocol.TransactionResultCodes) error {
	desc := rc.TransactionCode
	if len(rc.OperationCodes) > 0 {
		desc += " [" + strings.Join(rc.OperationCodes, ", ") + "]"
	}
	has := func(code string) bool {
		for _, o := range rc.OperationCodes {
			if o == code {
				return true
			}
		}
		return false
	}
	switch {
	case rc.TransactionCode == "tx_insufficient_balance", has("op_underfunded"):
		return fmt.Errorf("%w: stellar rejected the %s: %s", chains.ErrInsufficientFunds, op, desc)
	case has("op_low_reserve") && op == "send":
		return fmt.Errorf("%w: stellar rejected the %s: %s (a new account needs at least 1 XLM, and the sender must keep its own reserve)", chains.ErrInvalidAmount, op, desc)
	case has("op_low_reserve"):
		return fmt.Errorf("%w: stellar rejected the %s: %s (below the reserve)", chains.ErrInsufficientFunds, op, desc)
	case has("op_no_destination"), has("op_no_account"):
		return fmt.Errorf("%w: stellar rejected the %s: %s (the destination account does not exist)", chains.ErrInvalidAddress, op, desc)
	case has("op_no_trust"):
		return fmt.Errorf("%w: stellar rejected the %s: %s (the destination has no trustline for the asset)", chains.ErrInvalidAddress, op, desc)
	case rc.TransactionCode == "tx_no_source_account":
		return fmt.Errorf("%w: stellar rejected the %s: %s (fund the account first)", chains.ErrInsufficientFunds, op, desc)
	}
	return fmt.Errorf("stellar rejected the %s: %s", op, desc)
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
