package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/persistence"
)

func openStore(t testing.TB) persistence.Store {
	t.Helper()
	s, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fakeClock is a settable clock safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func at(t testing.TB, s string) time.Time {
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

var ctx = context.Background()

func seed(s string) [32]byte { return sha256.Sum256([]byte(s)) }

type agentKeys struct {
	evm  secp256k1.Keys
	xlm  edstealth.Keys
	sol  edstealth.Keys
	meta map[chains.ID]string
}

func keysFor(t testing.TB, who string) agentKeys {
	var k agentKeys
	var err error
	if k.evm, err = secp256k1.KeysFromSeeds(seed(who+"/s"), seed(who+"/v")); err != nil {
		t.Fatal(err)
	}
	if k.xlm, err = edstealth.KeysFromSeeds(edstealth.Stellar, seed(who+"/s"), seed(who+"/v")); err != nil {
		t.Fatal(err)
	}
	if k.sol, err = edstealth.KeysFromSeeds(edstealth.Solana, seed(who+"/s"), seed(who+"/v")); err != nil {
		t.Fatal(err)
	}
	k.meta = map[chains.ID]string{chains.Base: k.evm.Meta.String(), chains.Ethereum: k.evm.Meta.String(), chains.Stellar: k.xlm.Meta.String(), chains.Solana: k.sol.Meta.String()}
	return k
}

// ownsAddress checks with the recipient's private keys that addr is the
// one-time address of ephemeral key eph.
func (k agentKeys) ownsAddress(t *testing.T, c chains.ID, addr, ephHex string) {
	t.Helper()
	eph, err := hex.DecodeString(ephHex)
	if err != nil {
		t.Fatal(err)
	}
	switch c.Family() {
	case chains.FamilyEVM:
		var e [33]byte
		copy(e[:], eph)
		priv, err := secp256k1.DeriveStealthPrivateKey(k.evm.SpendPriv, k.evm.ViewPriv, e)
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := secp256k1.PublicKey(priv)
		a, _ := secp256k1.Address(pub)
		if !strings.EqualFold(addr, "0x"+hex.EncodeToString(a[:])) {
			t.Errorf("%s is not the stealth address of eph %s", addr, ephHex)
		}
	default:
		keys, ec := k.xlm, edstealth.Stellar
		if c == chains.Solana {
			keys, ec = k.sol, edstealth.Solana
		}
		var e [32]byte
		copy(e[:], eph)
		scalar, err := edstealth.DeriveStealthPrivateKey(keys.SpendScalar, keys.ViewPriv, e)
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := edstealth.PublicKeyFromScalar(scalar)
		if got := edstealth.Address(ec, pub); got != addr {
			t.Errorf("%s is not the stealth address (%s)", addr, got)
		}
	}
}

// keys lists a table's keys.
func keys(t testing.TB, s persistence.Store, table string) []string {
	t.Helper()
	recs, err := s.List(ctx, table, persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Key
	}
	return out
}

func TestInvoices(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	k := keysFor(t, "alice")
	inv := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test/", StealthAddresses(k.meta, cryptoRand{}))

	var created []tools.Invoice
	for i, c := range []struct {
		chain           chains.ID
		amount, asset   string
		wantAmt, asset2 string
	}{
		{chains.Base, "25.50", "usdc", "25.5", "USDC"},
		{chains.Stellar, "3", "XLM", "3", "XLM"},
		{chains.Solana, "0.000000001", "SOL", "0.000000001", "SOL"},
	} {
		clk.Set(clk.Now().Add(time.Minute))
		got, err := inv.Create(ctx, tools.Invoice{Chain: c.chain, Amount: c.amount, Asset: c.asset, Memo: fmt.Sprintf(" job %d ", i)}, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != InvoicePending || got.TxHash != nil || got.Amount != c.wantAmt || got.Asset != c.asset2 || got.AgentName != "alice" ||
			got.PaymentLink != "https://veil.test/pay/"+got.ID || got.Memo != fmt.Sprintf("job %d", i) || got.AgentID != "agent-a" || !got.CreatedAt.Equal(clk.Now()) {
			t.Errorf("%+v", got)
		}
		rec, err := GetInvoice(ctx, s, got.ID)
		if err != nil || rec.AgentID != "agent-a" || rec.Invoice.AgentID != "agent-a" || rec.PayTo != got.PayTo {
			t.Fatalf("GetInvoice: %+v %v", rec, err)
		}
		k.ownsAddress(t, c.chain, got.PayTo, rec.EphemeralPubKey)
		lookup := got.PayTo
		if c.chain.Family() == chains.FamilyEVM {
			lookup = strings.ToUpper(lookup[2:])
			lookup = "0x" + lookup
		}
		if byAddr, err := InvoiceByAddress(ctx, s, c.chain, lookup); err != nil || byAddr.ID != got.ID {
			t.Errorf("InvoiceByAddress(%s): %+v %v", lookup, byAddr, err)
		}
		created = append(created, got)
	}
	// Stored JSON: another package counts pending invoices by "status".
	raw, _ := s.Get(ctx, TableInvoices, "agent-a/"+created[0].ID)
	var probe struct {
		Status  string  `json:"status"`
		AgentID string  `json:"agentId"`
		TxHash  *string `json:"txHash"`
	}
	if err := json.Unmarshal(raw.Value, &probe); err != nil || probe.Status != "pending" || probe.AgentID != "agent-a" || probe.TxHash != nil {
		t.Errorf("stored %s", raw.Value)
	}
	list, err := inv.List(ctx)
	if err != nil || len(list) != 3 || list[0].ID != created[2].ID || list[2].ID != created[0].ID {
		t.Errorf("List: %v %v", list, err)
	}
	// Another agent's invoices are separate.
	other := NewInvoices(s, "agent-b", clk.Now, "bob", "https://veil.test", StealthAddresses(keysFor(t, "bob").meta, cryptoRand{}))
	if l, _ := other.List(ctx); len(l) != 0 {
		t.Errorf("agent-b sees %v", l)
	}
	if _, err := other.Get(ctx, created[0].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("agent-b Get: %v", err)
	}

	// Paid: once; the second call changes nothing.
	clk.Set(clk.Now().Add(time.Hour))
	p1, changed, err := inv.MarkPaid(ctx, created[0].ID, "0xpaid")
	if err != nil || !changed || p1.Status != InvoicePaid || *p1.TxHash != "0xpaid" {
		t.Fatalf("MarkPaid: %+v %v %v", p1, changed, err)
	}
	p2, changed, err := inv.MarkPaid(ctx, created[0].ID, "0xother")
	if err != nil || changed || *p2.TxHash != "0xpaid" {
		t.Errorf("MarkPaid again: %+v %v %v", p2, changed, err)
	}
	rec, _ := GetInvoice(ctx, s, created[0].ID)
	if rec.PaidAt == nil || !rec.PaidAt.Equal(clk.Now()) {
		t.Errorf("paidAt %v", rec.PaidAt)
	}
	if _, _, err := inv.MarkPaid(ctx, "nope", "0x1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkPaid unknown: %v", err)
	}
	if _, _, err := inv.MarkPaid(ctx, created[1].ID, " "); !errors.Is(err, ErrInvalid) {
		t.Errorf("MarkPaid no hash: %v", err)
	}
	if _, err := GetInvoice(ctx, s, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetInvoice unknown: %v", err)
	}
	if _, err := InvoiceByAddress(ctx, s, chains.Base, "0x00"); !errors.Is(err, ErrNotFound) {
		t.Errorf("InvoiceByAddress unknown: %v", err)
	}
}

type cryptoRand struct{}

func (cryptoRand) Read(p []byte) (int, error) {
	// Deterministic enough for tests, distinct per call.
	cryptoRandMu.Lock()
	defer cryptoRandMu.Unlock()
	for i := range p {
		if i%32 == 0 {
			cryptoRandCtr++
			h := sha256.Sum256([]byte(fmt.Sprint("rand", cryptoRandCtr)))
			copy(p[i:], h[:])
		}
	}
	return len(p), nil
}

var (
	cryptoRandMu  sync.Mutex
	cryptoRandCtr int
)

func TestInvoiceValidationAndIdempotency(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	var gens atomic.Int64
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return fmt.Sprintf("0x%040x", gens.Add(1)), []byte{1, 2, 3}, nil
	}
	inv := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", gen)
	bad := []tools.Invoice{
		{Chain: "bitcoin", Amount: "1", Asset: "BTC", Memo: "x"},
		{Chain: chains.Base, Amount: "1", Asset: "XLM", Memo: "x"},
		{Chain: chains.Base, Amount: "0", Asset: "ETH", Memo: "x"},
		{Chain: chains.Base, Amount: "1.0000001", Asset: "USDC", Memo: "x"},
		{Chain: chains.Base, Amount: "1", Asset: "ETH", Memo: "  "},
		{Chain: chains.Base, Amount: "1", Asset: "ETH", Memo: strings.Repeat("m", tools.MaxMemoLen+1)},
		{ID: "not-a-uuid", Chain: chains.Base, Amount: "1", Asset: "ETH", Memo: "x"},
		// The store chooses ids: a preset one (even a valid UUID) is refused.
		{ID: "3f2a0000-0000-4000-8000-000000000001", Chain: chains.Base, Amount: "1", Asset: "ETH", Memo: "x"},
	}
	for _, b := range bad {
		if _, err := inv.Create(ctx, b, "k"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create(%+v) = %v; want ErrInvalid", b, err)
		}
	}
	if gens.Load() != 0 || len(keys(t, s, TableInvoices)) != 0 {
		t.Error("a rejected invoice used an address or was stored")
	}
	failing := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", func(context.Context, chains.ID) (string, []byte, error) {
		return "", nil, errors.New("enclave down")
	})
	if _, err := failing.Create(ctx, tools.Invoice{Chain: chains.Base, Amount: "1", Asset: "ETH", Memo: "x"}, ""); err == nil || !strings.Contains(err.Error(), "enclave down") {
		t.Errorf("generator failure: %v", err)
	}

	// An idempotency key: the same create returns the stored invoice, also
	// under concurrency; the key with other terms is refused.
	want := tools.Invoice{Chain: chains.Base, Amount: "5", Asset: "USDC", Memo: "logo"}
	var wg sync.WaitGroup
	results := make([]tools.Invoice, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = inv.Create(ctx, want, "create_invoice/k1")
		}(i)
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i].ID != results[0].ID || results[i].PayTo != results[0].PayTo {
			t.Errorf("concurrent create %d: %+v %v", i, results[i], errs[i])
		}
	}
	if n := len(keys(t, s, TableInvoices)); n != 1 {
		t.Errorf("%d invoices stored", n)
	}
	if n := len(keys(t, s, TableInvoiceKeys)); n != 1 {
		t.Errorf("%d idempotency records", n)
	}
	if _, err := inv.Create(ctx, tools.Invoice{Chain: chains.Base, Amount: "6", Asset: "USDC", Memo: "logo"}, "create_invoice/k1"); !errors.Is(err, ErrIDReused) {
		t.Errorf("reused key: %v", err)
	}
	// The key is per agent: another agent's same key is another invoice.
	other := NewInvoices(s, "agent-b", clk.Now, "bob", "https://veil.test", gen)
	if o, err := other.Create(ctx, want, "create_invoice/k1"); err != nil || o.ID == results[0].ID {
		t.Errorf("other agent, same key: %+v %v", o, err)
	}

	// Atomicity: when one entry of the batch cannot be written (the
	// generated address is already indexed), none of the invoice is, the
	// key record included.
	taken := fmt.Sprintf("0x%040x", gens.Load()+1)
	if _, err := s.Apply(ctx, persistence.Put(TableInvoiceAddress, addressKey(chains.Base, taken), []byte("agent-x/x"), persistence.Absent())); err != nil {
		t.Fatal(err)
	}
	before := len(keys(t, s, TableInvoices))
	if _, err := inv.Create(ctx, tools.Invoice{Chain: chains.Base, Amount: "1", Asset: "ETH", Memo: "x"}, "create_invoice/k2"); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("conflicting index: %v", err)
	}
	if n := len(keys(t, s, TableInvoices)); n != before {
		t.Errorf("invoice written without its index: %d → %d", before, n)
	}
	if n := len(keys(t, s, TableInvoiceKeys)); n != 2 {
		t.Errorf("idempotency record written without its invoice: %d", n)
	}
}

// Invoice ids are public (pay links): they are random UUIDv4s, not
// derivable from the agent, the message, the arguments or the idempotency
// key. The same agent id, terms and key in two fresh stores give two
// different ids; older ids (UUIDv5) stay readable.
func TestInvoiceIDsAreRandom(t *testing.T) {
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return "0x00000000000000000000000000000000000000aa", []byte{1}, nil
	}
	req := tools.Invoice{Chain: chains.Base, Amount: "5", Asset: "USDC", Memo: "logo"}
	seen := map[string]bool{}
	for range 4 {
		s := openStore(t)
		clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
		got, err := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", gen).Create(ctx, req, "create_invoice/same-key")
		if err != nil {
			t.Fatal(err)
		}
		u, err := uuid.Parse(got.ID)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("id %q is not a random UUIDv4", got.ID)
		}
		if seen[got.ID] {
			t.Fatalf("id %s repeated for the same agent, terms and key in a fresh store", got.ID)
		}
		seen[got.ID] = true
		// The old derivation (UUIDv5 of tool, agent and key) is not it.
		if old := uuid.NewSHA1(uuid.NameSpaceOID, []byte("veil/tools/create_invoice/agent-a/same-key")).String(); got.ID == old {
			t.Fatal("id is the old derivable UUIDv5")
		}
	}

	// An invoice stored under an old derived id is still found by it.
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	old := uuid.NewSHA1(uuid.NameSpaceOID, []byte("veil/tools/create_invoice/agent-a/k")).String()
	rec := InvoiceRecord{Invoice: tools.Invoice{ID: old, AgentID: "agent-a", Amount: "5", Asset: "USDC", Memo: "logo", Status: InvoicePending, Chain: chains.Base, PayTo: "0x01"}, AgentID: "agent-a"}
	if _, err := s.Apply(ctx,
		persistence.Put(TableInvoices, "agent-a/"+old, mustJSON(rec), persistence.Absent()),
		persistence.Put(TableInvoiceIndex, old, []byte("agent-a"), persistence.Absent()),
	); err != nil {
		t.Fatal(err)
	}
	if got, err := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", gen).Get(ctx, old); err != nil || got.ID != old {
		t.Fatalf("old id: %+v %v", got, err)
	}
	if got, err := GetInvoice(ctx, s, old); err != nil || got.ID != old {
		t.Fatalf("GetInvoice(old id): %+v %v", got, err)
	}
}

func TestPayments(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	p := NewPayments(s, "agent-a", clk.Now)
	addr := "0xAbCdEf0000000000000000000000000000000001"
	pay := tools.Payment{Chain: chains.Base, StealthAddress: addr, EphemeralPubKey: "02ab", Asset: "USDC", Amount: "5", TxHash: "0xt1"}

	// The scanner delivers the same payment concurrently: exactly one
	// delivery is new.
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh, known := 0, 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Record(ctx, pay)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				fresh++
			case errors.Is(err, ErrAlreadyKnown):
				known++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if fresh != 1 || known != 7 {
		t.Fatalf("fresh %d known %d", fresh, known)
	}
	// Again later, with the address in another case: still known.
	again := pay
	again.StealthAddress = strings.ToLower(addr)
	if got, err := p.Record(ctx, again); !errors.Is(err, ErrAlreadyKnown) || got.Balance != "5" {
		t.Errorf("redelivery: %+v %v", got, err)
	}
	// A second transaction to the same address adds up.
	second := pay
	second.TxHash, second.Amount = "0xt2", "0.25"
	if got, err := p.Record(ctx, second); err != nil || got.Amount != "5.25" || got.Balance != "5.25" {
		t.Errorf("second tx: %+v %v", got, err)
	}
	other := pay
	other.TxHash, other.Asset = "0xt3", "ETH"
	if _, err := p.Record(ctx, other); !errors.Is(err, ErrInvalid) {
		t.Errorf("other asset: %v", err)
	}
	clk.Set(clk.Now().Add(time.Minute))
	xlm := tools.Payment{Chain: chains.Stellar, StealthAddress: "GABC", Asset: "XLM", Amount: "20", TxHash: "x1"}
	if _, err := p.Record(ctx, xlm); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []tools.Payment{
		{Chain: "btc", StealthAddress: "a", Asset: "X", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "", Asset: "ETH", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "a/b", Asset: "ETH", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "a", Asset: "ETH", Amount: "1"},
		{Chain: chains.Base, StealthAddress: "a", Asset: "", Amount: "1", TxHash: "h"},
		{Chain: chains.Base, StealthAddress: "a", Asset: "ETH", Amount: "1e5", TxHash: "h"},
	} {
		if _, err := p.Record(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Record(%+v) = %v", bad, err)
		}
	}

	all, err := p.Received(ctx, "")
	if err != nil || len(all) != 2 || all[0].Chain != chains.Base || all[1].Chain != chains.Stellar {
		t.Fatalf("Received all: %+v %v", all, err)
	}
	base, _ := p.Received(ctx, chains.Base)
	if len(base) != 1 || base[0].StealthAddress != addr || base[0].EphemeralPubKey != "02ab" || !base[0].ReceivedAt.Equal(at(t, "2027-01-31T10:00:00Z")) {
		t.Errorf("Received base: %+v", base)
	}
	if sol, _ := p.Received(ctx, chains.Solana); len(sol) != 0 {
		t.Errorf("solana: %v", sol)
	}

	// Withdrawals: partial, repeated (no change), then the rest.
	w := tools.Withdrawal{Chain: chains.Base, StealthAddress: strings.ToLower(addr), To: "0xDest", Amount: "2", TxHash: "0xw1"}
	for range 2 {
		if err := p.MarkWithdrawn(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := p.Get(ctx, chains.Base, addr)
	if rec.Balance != "3.25" || rec.Withdrawn || len(rec.Withdrawals) != 1 || rec.WithdrawnTo[0] != "0xDest" {
		t.Errorf("after partial: %+v", rec)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Base, StealthAddress: addr, To: "0xDest", TxHash: "0xw2"}); err != nil {
		t.Fatal(err)
	}
	rec, _ = p.Get(ctx, chains.Base, addr)
	if rec.Balance != "0" || !rec.Withdrawn || len(rec.Withdrawals) != 2 || len(rec.WithdrawnTo) != 1 {
		t.Errorf("after all: %+v", rec)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Stellar, StealthAddress: "GABC", To: "GD", Amount: "25", TxHash: "xw"}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := p.Get(ctx, chains.Stellar, "GABC"); rec.Balance != "0" || !rec.Withdrawn {
		t.Errorf("over-withdrawal floors at zero: %+v", rec)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Solana, StealthAddress: "nope", TxHash: "h"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown payment: %v", err)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Base, StealthAddress: addr}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no tx hash: %v", err)
	}
	if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Base, StealthAddress: addr, Amount: "-1", TxHash: "h"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad amount: %v", err)
	}
}

func TestConcurrentWithdrawals(t *testing.T) {
	s := openStore(t)
	p := NewPayments(s, "agent-a", nil)
	if _, err := p.Record(ctx, tools.Payment{Chain: chains.Solana, StealthAddress: "So1", Asset: "SOL", Amount: "10", TxHash: "t"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each withdrawal twice, as a retried caller would.
			for range 2 {
				if err := p.MarkWithdrawn(ctx, tools.Withdrawal{Chain: chains.Solana, StealthAddress: "So1", To: "D", Amount: "0.5", TxHash: fmt.Sprint("w", i)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	rec, _ := p.Get(ctx, chains.Solana, "So1")
	if rec.Balance != "5" || len(rec.Withdrawals) != 10 || rec.Withdrawn {
		t.Errorf("%+v", rec)
	}
}

func TestMemories(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	m := NewMemories(s, "agent-a", clk.Now)
	a, err := m.Save(ctx, tools.Memory{Content: "Prefers USDC", Type: "preference"})
	if err != nil || a.Importance != 3 || a.ID == "" || !a.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("%+v %v", a, err)
	}
	clk.Set(clk.Now().Add(time.Minute))
	// Same words: the existing memory is updated, not copied.
	b, err := m.Save(ctx, tools.Memory{Content: "  prefers   usdc ", Type: "fact", Importance: 5})
	if err != nil || b.ID != a.ID || b.Importance != 5 || b.Type != "fact" {
		t.Errorf("dedupe: %+v %v", b, err)
	}
	c, _ := m.Save(ctx, tools.Memory{Content: "Landlord is carol.veil", Type: "contact", Importance: 5})
	d, _ := m.Save(ctx, tools.Memory{Content: "Trivia", Type: "fact", Importance: 1})
	list, _ := m.List(ctx)
	if len(list) != 3 || list[0].ID != c.ID || list[1].ID != a.ID || list[2].ID != d.ID {
		t.Errorf("order: %+v", list)
	}
	// A preset id is idempotent.
	id := "0f000000-0000-4000-8000-000000000000"
	e1, _ := m.Save(ctx, tools.Memory{ID: id, Content: "x1", Type: "fact"})
	e2, err := m.Save(ctx, tools.Memory{ID: id, Content: "x1", Type: "fact"})
	if err != nil || e1.ID != e2.ID || e1.ID != id {
		t.Errorf("preset id: %+v %+v %v", e1, e2, err)
	}
	for _, bad := range []tools.Memory{
		{Content: "", Type: "fact"}, {Content: strings.Repeat("x", tools.MaxMemoryLen+1), Type: "fact"},
		{Content: "x", Type: "secret"}, {Content: "x", Type: "fact", Importance: 6}, {Content: "x", Type: "fact", ID: "zz"},
	} {
		if _, err := m.Save(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Save(%+v) = %v", bad, err)
		}
	}
	if err := m.Delete(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, d.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if list, _ := m.List(ctx); len(list) != 3 {
		t.Errorf("after delete: %d", len(list))
	}
}

func TestMemoryCapUnderConcurrency(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	m := NewMemories(s, "agent-a", clk.Now)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two goroutines share m; two have instances of their own
			// (another activation), which only the store's versions
			// keep in line.
			m := m
			if w >= 2 {
				m = NewMemories(s, "agent-a", clk.Now)
			}
			for i := range (MaxMemories + 20) / 4 {
				if _, err := m.Save(ctx, tools.Memory{Content: fmt.Sprintf("note %d-%d", w, i), Type: "fact", Importance: 2}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	list, _ := m.List(ctx)
	var meta memoryMeta
	getJSON(ctx, s, TableMemoryMeta, "agent-a", &meta)
	if len(list) != MaxMemories || meta.Count != MaxMemories {
		t.Fatalf("%d memories, meta %d; want %d", len(list), meta.Count, MaxMemories)
	}
	// Full: a less important memory is refused, a more important one
	// replaces the oldest least important.
	if _, err := m.Save(ctx, tools.Memory{Content: "minor", Type: "fact", Importance: 1}); !errors.Is(err, ErrMemoryFull) {
		t.Errorf("minor: %v", err)
	}
	clk.Set(clk.Now().Add(time.Hour))
	if _, err := m.Save(ctx, tools.Memory{Content: "major", Type: "instruction", Importance: 5}); err != nil {
		t.Fatal(err)
	}
	list, _ = m.List(ctx)
	if len(list) != MaxMemories || list[0].Content != "major" {
		t.Errorf("%d, first %+v", len(list), list[0])
	}
}

// dueInvariant: the due index holds exactly one entry per active schedule,
// at its NextRun, and nothing else.
func dueInvariant(t *testing.T, s persistence.Store) {
	t.Helper()
	recs, err := s.List(ctx, TableSchedules, persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range recs {
		var sc tools.Schedule
		json.Unmarshal(r.Value, &sc)
		agentID, _, _ := strings.Cut(r.Key, "/")
		if sc.Status == ScheduleActive {
			want = append(want, DueKey(sc.NextRun, agentID, sc.ID))
		}
	}
	sort.Strings(want)
	got := keys(t, s, TableScheduleDue)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("due index\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func newSchedule(t *testing.T, sch *Schedules, id, interval string, end *time.Time) tools.Schedule {
	t.Helper()
	sc, err := sch.Create(ctx, tools.Schedule{ID: id, Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: interval, EndDate: end})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestScheduleTransitions(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	sch := NewSchedules(s, "agent-a", clk.Now)
	a := newSchedule(t, sch, "abcd0000-0000-4000-8000-000000000001", tools.Monthly, nil)
	b := newSchedule(t, sch, "abcd1111-0000-4000-8000-000000000002", tools.Weekly, nil)
	if a.Status != ScheduleActive || !a.NextRun.Equal(at(t, "2027-02-28T10:00:00Z")) || a.LastRun != nil || !b.NextRun.Equal(at(t, "2027-02-07T10:00:00Z")) {
		t.Fatalf("%+v %+v", a, b)
	}
	dueInvariant(t, s)

	steps := []struct {
		prefix, action, want string
		err                  error
	}{
		{"abcd", ActionPause, "", ErrAmbiguous},
		{"abc", ActionPause, "", ErrInvalid},
		{"ffff", ActionPause, "", ErrNotFound},
		{"abcd0", "delete", "", ErrInvalid},
		{"ABCD0", ActionResume, "", ErrInvalidTransition},
		{"abcd0", ActionPause, SchedulePaused, nil},
		{"abcd0", ActionPause, "", ErrInvalidTransition},
		{"abcd0", ActionResume, ScheduleActive, nil},
		{"abcd0", ActionPause, SchedulePaused, nil},
		{"abcd0", ActionCancel, ScheduleCancelled, nil},
		{"abcd0", ActionResume, "", ErrInvalidTransition},
		{"abcd0", ActionCancel, "", ErrInvalidTransition},
		{"abcd0", ActionPause, "", ErrInvalidTransition},
		{"abcd1111-0000-4000-8000-000000000002", ActionCancel, ScheduleCancelled, nil},
	}
	for _, st := range steps {
		got, err := sch.Transition(ctx, st.prefix, st.action)
		if st.err != nil {
			if !errors.Is(err, st.err) {
				t.Errorf("%s %s: %v; want %v", st.prefix, st.action, err, st.err)
			}
			continue
		}
		if err != nil || got.Status != st.want {
			t.Errorf("%s %s: %+v %v", st.prefix, st.action, got, err)
		}
		dueInvariant(t, s)
	}
	if _, err := sch.Transition(ctx, "abcd", ActionPause); err == nil || !strings.Contains(err.Error(), "abcd0000-0000-4000-8000-000000000001, abcd1111") {
		t.Errorf("ambiguity should list the ids: %v", err)
	}
	if due, _ := DueSchedules(ctx, s, at(t, "2100-01-01T00:00:00Z"), 0); len(due) != 0 {
		t.Errorf("cancelled schedules are due: %v", due)
	}
}

func TestScheduleSlotsWithFakeClock(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	sch := NewSchedules(s, "agent-a", clk.Now)
	m := newSchedule(t, sch, "", tools.Monthly, nil)
	// Each slot runs on time: Jan 31 → Feb 28 → Mar 31 → Apr 30.
	for _, slot := range []string{"2027-02-28T10:00:00Z", "2027-03-31T10:00:00Z", "2027-04-30T10:00:00Z"} {
		if !m.NextRun.Equal(at(t, slot)) {
			t.Fatalf("next run %s, want %s", m.NextRun, slot)
		}
		due, err := DueSchedules(ctx, s, at(t, slot), 0)
		if err != nil || len(due) != 1 || due[0].ScheduleID != m.ID || due[0].AgentID != "agent-a" || !due[0].NextRun.Equal(at(t, slot)) {
			t.Fatalf("due at %s: %+v %v", slot, due, err)
		}
		if due, _ := DueSchedules(ctx, s, at(t, slot).Add(-time.Nanosecond), 0); len(due) != 0 {
			t.Fatalf("due before its slot: %v", due)
		}
		clk.Set(at(t, slot).Add(time.Second))
		var err2 error
		if m, err2 = sch.Advance(ctx, m.ID, at(t, slot)); err2 != nil {
			t.Fatal(err2)
		}
		if !m.LastRun.Equal(clk.Now()) {
			t.Errorf("lastRun %v", m.LastRun)
		}
		// The same slot again (a duplicate wake-up) is stale.
		if _, err := sch.Advance(ctx, m.ID, at(t, slot)); !errors.Is(err, ErrStaleSlot) {
			t.Errorf("advance twice: %v", err)
		}
		dueInvariant(t, s)
	}
	// Leap year: a schedule made on 2028-01-31 pays on Feb 29.
	clk.Set(at(t, "2028-01-31T08:00:00Z"))
	leap := newSchedule(t, sch, "", tools.Monthly, nil)
	if !leap.NextRun.Equal(at(t, "2028-02-29T08:00:00Z")) {
		t.Errorf("leap %s", leap.NextRun)
	}

	// Downtime across three missed daily slots: one run, then the next
	// slot after now.
	clk.Set(at(t, "2027-06-01T09:00:00Z"))
	d := newSchedule(t, sch, "", tools.Daily, nil)
	clk.Set(at(t, "2027-06-05T12:00:00Z")) // slots Jun 2, 3, 4, 5 09:00 have passed
	due, _ := DueSchedules(ctx, s, clk.Now(), 0)
	found := false
	for _, x := range due {
		found = found || x.ScheduleID == d.ID
	}
	if !found {
		t.Fatal("missed schedule not due")
	}
	d, err := sch.Advance(ctx, d.ID, at(t, "2027-06-02T09:00:00Z"))
	if err != nil || !d.NextRun.Equal(at(t, "2027-06-06T09:00:00Z")) {
		t.Errorf("catch-up: %+v %v", d, err)
	}
	dueInvariant(t, s)

	// Pause across slots, resume: paused slots are skipped.
	clk.Set(at(t, "2027-06-05T13:00:00Z"))
	if _, err := sch.Transition(ctx, d.ID[:8], ActionPause); err != nil {
		t.Fatal(err)
	}
	clk.Set(at(t, "2027-06-09T10:00:00Z"))
	d, err = sch.Transition(ctx, d.ID[:8], ActionResume)
	if err != nil || d.Status != ScheduleActive || !d.NextRun.Equal(at(t, "2027-06-10T09:00:00Z")) {
		t.Errorf("resume: %+v %v", d, err)
	}
	if _, err := sch.Advance(ctx, d.ID, at(t, "2027-06-09T09:00:00Z")); !errors.Is(err, ErrStaleSlot) {
		t.Errorf("skipped slot ran: %v", err)
	}
	dueInvariant(t, s)

	// End date: the run after the last slot cancels the schedule.
	clk.Set(at(t, "2027-07-01T00:00:00Z"))
	end := at(t, "2027-07-15T23:59:59Z")
	w := newSchedule(t, sch, "", tools.Weekly, &end)
	if w.EndDate == nil || !w.EndDate.Equal(end) {
		t.Fatalf("%+v", w)
	}
	clk.Set(at(t, "2027-07-08T00:00:00Z"))
	w, _ = sch.Advance(ctx, w.ID, at(t, "2027-07-08T00:00:00Z"))
	if w.Status != ScheduleActive || !w.NextRun.Equal(at(t, "2027-07-15T00:00:00Z")) {
		t.Errorf("%+v", w)
	}
	clk.Set(at(t, "2027-07-15T00:00:00Z"))
	w, _ = sch.Advance(ctx, w.ID, at(t, "2027-07-15T00:00:00Z"))
	if w.Status != ScheduleCancelled {
		t.Errorf("past end: %+v", w)
	}
	if _, err := sch.Advance(ctx, w.ID, w.NextRun); !errors.Is(err, ErrStaleSlot) {
		t.Errorf("advance cancelled: %v", err)
	}
	// Ends while paused: resuming cancels it.
	clk.Set(at(t, "2027-08-01T00:00:00Z"))
	end2 := at(t, "2027-08-20T00:00:00Z")
	p := newSchedule(t, sch, "", tools.Weekly, &end2)
	sch.Transition(ctx, p.ID, ActionPause)
	clk.Set(at(t, "2027-08-25T00:00:00Z"))
	if p, err = sch.Transition(ctx, p.ID, ActionResume); err != nil || p.Status != ScheduleCancelled {
		t.Errorf("resume after end: %+v %v", p, err)
	}
	dueInvariant(t, s)
	if _, err := sch.Create(ctx, tools.Schedule{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Weekly, EndDate: &end2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("end before first run: %v", err)
	}
	for _, bad := range []tools.Schedule{
		{Recipient: "", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Weekly},
		{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: "yearly"},
		{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: "Friday"},
		{Recipient: "bob", Amount: "x", Asset: "USDC", Chain: chains.Base, Interval: tools.Weekly},
		{Recipient: "bob", Amount: "5", Asset: "DOGE", Chain: chains.Base, Interval: tools.Weekly},
		{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: "mars", Interval: tools.Weekly},
	} {
		if _, err := sch.Create(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create(%+v) = %v", bad, err)
		}
	}
}

// Weekday and hourly schedules with the fake clock: slots, a duplicate
// wake-up, downtime across missed slots (one run, then the next slot).
func TestScheduleWeekdayAndHourlySlotsWithFakeClock(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")} // a Sunday
	sch := NewSchedules(s, "agent-w", clk.Now)
	fri := newSchedule(t, sch, "", "friday", nil)
	six := newSchedule(t, sch, "", "every-6-hours", nil)
	hr := newSchedule(t, sch, "", tools.Hourly, nil)
	steps := []struct {
		m     *tools.Schedule
		slots []string
	}{
		{&fri, []string{"2027-02-05T10:00:00Z", "2027-02-12T10:00:00Z", "2027-02-19T10:00:00Z"}},
		{&six, []string{"2027-01-31T16:00:00Z", "2027-01-31T22:00:00Z", "2027-02-01T04:00:00Z"}},
		{&hr, []string{"2027-01-31T11:00:00Z", "2027-01-31T12:00:00Z"}},
	}
	for _, st := range steps {
		for _, slot := range st.slots {
			if !st.m.NextRun.Equal(at(t, slot)) {
				t.Fatalf("%s: next run %s, want %s", st.m.Interval, st.m.NextRun, slot)
			}
			clk.Set(at(t, slot).Add(time.Second))
			next, err := sch.Advance(ctx, st.m.ID, at(t, slot))
			if err != nil {
				t.Fatal(err)
			}
			*st.m = next
			if _, err := sch.Advance(ctx, st.m.ID, at(t, slot)); !errors.Is(err, ErrStaleSlot) {
				t.Errorf("advance twice: %v", err)
			}
		}
		dueInvariant(t, s)
	}
	// Down from Feb 19 to Mar 10 (Wednesday): the friday schedule runs its
	// missed slot once, then next on Friday Mar 12.
	clk.Set(at(t, "2027-03-10T12:00:00Z"))
	next, err := sch.Advance(ctx, fri.ID, at(t, "2027-02-26T10:00:00Z"))
	if err != nil || !next.NextRun.Equal(at(t, "2027-03-12T10:00:00Z")) {
		t.Fatalf("catch-up: %+v %v", next, err)
	}
	dueInvariant(t, s)
}

func TestScheduleCreateIdempotentAndAtomic(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	sch := NewSchedules(s, "agent-a", clk.Now)
	id := "aaaa0000-0000-4000-8000-000000000001"
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sc, err := sch.Create(ctx, tools.Schedule{ID: id, Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Daily}); err != nil || sc.ID != id {
				t.Error(sc, err)
			}
		}()
	}
	wg.Wait()
	if n := len(keys(t, s, TableSchedules)); n != 1 {
		t.Errorf("%d schedules", n)
	}
	if _, err := sch.Create(ctx, tools.Schedule{ID: id, Recipient: "carol", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Daily}); !errors.Is(err, ErrIDReused) {
		t.Errorf("reused id: %v", err)
	}
	dueInvariant(t, s)
	// A due entry that is in the way fails the whole create.
	id2 := "aaaa0000-0000-4000-8000-000000000002"
	next, _ := tools.NextRun(clk.Now(), clk.Now(), tools.Daily)
	s.Apply(ctx, persistence.Put(TableScheduleDue, DueKey(next, "agent-a", id2), []byte("x"), persistence.Absent()))
	if _, err := sch.Create(ctx, tools.Schedule{ID: id2, Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Daily}); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("blocked create: %v", err)
	}
	if _, err := sch.Get(ctx, id2); !errors.Is(err, ErrNotFound) {
		t.Errorf("schedule stored without its index entry: %v", err)
	}
}

// TestScheduleConcurrentTransitions races pauses, resumes, cancels and
// slot advances on a few schedules; the due index must match the
// schedules exactly afterwards, and every reply must be a legal state.
func TestScheduleConcurrentTransitions(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	var ids []string
	for a := range 2 {
		sch := NewSchedules(s, fmt.Sprint("agent-", a), clk.Now)
		for range 3 {
			ids = append(ids, fmt.Sprint(a)+"/"+newSchedule(t, sch, "", tools.Daily, nil).ID)
		}
	}
	var wg sync.WaitGroup
	actions := []string{ActionPause, ActionResume, ActionPause, ActionResume, "advance", ActionCancel}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				agent, id, _ := strings.Cut(ids[(w+i)%len(ids)], "/")
				sch := NewSchedules(s, "agent-"+agent, clk.Now)
				act := actions[(w*7+i)%len(actions)]
				if act == ActionCancel && i < 25 {
					act = ActionPause
				}
				var err error
				if act == "advance" {
					var sc tools.Schedule
					if sc, err = sch.Get(ctx, id); err == nil {
						_, err = sch.Advance(ctx, id, sc.NextRun)
					}
					if errors.Is(err, ErrStaleSlot) {
						err = nil
					}
				} else {
					_, err = sch.Transition(ctx, id, act)
					if errors.Is(err, ErrInvalidTransition) {
						err = nil
					}
				}
				if err != nil {
					t.Error(act, err)
				}
			}
		}()
	}
	wg.Wait()
	dueInvariant(t, s)
	due, err := DueSchedules(ctx, s, at(t, "2100-01-01T00:00:00Z"), 0)
	if err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, r := range keys(t, s, TableSchedules) {
		agent, id, _ := strings.Cut(r, "/")
		sc, _ := NewSchedules(s, agent, nil).Get(ctx, id)
		if sc.Status == ScheduleActive {
			active++
		}
	}
	if len(due) != active {
		t.Errorf("%d due, %d active", len(due), active)
	}
}

func TestDueSchedulesPaging(t *testing.T) {
	s := openStore(t)
	clk := &fakeClock{t: at(t, "2027-01-31T10:00:00Z")}
	var want []string
	for i := range 300 {
		clk.Set(at(t, "2027-01-31T10:00:00Z").Add(time.Duration(i) * time.Second))
		sch := NewSchedules(s, fmt.Sprint("agent-", i%7), clk.Now)
		sc := newSchedule(t, sch, "", tools.Daily, nil)
		want = append(want, sc.ID)
	}
	due, err := DueSchedules(ctx, s, at(t, "2027-02-01T10:00:00Z").Add(299*time.Second), 0)
	if err != nil || len(due) != 300 {
		t.Fatalf("%d due, %v", len(due), err)
	}
	for i, d := range due {
		if d.ScheduleID != want[i] || d.AgentID != fmt.Sprint("agent-", i%7) {
			t.Fatalf("due[%d] = %+v", i, d)
		}
	}
	if due, _ := DueSchedules(ctx, s, at(t, "2027-02-01T10:00:00Z").Add(9*time.Second), 0); len(due) != 10 {
		t.Errorf("until: %d", len(due))
	}
	if due, _ := DueSchedules(ctx, s, at(t, "2100-01-01T00:00:00Z"), 270); len(due) != 270 {
		t.Errorf("limit: %d", len(due))
	}
}
