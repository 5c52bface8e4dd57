//go:build !nodevnet

// Package stellardev is Veil's embedded Stellar network: a ledger of
// accounts, trustlines, data entries and claimable balances that accepts
// only real signed XDR transaction envelopes (hashed with the devnet's
// network passphrase, every signature verified against the accounts'
// ed25519 keys), served through the subset of Horizon's REST API that
// chains/stellar uses, on a loopback port. It rejects what stellar-core
// rejects, with the same result codes (tx_bad_seq, tx_bad_auth,
// tx_insufficient_fee, tx_too_late, op_underfunded, op_low_reserve,
// op_no_destination, op_no_trust, …), closes one ledger per transaction and
// keeps its state in a persistence.Store so that it survives restarts.
// docs/chains-stellar.md lists the endpoints and the rules. Build with
// -tags nodevnet to leave it out.
package stellardev

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet/internal/devserver"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Available reports whether this binary includes the Stellar devnet.
const Available = true

// Passphrase is the devnet's network passphrase.
const Passphrase = "Veil Stellar Devnet ; 2025"

// Faucet amounts (whole units) friendbot gives per call.
const (
	FaucetXLM  = "10000"
	FaucetUSDC = "10000"
)

// Well-known devnet keys (worthless by design): the root account holds the
// whole XLM supply and runs friendbot; the issuer issues USDC.
var (
	RootKey   = mustKey(sha256.Sum256([]byte(Passphrase)))
	IssuerKey = mustKey(sha256.Sum256([]byte("veil devnet stellar USDC issuer")))
)

func mustKey(seed [32]byte) *keypair.Full {
	k, err := keypair.FromRawSeed(seed)
	if err != nil {
		panic(err)
	}
	return k
}

// Tables of the devnet's store.
const (
	tableAccounts   = "stellar_dev_accounts"
	tableClaimables = "stellar_dev_claimables"
	tableTxs        = "stellar_dev_txs"
	tableAcctTxs    = "stellar_dev_acctxs" // "<account>/<paging token, 20 digits>" → hash
	tableAllTxs     = "stellar_dev_alltxs" // "<paging token, 20 digits>" → hash
	tableMeta       = "stellar_dev_meta"
)

// Devnet is a running Stellar devnet.
type Devnet struct {
	store     persistence.Store
	now       func() time.Time
	log       *slog.Logger
	srv       *devserver.Server
	url       string
	usdcAsset txnbuild.CreditAsset

	mu sync.Mutex // serialises ledger changes
	st *state
	// genesis is ledger 1's hash (genesis.go), set by load.
	genesis string

	fundMu sync.Mutex // serialises friendbot (one root account)

}

// Start opens (or creates) the ledger and serves Horizon's API on Addr.
func Start(ctx context.Context, opts Options) (*Devnet, error) {
	srv, err := devserver.Open(&opts, "stellardev", "stellar")
	if err != nil {
		return nil, err
	}
	d := &Devnet{store: opts.Store, now: opts.Now, log: opts.Log, srv: srv,
		usdcAsset: txnbuild.CreditAsset{Code: "USDC", Issuer: IssuerKey.Address()}}
	if d.url, err = srv.Start(ctx, devserver.Ledger{Load: d.load, Handler: d.routes(), Bootstrap: d.bootstrap}); err != nil {
		return nil, err
	}
	d.log.Info("Stellar devnet serving", "horizon", d.url, "ledger", d.Ledger())
	return d, nil
}

// URL is the Horizon endpoint.
func (d *Devnet) URL() string { return d.url }

// Ledger is the latest closed ledger.
func (d *Devnet) Ledger() uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.ledger
}

// Config is the connector configuration of this devnet.
func (d *Devnet) Config() stellar.Config {
	return stellar.Config{
		HorizonURL: d.url, NetworkPassphrase: Passphrase,
		ExplorerTx: d.url + "/transactions/{hash}",
		Assets:     []stellar.Asset{{Code: "USDC", Issuer: IssuerKey.Address()}},
		Friendbot:  true,
		TxTimeout:  30 * time.Second,
	}
}

// Close stops serving and closes the store if Start opened it.
func (d *Devnet) Close() error { return d.srv.Close() }

// load reads the ledger from the store, or creates the genesis ledger (the
// root account with the whole supply).
func (d *Devnet) load(ctx context.Context) error {
	st := &state{accounts: map[string]*account{}, claimables: map[string]*claimable{}}
	rec, err := d.store.Get(ctx, tableMeta, "ledger")
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		st.ledger = 1
		root := &account{ID: RootKey.Address(), Balance: 100_000_000_000 * 10_000_000, Seq: 0,
			Data: map[string][]byte{}, Lines: map[string]*trustline{}, Modified: 1}
		st.accounts[root.ID] = root
		val, _ := json.Marshal(root)
		if _, err := d.store.Apply(ctx,
			persistence.Put(tableMeta, "passphrase", []byte(Passphrase), persistence.Absent()),
			persistence.Put(tableAccounts, root.ID, val, persistence.Absent()),
			persistence.Put(tableMeta, "ledger", []byte("1"), persistence.Absent()),
		); err != nil {
			return fmt.Errorf("stellardev: genesis: %w", err)
		}
	case err != nil:
		return fmt.Errorf("stellardev: %w", err)
	default:
		if _, err := fmt.Sscan(string(rec.Value), &st.ledger); err != nil {
			return fmt.Errorf("stellardev: ledger record %q: %w", rec.Value, err)
		}
		if p, err := d.store.Get(ctx, tableMeta, "passphrase"); err != nil || string(p.Value) != Passphrase {
			return fmt.Errorf("stellardev: the store holds another network's ledger; delete it")
		}
		accts, err := jsonrec.List[*account](ctx, d.store, tableAccounts, persistence.Query{})
		if err != nil {
			return fmt.Errorf("stellardev: %w", err)
		}
		cbs, err := jsonrec.List[*claimable](ctx, d.store, tableClaimables, persistence.Query{})
		if err != nil {
			return fmt.Errorf("stellardev: %w", err)
		}
		for _, a := range accts {
			st.accounts[a.ID] = a
		}
		for _, c := range cbs {
			st.claimables[c.ID] = c
		}
	}
	d.st = st
	return d.loadGenesis(ctx)
}

// bootstrap creates the USDC issuer and the index accounts on a fresh
// ledger, with a real transaction from the root account.
func (d *Devnet) bootstrap(ctx context.Context) error {
	var ops []txnbuild.Operation
	d.mu.Lock()
	for _, id := range []string{IssuerKey.Address(), stellar.AnnouncementAccount, stellar.RegistryAccount} {
		if d.st.accounts[id] == nil {
			ops = append(ops, &txnbuild.CreateAccount{Destination: id, Amount: "10"})
		}
	}
	d.mu.Unlock()
	if len(ops) == 0 {
		return nil
	}
	_, rej, err := d.submitSigned(ctx, RootKey.Address(), ops, RootKey)
	if err != nil {
		return err
	}
	if rej != nil {
		return fmt.Errorf("stellardev: bootstrap: %v", rej)
	}
	return nil
}

// submitSigned builds a transaction from source with ops, signs it with
// keys and submits it.
func (d *Devnet) submitSigned(ctx context.Context, source string, ops []txnbuild.Operation, keys ...*keypair.Full) (*txRecord, *rejection, error) {
	d.mu.Lock()
	a := d.st.accounts[source]
	var seq int64
	if a != nil {
		seq = a.Seq
	}
	d.mu.Unlock()
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: source, Sequence: seq}, IncrementSequenceNum: true,
		Operations: ops, BaseFee: baseFee, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)},
	})
	if err != nil {
		return nil, nil, err
	}
	if tx, err = tx.Sign(Passphrase, keys...); err != nil {
		return nil, nil, err
	}
	env, err := tx.Base64()
	if err != nil {
		return nil, nil, err
	}
	return d.submit(ctx, env)
}

// submit applies one base64 transaction envelope: it returns the record of
// a transaction that entered the ledger (also a failed one, with its
// rejection) or the rejection of one that did not. A transaction already
// in the ledger is answered from its record.
func (d *Devnet) submit(ctx context.Context, envB64 string) (*txRecord, *rejection, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, err := envelopeHash(envB64); err == nil {
		if rec, err := d.txByHash(ctx, h); err == nil {
			return rec, rejectionOf(rec), nil
		}
	}
	// Apply on a copy of the account and claimable maps so that a failed
	// commit to the store leaves the ledger as it was.
	work := &state{accounts: maps.Clone(d.st.accounts), claimables: maps.Clone(d.st.claimables), ledger: d.st.ledger}
	out, rej := work.apply(envB64, Passphrase, d.now())
	if out == nil {
		return nil, rej, nil
	}
	ops := []persistence.Op{persistence.Put(tableMeta, "ledger", fmt.Appendf(nil, "%d", work.ledger), persistence.Any())}
	for _, id := range out.accounts {
		ops = append(ops, devserver.PutOrDelete(tableAccounts, id, work.accounts[id]))
	}
	for _, id := range out.cbs {
		ops = append(ops, devserver.PutOrDelete(tableClaimables, id, work.claimables[id]))
	}
	val, _ := json.Marshal(out.rec)
	pt := fmt.Sprintf("%020d", out.rec.PT)
	ops = append(ops, persistence.Put(tableTxs, out.rec.Hash, val, persistence.Absent()),
		persistence.Put(tableAllTxs, pt, []byte(out.rec.Hash), persistence.Absent()))
	for _, p := range out.rec.Participants {
		ops = append(ops, persistence.Put(tableAcctTxs, p+"/"+pt, []byte(out.rec.Hash), persistence.Absent()))
	}
	if _, err := d.store.Apply(context.WithoutCancel(ctx), ops...); err != nil {
		return nil, nil, fmt.Errorf("stellardev: commit ledger %d: %w", work.ledger, err)
	}
	d.st = work
	return &out.rec, rej, nil
}

func rejectionOf(rec *txRecord) *rejection {
	if rec.Successful {
		return nil
	}
	r := &rejection{TxCode: "tx_failed", Included: true}
	if len(rec.ResultCodes) > 1 {
		r.OpCodes = rec.ResultCodes[1:]
	}
	return r
}

func (d *Devnet) txByHash(ctx context.Context, hash string) (*txRecord, error) {
	return jsonrec.Get[txRecord](ctx, d.store, tableTxs, hash)
}

// fund is friendbot: it creates addr with FaucetXLM (or pays that to an
// existing account) and gives it FaucetUSDC as a claimable balance (a
// trustline needs the account's own signature; the connector claims it).
func (d *Devnet) fund(ctx context.Context, addr string) (*txRecord, error) {
	if _, err := keypair.ParseAddress(addr); err != nil {
		return nil, fmt.Errorf("%w: %q is not an account id", chains.ErrInvalidAddress, addr)
	}
	d.mu.Lock()
	exists := d.st.accounts[addr] != nil
	d.mu.Unlock()
	var first txnbuild.Operation = &txnbuild.Payment{Destination: addr, Amount: FaucetXLM, Asset: txnbuild.NativeAsset{}}
	if !exists {
		first = &txnbuild.CreateAccount{Destination: addr, Amount: FaucetXLM}
	}
	ops := []txnbuild.Operation{first, &txnbuild.CreateClaimableBalance{
		Amount: FaucetUSDC, Asset: d.usdcAsset, SourceAccount: IssuerKey.Address(),
		Destinations: []txnbuild.Claimant{txnbuild.NewClaimant(addr, nil)},
	}}
	d.fundMu.Lock()
	defer d.fundMu.Unlock()
	for range 3 {
		rec, rej, err := d.submitSigned(ctx, RootKey.Address(), ops, RootKey, IssuerKey)
		if err != nil {
			return nil, err
		}
		if rej != nil && rej.TxCode == "tx_bad_seq" {
			continue // concurrent friendbot calls: rebuild
		}
		if rej != nil {
			return nil, fmt.Errorf("friendbot: %v", rej)
		}
		return rec, nil
	}
	return nil, errors.New("friendbot: sequence contention")
}
