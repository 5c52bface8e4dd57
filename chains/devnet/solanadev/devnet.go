//go:build !nodevnet

// Package solanadev is Veil's embedded Solana network: a ledger that
// accepts only real wire transactions (decoded with solana-go, every
// signature verified over the message bytes), runs the programs Veil uses
// (system transfers and account creation, the SPL token program's mints,
// accounts, transfers and closes, the associated token account program,
// memo, compute budget) with the runtime's rules (fees of 5,000 lamports per
// signature, rent exemption, recent blockhashes valid for 150 slots,
// duplicate signatures) and its error codes, and serves the subset of
// Solana's JSON-RPC API that chains/solana uses on a loopback port. It is
// written in Go rather than wrapping LiteSVM: docs/chains-solana.md says
// why. State persists in a persistence.Store. Build with -tags nodevnet to
// leave it out.
package solanadev

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/programs/token"

	associatedtokenaccount "github.com/gagliardetto/solana-go/programs/associated-token-account"

	"github.com/veilhq/veil/chains/devnet/internal/devserver"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Available reports whether this binary includes the Solana devnet.
const Available = true

// Faucet amounts (whole units) veilFund gives per call; requestAirdrop
// gives what it is asked for (at most 1,000 SOL).
const (
	FaucetSOL  = 10
	FaucetUSDC = 10_000
	usdcDec    = 6
)

// SlotDuration is the devnet's slot time (mainnet's target).
const SlotDuration = 400 * time.Millisecond

// Well-known devnet keys (worthless by design).
var (
	FaucetKey = keyFromSeed("veil devnet solana faucet")
	MintKey   = keyFromSeed("veil devnet solana USDC mint")
	// USDCMint is the devnet's USDC mint (6 decimals, authority FaucetKey).
	USDCMint = MintKey.PublicKey()
)

func keyFromSeed(label string) solanago.PrivateKey {
	seed := sha256.Sum256([]byte(label))
	return solanago.PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
}

// Tables of the devnet's store.
const (
	tableAccounts = "solana_dev_accounts"
	tableTxs      = "solana_dev_txs"
	tableAddrSigs = "solana_dev_addrsigs" // "<address>/<seq, 20 digits>" → signature
	tableMeta     = "solana_dev_meta"
)

// Devnet is a running Solana devnet.
type Devnet struct {
	store persistence.Store
	// faucetSeq numbers faucet transactions (see sendFromFaucet).
	faucetSeq uint64
	now       func() time.Time
	log       *slog.Logger
	srv       *devserver.Server
	url       string
	genesis   solanago.Hash

	mu         sync.Mutex
	accounts   map[solanago.PublicKey]*account
	seq        uint64 // transactions so far
	genesisAt  time.Time
	slotOffset uint64
	window     map[solanago.Hash]uint64 // recent blockhash → slot
	windowAt   uint64
}

type metaRecord struct {
	GenesisAt  time.Time `json:"genesisAt"`
	SlotOffset uint64    `json:"slotOffset"`
	Seq        uint64    `json:"seq"`
}

// Start opens (or creates) the ledger and serves JSON-RPC on Addr.
func Start(ctx context.Context, opts Options) (*Devnet, error) {
	srv, err := devserver.Open(&opts, "solanadev", "solana")
	if err != nil {
		return nil, err
	}
	d := &Devnet{store: opts.Store, now: opts.Now, log: opts.Log, srv: srv,
		accounts: map[solanago.PublicKey]*account{}, genesis: sha256.Sum256([]byte("veil solana devnet"))}
	if d.url, err = srv.Start(ctx, devserver.Ledger{Load: d.load, Handler: http.HandlerFunc(d.serveRPC), Bootstrap: d.bootstrap}); err != nil {
		return nil, err
	}
	d.log.Info("Solana devnet serving", "rpc", d.url, "slot", d.Slot())
	return d, nil
}

// URL is the JSON-RPC endpoint.
func (d *Devnet) URL() string { return d.url }

// Config is the connector configuration of this devnet.
func (d *Devnet) Config() solana.Config {
	return solana.Config{
		RPCURL: d.url, ExplorerTx: d.url + "/tx/{hash}",
		Tokens:       []solana.Token{{Symbol: "USDC", Mint: USDCMint.String(), Decimals: usdcDec}},
		DevnetFaucet: true, PollInterval: 20 * time.Millisecond,
	}
}

// Close stops serving and closes the store if Start opened it.
func (d *Devnet) Close() error { return d.srv.Close() }

func (d *Devnet) load(ctx context.Context) error {
	rec, err := d.store.Get(ctx, tableMeta, "meta")
	if errors.Is(err, persistence.ErrNotFound) {
		d.genesisAt = d.now().UTC()
		ops := []persistence.Op{}
		faucet := &account{Lamports: 500_000_000 * solanago.LAMPORTS_PER_SOL, Owner: systemProgram}
		d.accounts[FaucetKey.PublicKey()] = faucet
		for _, p := range programsAtBoot {
			owner := nativeLoader
			if p.Equals(tokenProgram) || p.Equals(ataProgram) || p.Equals(memoProgram) {
				owner = bpfLoader
			}
			d.accounts[p] = &account{Lamports: 1, Owner: owner, Executable: true}
		}
		d.accounts[rentSysvar] = &account{Lamports: 1_009_200, Owner: solanago.MustPublicKeyFromBase58("Sysvar1111111111111111111111111111111111111"), Data: make([]byte, 17)}
		for k, a := range d.accounts {
			val, _ := json.Marshal(a)
			ops = append(ops, persistence.Put(tableAccounts, k.String(), val, persistence.Absent()))
		}
		val, _ := json.Marshal(metaRecord{GenesisAt: d.genesisAt})
		ops = append(ops, persistence.Put(tableMeta, "meta", val, persistence.Absent()))
		if _, err := d.store.Apply(ctx, ops...); err != nil {
			return fmt.Errorf("solanadev: genesis: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("solanadev: %w", err)
	}
	var m metaRecord
	if err := json.Unmarshal(rec.Value, &m); err != nil {
		return fmt.Errorf("solanadev: meta: %w", err)
	}
	d.genesisAt, d.slotOffset, d.seq = m.GenesisAt, m.SlotOffset, m.Seq
	recs, err := d.store.List(ctx, tableAccounts, persistence.Query{})
	if err != nil {
		return fmt.Errorf("solanadev: %w", err)
	}
	accts, err := jsonrec.Decode[*account](tableAccounts, recs)
	if err != nil {
		return fmt.Errorf("solanadev: %w", err)
	}
	for i, r := range recs {
		k, err := solanago.PublicKeyFromBase58(r.Key)
		if err != nil {
			return fmt.Errorf("solanadev: account key %q: %w", r.Key, err)
		}
		d.accounts[k] = accts[i]
	}
	return nil
}

// bootstrap creates the USDC mint on a fresh ledger with a real
// transaction of the faucet.
func (d *Devnet) bootstrap(ctx context.Context) error {
	d.mu.Lock()
	_, has := d.accounts[USDCMint]
	d.mu.Unlock()
	if has {
		return nil
	}
	faucet := FaucetKey.PublicKey()
	create := system.NewCreateAccountInstruction(rentExempt(mintLen), mintLen, tokenProgram, faucet, USDCMint).Build()
	init := solanago.NewInstruction(tokenProgram, solanago.AccountMetaSlice{solanago.Meta(USDCMint).WRITE()},
		append(append([]byte{20, usdcDec}, faucet[:]...), 0))
	_, err := d.sendFromFaucet(ctx, []solanago.Instruction{create, init}, MintKey)
	return err
}

// Slot is the current slot (one every SlotDuration since genesis, plus
// the slots ExpireBlockhashes skipped).
func (d *Devnet) Slot() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.slotLocked()
}

func (d *Devnet) slotLocked() uint64 {
	el := d.now().Sub(d.genesisAt)
	if el < 0 {
		el = 0
	}
	return d.slotOffset + uint64(el/SlotDuration)
}

func (d *Devnet) blockhash(slot uint64) solanago.Hash {
	var b [len("veil/solana-devnet/blockhash") + 32 + 8]byte
	n := copy(b[:], "veil/solana-devnet/blockhash")
	n += copy(b[n:], d.genesis[:])
	binary.LittleEndian.PutUint64(b[n:], slot)
	return sha256.Sum256(b[:])
}

// recentSlot returns the slot of a blockhash of the last 150 slots.
func (d *Devnet) recentSlot(h solanago.Hash) (uint64, bool) {
	cur := d.slotLocked()
	if d.window == nil || d.windowAt != cur {
		d.window = make(map[solanago.Hash]uint64, blockhashWindow+1)
		for s := cur - min(cur, blockhashWindow); s <= cur; s++ {
			d.window[d.blockhash(s)] = s
		}
		d.windowAt = cur
	}
	s, ok := d.window[h]
	return s, ok
}

// ExpireBlockhashes skips 151 slots, so that every blockhash handed out so
// far is no longer recent, as on a network after a minute and a half.
func (d *Devnet) ExpireBlockhashes(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.slotOffset += blockhashWindow + 1
	return d.saveMetaLocked(ctx)
}

func (d *Devnet) saveMetaLocked(ctx context.Context) error {
	val, _ := json.Marshal(metaRecord{GenesisAt: d.genesisAt, SlotOffset: d.slotOffset, Seq: d.seq})
	_, err := d.store.Apply(ctx, persistence.Put(tableMeta, "meta", val, persistence.Any()))
	return err
}

// txRecord is one transaction in the history.
type txRecord struct {
	Signature string          `json:"signature"`
	Seq       uint64          `json:"seq"`
	Slot      uint64          `json:"slot"`
	BlockTime int64           `json:"blockTime"`
	Raw       []byte          `json:"raw"`
	Err       json.RawMessage `json:"err"`
	Fee       uint64          `json:"fee"`
	Pre       []uint64        `json:"pre"`
	Post      []uint64        `json:"post"`
	PreTok    []tokenBalance  `json:"preTok"`
	PostTok   []tokenBalance  `json:"postTok"`
	Logs      []string        `json:"logs"`
	Memo      *string         `json:"memo"`
}

type tokenBalance struct {
	AccountIndex int    `json:"accountIndex"`
	Mint         string `json:"mint"`
	Owner        string `json:"owner"`
	ProgramID    string `json:"programId"`
	Amount       uint64 `json:"amount"`
	Decimals     int    `json:"decimals"`
}

func (d *Devnet) getLocked(k solanago.PublicKey) *account { return d.accounts[k] }

func (d *Devnet) tokenBalances(keys []solanago.PublicKey, get func(solanago.PublicKey) *account) []tokenBalance {
	out := []tokenBalance{}
	for i, k := range keys {
		a := get(k)
		if a == nil || !a.Owner.Equals(tokenProgram) {
			continue
		}
		t, ok := decodeTokenAccount(a.Data)
		if !ok {
			continue
		}
		dec := 0
		if m := d.accounts[t.Mint]; m != nil {
			if ms, ok := decodeMint(m.Data); ok {
				dec = int(ms.Decimals)
			}
		}
		out = append(out, tokenBalance{AccountIndex: i, Mint: t.Mint.String(), Owner: t.Owner.String(), ProgramID: tokenProgram.String(), Amount: t.Amount, Decimals: dec})
	}
	return out
}

// process applies one wire transaction. With preflight (the RPC default)
// a transaction that fails is answered with the simulation error and
// changes nothing; with skipPreflight a transaction that passes the
// signature, age and fee checks but fails in execution enters the ledger
// as failed, fee charged.
func (d *Devnet) process(ctx context.Context, raw []byte, skipPreflight bool) (solanago.Signature, *rpcError) {
	tx, rerr := decodeTx(raw)
	if rerr != nil {
		return solanago.Signature{}, rerr
	}
	sig := tx.Signatures[0]
	if !verifySignatures(tx) {
		return sig, &rpcError{Code: -32003, Message: "Transaction signature verification failure"}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.store.Get(ctx, tableTxs, sig.String()); err == nil {
		return sig, preflight("This transaction has already been processed", "AlreadyProcessed", nil)
	}
	if _, ok := d.recentSlot(tx.Message.RecentBlockhash); !ok {
		return sig, preflight("Blockhash not found", "BlockhashNotFound", nil)
	}
	keys := tx.Message.AccountKeys
	fee := uint64(len(tx.Signatures)) * lamportsPerSignature
	payer := d.accounts[keys[0]]
	if payer == nil || payer.Lamports == 0 {
		return sig, preflight("Attempt to debit an account but found no record of a prior credit.", "AccountNotFound", nil)
	}
	if !payer.Owner.Equals(systemProgram) || len(payer.Data) > 0 {
		return sig, preflight("This account may not be used to pay transaction fees", "InvalidAccountForFee", nil)
	}
	if payer.Lamports < fee || payer.Lamports-fee > 0 && payer.Lamports-fee < rentExempt(0) {
		return sig, preflight("Insufficient funds for fee", "InsufficientFundsForFee", nil)
	}
	res := execute(tx, d.getLocked)
	if res.txErr != nil && !skipPreflight {
		return sig, preflight(res.reason, res.txErr, res.logs)
	}
	slot := d.slotLocked()
	rec := txRecord{Signature: sig.String(), Seq: d.seq + 1, Slot: slot, BlockTime: d.now().Unix(), Raw: raw, Fee: fee, Logs: res.logs, Err: json.RawMessage("null")}
	if res.txErr != nil {
		rec.Err, _ = json.Marshal(res.txErr)
	}
	get := func(k solanago.PublicKey) *account { return d.accounts[k] }
	rec.PreTok = d.tokenBalances(keys, get)
	for _, k := range keys {
		if a := d.accounts[k]; a != nil {
			rec.Pre = append(rec.Pre, a.Lamports)
		} else {
			rec.Pre = append(rec.Pre, 0)
		}
	}
	post := func(k solanago.PublicKey) *account {
		for i, a := range res.changed {
			if keys[i].Equals(k) {
				return a
			}
		}
		return d.accounts[k]
	}
	for _, k := range keys {
		if a := post(k); a != nil {
			rec.Post = append(rec.Post, a.Lamports)
		} else {
			rec.Post = append(rec.Post, 0)
		}
	}
	rec.PostTok = d.tokenBalances(keys, post)
	if memo := memoOf(tx); memo != "" {
		rec.Memo = &memo
	}
	val, _ := json.Marshal(rec)
	meta, _ := json.Marshal(metaRecord{GenesisAt: d.genesisAt, SlotOffset: d.slotOffset, Seq: rec.Seq})
	ops := []persistence.Op{
		persistence.Put(tableTxs, rec.Signature, val, persistence.Absent()),
		persistence.Put(tableMeta, "meta", meta, persistence.Any()),
	}
	for _, k := range keys {
		ops = append(ops, persistence.Put(tableAddrSigs, fmt.Sprintf("%s/%020d", k, rec.Seq), []byte(rec.Signature), persistence.Absent()))
	}
	for i, a := range res.changed {
		if a.Lamports == 0 && len(a.Data) == 0 {
			ops = append(ops, persistence.Delete(tableAccounts, keys[i].String(), persistence.Any()))
			continue
		}
		v, _ := json.Marshal(a)
		ops = append(ops, persistence.Put(tableAccounts, keys[i].String(), v, persistence.Any()))
	}
	if _, err := d.store.Apply(context.WithoutCancel(ctx), ops...); err != nil {
		return sig, &rpcError{Code: -32005, Message: "Node is unhealthy: " + err.Error()}
	}
	d.seq = rec.Seq
	for i, a := range res.changed {
		if a.Lamports == 0 && len(a.Data) == 0 {
			delete(d.accounts, keys[i])
		} else {
			d.accounts[keys[i]] = a
		}
	}
	return sig, nil
}

// memoOf is the memo column of getSignaturesForAddress: the memos of the
// transaction's memo instructions, as the RPC formats them.
func memoOf(tx *solanago.Transaction) string {
	out := ""
	for _, ix := range tx.Message.Instructions {
		p := tx.Message.AccountKeys[ix.ProgramIDIndex]
		if p.Equals(memoProgram) || p.Equals(memoV1Program) {
			if out != "" {
				out += "; "
			}
			out += "[" + strconv.Itoa(len(ix.Data)) + "] " + string(ix.Data)
		}
	}
	return out
}

// sendFromFaucet signs instructions with the faucet key (fee payer) and
// the extra signers and processes the transaction.
func (d *Devnet) sendFromFaucet(ctx context.Context, ixs []solanago.Instruction, extra ...solanago.PrivateKey) (solanago.Signature, error) {
	d.mu.Lock()
	bh := d.blockhash(d.slotLocked())
	d.faucetSeq++
	seq := d.faucetSeq
	d.mu.Unlock()
	// A memo with a sequence number makes every faucet transaction unique:
	// funding the same address twice within one blockhash would otherwise
	// build the identical transaction, which the network refuses as
	// already processed.
	ixs = append(ixs, solanago.NewInstruction(memoProgram, solanago.AccountMetaSlice{},
		[]byte(fmt.Sprintf("veil devnet faucet %d %d", d.now().UnixNano(), seq))))
	tx, err := solanago.NewTransaction(ixs, bh, solanago.TransactionPayer(FaucetKey.PublicKey()))
	if err != nil {
		return solanago.Signature{}, err
	}
	keys := map[solanago.PublicKey]solanago.PrivateKey{FaucetKey.PublicKey(): FaucetKey}
	for _, k := range extra {
		keys[k.PublicKey()] = k
	}
	if _, err := tx.Sign(func(k solanago.PublicKey) *solanago.PrivateKey {
		if p, ok := keys[k]; ok {
			return &p
		}
		return nil
	}); err != nil {
		return solanago.Signature{}, err
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return solanago.Signature{}, err
	}
	sig, rerr := d.process(ctx, raw, false)
	if rerr != nil {
		return sig, rerr
	}
	return sig, nil
}

// Airdrop transfers lamports from the faucet (requestAirdrop).
func (d *Devnet) Airdrop(ctx context.Context, to solanago.PublicKey, lamports uint64) (solanago.Signature, error) {
	if lamports == 0 || lamports > 1000*solanago.LAMPORTS_PER_SOL {
		return solanago.Signature{}, &rpcError{Code: -32602, Message: "Invalid params: airdrop amount must be between 1 lamport and 1000 SOL"}
	}
	return d.sendFromFaucet(ctx, []solanago.Instruction{system.NewTransferInstruction(lamports, FaucetKey.PublicKey(), to).Build()})
}

// Fund gives `to` FaucetSOL and FaucetUSDC (in its associated token
// account) in one transaction (veilFund).
func (d *Devnet) Fund(ctx context.Context, to solanago.PublicKey) (solanago.Signature, error) {
	faucet := FaucetKey.PublicKey()
	ata, _, err := solanago.FindAssociatedTokenAddress(to, USDCMint)
	if err != nil {
		return solanago.Signature{}, err
	}
	create := associatedtokenaccount.NewCreateInstruction(faucet, to, USDCMint).Build()
	idem := solanago.NewInstruction(ataProgram, create.Accounts(), []byte{1})
	mint := token.NewMintToInstruction(FaucetUSDC*1_000_000, USDCMint, ata, faucet, nil).Build()
	return d.sendFromFaucet(ctx, []solanago.Instruction{
		system.NewTransferInstruction(FaucetSOL*solanago.LAMPORTS_PER_SOL, faucet, to).Build(), idem, mint,
	})
}
