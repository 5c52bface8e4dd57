// Package moneytest is the test harness of the scanner and reminder
// services: a fake chain connector that enforces idempotency keys and
// serves announcements and transfers the test puts on it, a fake clock, and
// an agent host over a real bbolt store and the software enclave.
package moneytest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/internal/fakeclock"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// NewClock is the services' fake clock, standing at t in UTC: the
// services store times in UTC, so a test's expected times and the clock's
// read the same. Set keeps what it is given; the tests set times they
// read from this clock or from the store, already in UTC.
func NewClock(t time.Time) *fakeclock.Clock { return fakeclock.New(t.UTC()) }

// Send is one payment the fake chain accepted.
type Send struct {
	From, Meta, Amount, Asset, Key, TxHash string
}

// Chain is a fake chains.Connector (ethereum). SendStealth enforces
// idempotency keys like the real connectors: a repeated key returns the
// first transaction. It is safe for concurrent use.
type Chain struct {
	ID chains.ID

	mu        sync.Mutex
	sends     map[string]Send
	order     []Send
	fail      error
	anns      []chains.Announcement
	transfers []chains.Transfer
	scanFail  error
	names     []string // RegisterName calls, by name
	regFail   error
	// announceSends makes SendStealth announce its payment, as the real
	// connectors do in the same transaction (AnnounceSends).
	announceSends bool
	// gas: what every withdrawal's one-time address lacks (NeedGas);
	// gasSent: the gas transfers made, by key.
	gas     string
	gasSent map[string]string
	// gasUnknown: the gas transfer is signed and recorded, its outcome
	// unknown (GasOutcomeUnknown).
	gasUnknown bool
	// relayFee, relayFeeSameTx, rest: RelayerFee and Remainder.
	relayFee       string
	relayFeeSameTx bool
	rest           string
	// feeUnknown: a fee transfer of its own is signed, its outcome
	// unknown (FeeOutcomeUnknown); feeSent: those sent (key → hash).
	feeUnknown bool
	feeSent    map[string]string
	// withdrawn: the withdrawals on chain, by key (Withdrawals);
	// withdrawUnknown: WithdrawOutcomeUnknown; authorize: AuthorizeWith.
	withdrawn       map[string]Withdrawal
	withdrawOrder   []Withdrawal
	withdrawUnknown bool
	authorize       func(context.Context, chains.Spend) error
}

// AnnounceSends makes every new SendStealth derive a real ERC-5564 one-time
// address for the meta-address and announce it in its transaction, so that
// scans and AnnouncementsIn find the payment.
func (c *Chain) AnnounceSends() {
	c.mu.Lock()
	c.announceSends = true
	c.mu.Unlock()
}

// AnnouncementsIn implements chains.AnnouncementReader: the announcements
// of transaction txHash (every transaction of the fake chain is confirmed).
func (c *Chain) AnnouncementsIn(_ context.Context, txHash string) ([]chains.Announcement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.DeleteFunc(slices.Clone(c.anns), func(a chains.Announcement) bool { return a.TxHash != txHash })
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: transaction %s", chains.ErrNotFound, txHash)
	}
	return out, nil
}

// FailRegistrations makes RegisterName fail with err (nil: succeed); the
// call is still listed by Registrations.
func (c *Chain) FailRegistrations(err error) {
	c.mu.Lock()
	c.regFail = err
	c.mu.Unlock()
}

// NewChain is an empty fake ethereum.
func NewChain() *Chain { return &Chain{ID: chains.Ethereum, sends: map[string]Send{}} }

// FailSends makes every new SendStealth fail with err (nil: succeed).
func (c *Chain) FailSends(err error) {
	c.mu.Lock()
	c.fail = err
	c.mu.Unlock()
}

// Sends lists the payments made, in order.
func (c *Chain) Sends() []Send {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Send(nil), c.order...)
}

// Announce appends announcements to the chain.
func (c *Chain) Announce(anns ...chains.Announcement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range anns {
		a.Position = uint64(len(c.anns))
		c.anns = append(c.anns, a)
	}
}

// Transfer appends plain transfers to the chain.
func (c *Chain) Transfer(ts ...chains.Transfer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transfers = append(c.transfers, ts...)
}

// FailScans makes Scan and ScanTransfers fail with err (nil: succeed).
func (c *Chain) FailScans(err error) {
	c.mu.Lock()
	c.scanFail = err
	c.mu.Unlock()
}

func (c *Chain) Chain() chains.ID { return c.ID }

func (c *Chain) Balance(context.Context, string) (chains.Balance, error) {
	return chains.Balance{Native: "0", Tokens: map[string]string{}}, nil
}

// Assets implements chains.Connector: the native asset, USDC (6
// decimals; 7 on Stellar) and, off horizen, the ZEN token (18), each
// token with a contract of its own.
func (c *Chain) Assets() []chains.Asset {
	native := c.ID.NativeAsset()
	out := []chains.Asset{{Chain: c.ID, Symbol: native, Decimals: chains.NativeDecimals(c.ID)}}
	usdc := 6
	if c.ID == chains.Stellar {
		usdc = 7
	}
	for _, t := range []chains.Asset{{Symbol: "USDC", Decimals: usdc}, {Symbol: "ZEN", Decimals: 18}} {
		if t.Symbol != native {
			t.Chain, t.Ref = c.ID, "0xfake"+t.Symbol
			out = append(out, t)
		}
	}
	return out
}

func (c *Chain) SendStealth(_ context.Context, _ chains.KeyRef, from string, req chains.SendRequest) (chains.TxResult, error) {
	meta, amount, asset, key := req.To, req.Amount.String(), req.Asset.Symbol, req.IdempotencyKey
	if key == "" {
		return chains.TxResult{}, fmt.Errorf("no idempotency key")
	}
	// Like the real connectors, it pays only in one of its own assets.
	if err := chains.Owns(c.Assets(), req.Asset); err != nil {
		return chains.TxResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sends[key]; ok {
		if s.Meta != meta || s.Amount != amount || s.Asset != asset {
			return chains.TxResult{}, chains.ErrIdempotencyConflict
		}
		return chains.TxResult{TxHash: s.TxHash, TxLink: c.TxLink(s.TxHash)}, nil
	}
	if c.fail != nil {
		return chains.TxResult{}, c.fail
	}
	h := sha256.Sum256([]byte(key))
	s := Send{From: from, Meta: meta, Amount: amount, Asset: asset, Key: key, TxHash: "0x" + hex.EncodeToString(h[:])}
	if c.announceSends {
		m, err := secp256k1.ParseMetaAddress(meta)
		if err != nil {
			return chains.TxResult{}, err
		}
		a, err := secp256k1.Generate(m, rand.Reader)
		if err != nil {
			return chains.TxResult{}, err
		}
		c.anns = append(c.anns, chains.Announcement{StealthAddress: common.BytesToAddress(a.StealthAddress[:]).Hex(), EphemeralPubKey: a.EphemeralPub[:],
			ViewTag: a.ViewTag, Asset: asset, Amount: amount, TxHash: s.TxHash, Position: uint64(len(c.anns))})
	}
	c.sends[key] = s
	c.order = append(c.order, s)
	return chains.TxResult{TxHash: s.TxHash, TxLink: c.TxLink(s.TxHash)}, nil
}

// scanPage answers one page of *items (announcements or transfers) from
// cursor, the index of the first, and the cursor of the next page.
func scanPage[T any](c *Chain, items *[]T, cursor string, limit int) ([]T, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scanFail != nil {
		return nil, cursor, c.scanFail
	}
	from := 0
	if cursor != "" {
		var err error
		if from, err = strconv.Atoi(cursor); err != nil {
			return nil, cursor, fmt.Errorf("bad cursor %q", cursor)
		}
	}
	if limit <= 0 {
		limit = 1000
	}
	to := min(len(*items), from+limit)
	return append([]T(nil), (*items)[from:to]...), strconv.Itoa(to), nil
}

func (c *Chain) Scan(_ context.Context, cursor string, limit int) ([]chains.Announcement, string, error) {
	return scanPage(c, &c.anns, cursor, limit)
}

// ScanTransfers implements chains.TransferScanner (from the first
// transfer: the fake chain has no history before the test).
func (c *Chain) ScanTransfers(_ context.Context, cursor string, limit int) ([]chains.Transfer, string, error) {
	return scanPage(c, &c.transfers, cursor, limit)
}

func (c *Chain) RegisterName(_ context.Context, _ chains.KeyRef, _, name, _ string) (chains.TxResult, error) {
	c.mu.Lock()
	c.names = append(c.names, name)
	err := c.regFail
	c.mu.Unlock()
	if err != nil {
		return chains.TxResult{}, err
	}
	return chains.TxResult{TxHash: "0xname"}, nil
}

// Registrations lists the names RegisterName was called with, in order.
func (c *Chain) Registrations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.names...)
}

func (c *Chain) ResolveName(context.Context, string) (string, error) { return "", chains.ErrNotFound }

func (c *Chain) Fund(context.Context, string) (chains.TxResult, error) {
	return chains.TxResult{TxHash: "0xfund"}, nil
}

func (c *Chain) TxLink(h string) string { return "https://explorer.test/tx/" + h }

// Env is an agent host over a bbolt store, the software enclave and the
// fake chain.
type Env struct {
	T        testing.TB
	Dir      string
	Store    *persistence.Bolt
	System   *actor.ActorSystem
	Enclave  *software.Provider
	Chain    *Chain
	Ref      *chainactor.Ref
	Host     *host.Host
	Clock    *fakeclock.Clock
	Log      *slog.Logger
	Failures func(string) error
	// Configure, when set, adjusts the agents' dependencies (a model, a
	// hook) of the hosts started from then on (Restart).
	Configure func(*agent.Deps)
	// Snapshots are the agents' read-path snapshots, kept across Restart
	// (a stopping host drops its agents' own).
	Snapshots *agent.Snapshots
}

// NewEnv starts everything; Restart replaces the host (a node restart).
func NewEnv(t testing.TB, clock *fakeclock.Clock) *Env {
	t.Helper()
	e := &Env{Chain: NewChain()}
	e.start(t, clock, func(persistence.Store, chains.Signer) chains.Connector { return e.Chain })
	return e
}

// NewEnvOn is NewEnv on a real chain: connect builds the connector over
// the env's store, signing with its enclave. The agents are created on
// that chain; Chain is nil.
func NewEnvOn(t testing.TB, clock *fakeclock.Clock, connect func(store persistence.Store, signer chains.Signer) chains.Connector) *Env {
	t.Helper()
	e := &Env{}
	e.start(t, clock, connect)
	return e
}

func (e *Env) start(t testing.TB, clock *fakeclock.Clock, connect func(persistence.Store, chains.Signer) chains.Connector) {
	e.T, e.Dir, e.Clock, e.Log, e.Snapshots = t, t.TempDir(), clock, slog.New(slog.DiscardHandler), agent.NewSnapshots()
	var root [32]byte
	root[0] = 9
	var err error
	if e.Enclave, err = software.New(root); err != nil {
		t.Fatal(err)
	}
	if e.Store, err = persistence.OpenBolt(filepath.Join(e.Dir, "veil.db"), persistence.BoltOptions{}); err != nil {
		t.Fatal(err)
	}
	quiet := e.Log
	e.System = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(func() { _ = e.Store.Close() })
	if e.Ref, err = chainactor.Start(context.Background(), e.System, connect(e.Store, e.Enclave), chainactor.Options{Log: quiet}); err != nil {
		t.Fatal(err)
	}
	e.startHost()
	t.Cleanup(func() {
		_ = e.Host.Stop(context.Background())
		e.Ref.Stop()
		e.System.Shutdown()
	})
}

func (e *Env) startHost() {
	deps := agent.Deps{
		Store: e.Store, Log: e.Log, Keys: agent.EnclaveKeys(e.Enclave),
		Chains: agent.ChainMap{e.Ref.Chain(): e.Ref}, Now: e.Clock.Now, PublicURL: "http://veil.test",
		Snapshots: e.Snapshots,
		Failpoint: func(name string) error {
			if e.Failures != nil {
				return e.Failures(name)
			}
			return nil
		},
	}
	if e.Configure != nil {
		e.Configure(&deps)
	}
	e.Host = host.NewHost(e.System, agent.Loader(deps), host.HostConfig{PassivateAfter: time.Hour}, e.Log, nil)
}

// Restart stops the agent host and starts a new one over the same store:
// every actor's memory is gone, the store stays.
func (e *Env) Restart() {
	e.T.Helper()
	if err := e.Host.Stop(context.Background()); err != nil {
		e.T.Fatal(err)
	}
	e.startHost()
}

// Reads is the API's way to the agents: reads from the snapshots, the rest
// through the current host.
func (e *Env) Reads() agent.Requester { return e.Snapshots.Reads(e.Host) }

// Account is the account the env's agents belong to.
const Account = "acct-1"

// CreateAgent creates an agent on the env's chain (ethereum, or NewEnvOn's)
// and returns its record.
func (e *Env) CreateAgent(name string) *agent.Record {
	e.T.Helper()
	id := uuid.NewString()
	ch := e.Ref.Chain()
	v, err := e.Host.Request(context.Background(), id, &agent.Create{
		AccountID: Account, Name: name, Chain: string(ch), Chains: []chains.ID{ch},
		OwnerWallet: "0x000000000000000000000000000000000000dEaD", OwnerScheme: "eip191",
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return v.(*agent.Record)
}

// Tool runs tool on agent id with args under the idempotency key and
// answers its result, whatever its status; a request the host could not
// deliver fails the test.
func (e *Env) Tool(id, tool, args, key string) *agent.ToolCall {
	e.T.Helper()
	v, err := e.Host.Request(context.Background(), id, &agent.CallTool{AccountID: Account, Tool: tool, Arguments: args, IdempotencyKey: key})
	if err != nil {
		e.T.Fatal(err)
	}
	return v.(*agent.ToolCall)
}

// PaidOnce has from pay to 0.5 of the chain's native asset (send_payment
// by to's name), has to scan for it, and answers the one-time address it
// arrived at: a payment to can withdraw, the only one it holds.
func (e *Env) PaidOnce(from, to *agent.Record) string {
	e.T.Helper()
	ch := e.Ref.Chain()
	args := fmt.Sprintf(`{"recipient":%q,"amount":"0.5","asset":%q}`, to.Name+".veil", ch.NativeAsset())
	if tc := e.Tool(from.ID, "send_payment", args, from.ID+"-pays-"+to.ID); tc.Status != "success" {
		e.T.Fatalf("send_payment: %s %s", tc.Status, tc.Detail)
	}
	e.Tool(to.ID, "scan_payments", fmt.Sprintf(`{"chain":%q}`, ch), "")
	got, err := state.NewPayments(e.Store, to.ID, nil).Received(context.Background(), ch)
	if err != nil || len(got) != 1 {
		e.T.Fatalf("received %+v %v; want the one payment", got, err)
	}
	return got[0].StealthAddress
}

// Inbox lists an agent's notifications.
func (e *Env) Inbox(id string) *agent.Inbox {
	e.T.Helper()
	v, err := e.Host.Request(context.Background(), id, &agent.ListNotifications{AccountID: Account})
	if err != nil {
		e.T.Fatal(err)
	}
	return v.(*agent.Inbox)
}

// Count counts an inbox's notifications of type typ.
func Count(in *agent.Inbox, typ string) int {
	n := 0
	for _, x := range in.Notifications {
		if x.Type == typ {
			n++
		}
	}
	return n
}
