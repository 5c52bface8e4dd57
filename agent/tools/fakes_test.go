package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// Test identities: real meta-addresses and addresses derived from seeds.

func seed(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func evmMeta(t testing.TB, who string) string {
	k, err := secp256k1.KeysFromSeeds(seed(who+"/spend"), seed(who+"/view"))
	if err != nil {
		t.Fatal(err)
	}
	return k.Meta.String()
}

func edMeta(t testing.TB, c edstealth.Chain, who string) string {
	k, err := edstealth.KeysFromSeeds(c, seed(who+"/spend"), seed(who+"/view"))
	if err != nil {
		t.Fatal(err)
	}
	return k.Meta.String()
}

func evmAddr(t testing.TB, who string) string {
	s := seed(who + "/addr")
	a, err := ParseAddress(chains.Base, "0x"+hex.EncodeToString(s[:20]))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func xlmAddr(who string) string { return edstealth.StellarAddress(seed(who + "/addr")) }
func solAddr(who string) string { return edstealth.SolanaAddress(seed(who + "/addr")) }

func metas(t testing.TB, who string, cs ...chains.ID) map[chains.ID]string {
	m := map[chains.ID]string{}
	for _, c := range cs {
		switch c {
		case chains.Stellar:
			m[c] = edMeta(t, edstealth.Stellar, who)
		case chains.Solana:
			m[c] = edMeta(t, edstealth.Solana, who)
		default:
			m[c] = evmMeta(t, who)
		}
	}
	return m
}

func addrs(t testing.TB, who string, cs ...chains.ID) map[chains.ID]string {
	m := map[chains.ID]string{}
	for _, c := range cs {
		switch c {
		case chains.Stellar:
			m[c] = xlmAddr(who)
		case chains.Solana:
			m[c] = solAddr(who)
		default:
			m[c] = evmAddr(t, who)
		}
	}
	return m
}

// fakeChains records every call and behaves like a chain actor: it
// enforces idempotency keys (a repeated key with the same parameters
// returns the first result without paying again; with other parameters
// it fails with ErrIdempotencyConflict) and tracks spendable balances.
type fakeChains struct {
	mu          sync.Mutex
	unavailable map[chains.ID]bool
	// prepares: chains whose invoice addresses are activated before the
	// invoice is shown (DestinationPreparer; Stellar with a sponsor).
	prepares map[chains.ID]bool
	// funds per chain and asset (whole units); SendStealth fails with
	// ErrInsufficientFunds beyond them.
	funds    map[chains.ID]map[string]*big.Rat
	balances map[chains.ID]chains.Balance
	taken    map[chains.ID]bool
	onchain  map[chains.ID]map[string]string
	scans    map[chains.ID]int
	keys     map[string]string // key → parameters
	results  map[string]chains.TxResult
	sends    []call // payments that moved money
	// requests are the payment requests SendStealth, PayAddress, SignAuthorization and
	// Withdraw got.
	requests []PaymentRequest
	calls    []call // every call
	n        int
	// hold, when set, holds every invoice payment for approval for this reason.
	hold string
	// x402, when set, answers AuthorizationDomain and SignAuthorization
	// (fetchpaid_test.go).
	x402 *fakeAuthorizer
	// assetLists counts Assets calls: the tools' one binding of a
	// payment's asset, per payment.
	assetLists int
	// carries, when set, replaces a chain's assets (fakeAssets).
	carries map[chains.ID][]chains.Asset
}

// fakeAssets is what the fake connector of chain c carries: the tools'
// assets, each token with a contract of its own.
func fakeAssets(c chains.ID) []chains.Asset {
	var out []chains.Asset
	for _, a := range Assets(c) {
		d := chains.Asset{Chain: c, Symbol: a.Symbol, Decimals: a.Decimals}
		if !a.Native {
			d.Ref = "0xfake-" + string(c) + "-" + a.Symbol
		}
		out = append(out, d)
	}
	return out
}

func (f *fakeChains) Assets(ctx context.Context, c chains.ID) ([]chains.Asset, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.assetLists++
	if as, ok := f.carries[c]; ok {
		return as, nil
	}
	return fakeAssets(c), nil
}

// own is the fake connector's check of a request's asset: exactly one of
// its own descriptors, as the real connectors check it.
func own(c chains.ID, a chains.Asset) error { return chains.Owns(fakeAssets(c), a) }

func (f *fakeChains) AuthorizationDomain(ctx context.Context, chainID *big.Int, contract string) (chains.ID, chains.TransferAuthorization, error) {
	if f.x402 == nil {
		return "", chains.TransferAuthorization{}, chains.ErrNoAuthorizations
	}
	return f.x402.domain(chainID, contract)
}

func (f *fakeChains) SignAuthorization(ctx context.Context, pr PaymentRequest, terms chains.TransferAuthorization) (chains.TransferAuthorization, []byte, error) {
	if f.x402 == nil {
		return terms, nil, chains.ErrNoAuthorizations
	}
	auth, err := pr.Authorization(terms)
	if err != nil {
		return terms, nil, err
	}
	f.mu.Lock()
	f.requests = append(f.requests, pr)
	f.record(call{Op: "sign_authorization", Chain: string(pr.Chain()), To: auth.To, Amount: auth.Value.String(), Asset: auth.Asset, Key: pr.IdempotencyKey()})
	f.mu.Unlock()
	return f.x402.sign(auth)
}

type call struct {
	Op, Chain, To, Amount, Asset, Key string
}

func newFakeChains() *fakeChains {
	return &fakeChains{
		unavailable: map[chains.ID]bool{}, funds: map[chains.ID]map[string]*big.Rat{}, balances: map[chains.ID]chains.Balance{},
		taken: map[chains.ID]bool{}, onchain: map[chains.ID]map[string]string{}, scans: map[chains.ID]int{},
		keys: map[string]string{}, results: map[string]chains.TxResult{},
	}
}

func (f *fakeChains) fund(c chains.ID, asset, amount string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.funds[c] == nil {
		f.funds[c] = map[string]*big.Rat{}
	}
	r, _ := new(big.Rat).SetString(amount)
	f.funds[c][asset] = r
}

func (f *fakeChains) record(c call) {
	f.calls = append(f.calls, c)
}

// pay is the idempotent core of SendStealth and Withdraw.
func (f *fakeChains) pay(c call, spend bool) (chains.TxResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(c)
	if c.Key == "" {
		return chains.TxResult{}, fmt.Errorf("fake chain: payment without idempotency key")
	}
	if f.unavailable[chains.ID(c.Chain)] {
		return chains.TxResult{}, chains.ErrUnavailable
	}
	params := strings.Join([]string{c.Op, c.Chain, c.To, c.Amount, c.Asset}, "|")
	if prev, ok := f.keys[c.Key]; ok {
		if prev != params {
			return chains.TxResult{}, chains.ErrIdempotencyConflict
		}
		return f.results[c.Key], nil
	}
	if spend {
		have := f.funds[chains.ID(c.Chain)][c.Asset]
		want, ok := new(big.Rat).SetString(c.Amount)
		if !ok {
			return chains.TxResult{}, fmt.Errorf("fake chain: bad amount %q", c.Amount)
		}
		if have == nil || have.Cmp(want) < 0 {
			return chains.TxResult{}, chains.ErrInsufficientFunds
		}
		have.Sub(have, want)
	}
	f.n++
	tx := chains.TxResult{TxHash: fmt.Sprintf("0xtx%04d", f.n)}
	if c.Op == "withdraw" {
		tx.TxLink = "https://explorer.test/" + c.Chain + "/tx/" + tx.TxHash
	}
	f.keys[c.Key] = params
	f.results[c.Key] = tx
	f.sends = append(f.sends, c)
	return tx, nil
}

func (f *fakeChains) Balance(ctx context.Context, c chains.ID) (chains.Balance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(call{Op: "balance", Chain: string(c)})
	if f.unavailable[c] {
		return chains.Balance{}, chains.ErrUnavailable
	}
	b, ok := f.balances[c]
	if !ok {
		return chains.Balance{Native: "0", Tokens: map[string]string{}}, nil
	}
	return b, nil
}

func (f *fakeChains) SendStealth(ctx context.Context, req PaymentRequest) (chains.TxResult, error) {
	r, err := f.request(req)
	if err != nil {
		return chains.TxResult{}, err
	}
	return f.pay(call{Op: "send", Chain: string(r.Chain), To: r.To, Amount: r.Amount.String(), Asset: r.Asset.Symbol, Key: r.IdempotencyKey}, true)
}

// request keeps req, as the spend reached the chain, and answers its
// SendRequest as the agent actor does (an unparsed request is refused).
func (f *fakeChains) request(req PaymentRequest) (chains.SendRequest, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	r, err := req.SendRequest()
	if err != nil {
		return r, err
	}
	return r, own(r.Chain, r.Asset)
}

func (f *fakeChains) Withdraw(ctx context.Context, req PaymentRequest) (chains.TxResult, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	r, err := req.WithdrawRequest()
	if err != nil {
		return chains.TxResult{}, err
	}
	if err := own(r.Chain, r.Asset); err != nil {
		return chains.TxResult{}, err
	}
	amount := ""
	if !r.All {
		amount = r.Amount.String()
	}
	return f.pay(call{Op: "withdraw", Chain: string(r.Chain), To: r.From + ">" + r.To, Amount: amount, Asset: r.Asset.Symbol, Key: r.IdempotencyKey}, false)
}

func (f *fakeChains) RegisterName(ctx context.Context, c chains.ID) (chains.TxResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(call{Op: "register", Chain: string(c)})
	if f.unavailable[c] {
		return chains.TxResult{}, chains.ErrUnavailable
	}
	if f.taken[c] {
		return chains.TxResult{}, chains.ErrNameTaken
	}
	return chains.TxResult{TxHash: "0xreg"}, nil
}

func (f *fakeChains) ResolveName(ctx context.Context, c chains.ID, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(call{Op: "resolve", Chain: string(c), To: name})
	if f.unavailable[c] {
		return "", chains.ErrUnavailable
	}
	if m, ok := f.onchain[c][name]; ok {
		return m, nil
	}
	return "", chains.ErrNotFound
}

func (f *fakeChains) Fund(ctx context.Context, c chains.ID) (chains.TxResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(call{Op: "fund", Chain: string(c)})
	if f.unavailable[c] {
		return chains.TxResult{}, chains.ErrUnavailable
	}
	return chains.TxResult{TxHash: "0xfaucet"}, nil
}

func (f *fakeChains) Scan(ctx context.Context, c chains.ID) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(call{Op: "scan", Chain: string(c)})
	if f.unavailable[c] {
		return 0, chains.ErrUnavailable
	}
	return f.scans[c], nil
}

func (f *fakeChains) TxLink(c chains.ID, h string) string {
	return "https://explorer.test/" + string(c) + "/tx/" + h
}

func (f *fakeChains) moneyMoves() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.sends...)
}

// fakeDirectory knows Veil agents by bare name.
type fakeDirectory struct {
	agents map[string]Agent
	err    error
}

func (d *fakeDirectory) LookupAgent(ctx context.Context, name string) (Agent, error) {
	if d.err != nil {
		return Agent{}, d.err
	}
	if strings.ContainsAny(name, ". ") || name != strings.ToLower(name) {
		return Agent{}, fmt.Errorf("fake directory: lookup of unnormalised name %q", name)
	}
	a, ok := d.agents[name]
	if !ok {
		return Agent{}, fmt.Errorf("%w: %s", ErrUnknownRecipient, name)
	}
	return a, nil
}

type fakePayments struct {
	mu   sync.Mutex
	ps   []Payment
	err  error
	mark []Withdrawal
}

func (p *fakePayments) Received(ctx context.Context, c chains.ID) ([]Payment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	var out []Payment
	for _, x := range p.ps {
		if x.Chain == c {
			x.WithdrawnTo = append([]string(nil), x.WithdrawnTo...)
			out = append(out, x)
		}
	}
	return out, nil
}

func (p *fakePayments) MarkWithdrawn(ctx context.Context, w Withdrawal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mark = append(p.mark, w)
	for i := range p.ps {
		if p.ps[i].Chain == w.Chain && p.ps[i].StealthAddress == w.StealthAddress {
			if w.Amount == "" {
				p.ps[i].Withdrawn, p.ps[i].Balance = true, "0"
			}
			p.ps[i].WithdrawnTo = append(p.ps[i].WithdrawnTo, w.To)
			return nil
		}
	}
	return fmt.Errorf("fake payments: no payment %s", w.StealthAddress)
}

type fakeInvoices struct {
	mu   sync.Mutex
	all  map[string]Invoice
	keys map[string]string // idempotency key → id
	now  func() time.Time
}

func (s *fakeInvoices) Create(ctx context.Context, inv Invoice, key string) (Invoice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key == "" {
		return Invoice{}, fmt.Errorf("fake invoices: tools must pass an idempotency key")
	}
	if inv.ID != "" {
		return Invoice{}, fmt.Errorf("fake invoices: tools must not choose the id")
	}
	if s.keys == nil {
		s.keys = map[string]string{}
	}
	if id, ok := s.keys[key]; ok {
		return s.all[id], nil
	}
	inv.ID = uuid.NewString()
	s.keys[key] = inv.ID
	inv.AgentName = "alice"
	inv.Status = "pending"
	inv.PaymentLink = "https://veil.test/pay/" + inv.ID
	inv.PayTo = "0xpayto"
	inv.CreatedAt = s.now()
	s.all[inv.ID] = inv
	return inv, nil
}

func (s *fakeInvoices) List(ctx context.Context) ([]Invoice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Invoice
	for _, v := range s.all {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

type fakeSchedules struct {
	mu          sync.Mutex
	all         []Schedule
	now         func() time.Time
	transitions []string
}

func (s *fakeSchedules) Create(ctx context.Context, sc Schedule) (Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.all {
		if x.ID == sc.ID {
			return x, nil
		}
	}
	sc.Status = "active"
	sc.CreatedAt = s.now()
	next, err := NextRun(sc.CreatedAt, sc.CreatedAt, sc.Interval)
	if err != nil {
		return Schedule{}, err
	}
	sc.NextRun = next
	s.all = append(s.all, sc)
	return sc, nil
}

func (s *fakeSchedules) List(ctx context.Context) ([]Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Schedule(nil), s.all...), nil
}

func (s *fakeSchedules) Transition(ctx context.Context, prefix, action string) (Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transitions = append(s.transitions, prefix+":"+action)
	for i, x := range s.all {
		if strings.HasPrefix(x.ID, prefix) {
			s.all[i].Status = map[string]string{"pause": "paused", "resume": "active", "cancel": "cancelled"}[action]
			return s.all[i], nil
		}
	}
	return Schedule{}, fmt.Errorf("no schedule %s", prefix)
}

type fakeMemories struct {
	mu  sync.Mutex
	all map[string]Memory
	now func() time.Time
}

func (s *fakeMemories) Save(ctx context.Context, m Memory) (Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.all[m.ID]; ok {
		return old, nil
	}
	m.CreatedAt = s.now()
	s.all[m.ID] = m
	return m, nil
}

func (s *fakeMemories) List(ctx context.Context) ([]Memory, error) { return nil, nil }

type fakeNotifier struct {
	mu    sync.Mutex
	notes []string
}

func (n *fakeNotifier) Notify(ctx context.Context, key, typ, title, body string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, typ+": "+body)
	return nil
}

// fixture is alice on base (default), stellar and solana, with bob on
// base and stellar, carol on solana only, dave on ethereum only, and erin
// known only to stellar's on-chain registry.
type fixture struct {
	env   *Env
	chain *fakeChains
	dir   *fakeDirectory
	pays  *fakePayments
	inv   *fakeInvoices
	sch   *fakeSchedules
	mem   *fakeMemories
	note  *fakeNotifier
	now   time.Time
}

var testNow = time.Date(2027, 1, 31, 10, 0, 0, 0, time.UTC)

func newFixture(t testing.TB) *fixture {
	now := testNow
	clock := func() time.Time { return now }
	cs := newFakeChains()
	for _, c := range []chains.ID{chains.Base, chains.Stellar, chains.Solana} {
		for _, a := range Assets(c) {
			cs.fund(c, a.Symbol, "1000")
		}
	}
	cs.onchain[chains.Stellar] = map[string]string{"erin": edMeta(t, edstealth.Stellar, "erin")}
	dir := &fakeDirectory{agents: map[string]Agent{
		"bob":   {Name: "bob", Chains: []chains.ID{chains.Base, chains.Stellar}, MetaAddresses: metas(t, "bob", chains.Base, chains.Stellar)},
		"carol": {Name: "carol", Chains: []chains.ID{chains.Solana}, MetaAddresses: metas(t, "carol", chains.Solana)},
		"dave":  {Name: "dave", Chains: []chains.ID{chains.Ethereum}, MetaAddresses: metas(t, "dave", chains.Ethereum)},
		"ghost": {Name: "ghost", Chains: []chains.ID{chains.Base}},
	}}
	f := &fixture{
		chain: cs, dir: dir, now: now,
		pays: &fakePayments{},
		inv:  &fakeInvoices{all: map[string]Invoice{}, now: clock},
		sch:  &fakeSchedules{now: clock},
		mem:  &fakeMemories{all: map[string]Memory{}, now: clock},
		note: &fakeNotifier{},
	}
	mine := []chains.ID{chains.Base, chains.Stellar, chains.Solana}
	f.env = &Env{
		Agent: Agent{ID: "agent-alice", Name: "alice", AccountID: "acct", Chains: mine,
			Addresses: addrs(t, "alice", mine...), MetaAddresses: metas(t, "alice", mine...)},
		IdempotencyKey: "key-1",
		Source:         testSource,
		Now:            clock,
		Chains:         cs, Directory: dir, Invoices: f.inv, Schedules: f.sch, Memories: f.mem, Payments: f.pays, Notifier: f.note,
	}
	return f
}

func (f *fixture) run(t testing.TB, tool, userText, args string) (any, error) {
	t.Helper()
	tl, ok := ByName(tool)
	if !ok {
		t.Fatalf("no tool %s", tool)
	}
	env := *f.env
	env.UserText = userText
	return tl.Call(context.Background(), &env, []byte(args))
}

func (f *fakeChains) PreparesDestinations(c chains.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prepares[c]
}
