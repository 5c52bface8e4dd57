package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/fakeclock"
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
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
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
		got, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: c.amount, Asset: c.asset, Memo: fmt.Sprintf(" job %d ", i)}, Chain: c.chain}, "")
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
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	var gens atomic.Int64
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return fmt.Sprintf("0x%040x", gens.Add(1)), []byte{1, 2, 3}, nil
	}
	inv := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", gen)
	bad := []tools.Invoice{
		{Invoice: client.Invoice{Amount: "1", Asset: "BTC", Memo: "x"}, Chain: "bitcoin"},
		{Invoice: client.Invoice{Amount: "1", Asset: "XLM", Memo: "x"}, Chain: chains.Base},
		{Invoice: client.Invoice{Amount: "0", Asset: "ETH", Memo: "x"}, Chain: chains.Base},
		{Invoice: client.Invoice{Amount: "1.0000001", Asset: "USDC", Memo: "x"}, Chain: chains.Base},
		{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: "  "}, Chain: chains.Base},
		{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: strings.Repeat("m", tools.MaxMemoLen+1)}, Chain: chains.Base},
		{Invoice: client.Invoice{ID: "not-a-uuid", Amount: "1", Asset: "ETH", Memo: "x"}, Chain: chains.Base},
		// The store chooses ids: a preset one (even a valid UUID) is refused.
		{Invoice: client.Invoice{ID: "3f2a0000-0000-4000-8000-000000000001", Amount: "1", Asset: "ETH", Memo: "x"}, Chain: chains.Base},
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
	if _, err := failing.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: "x"}, Chain: chains.Base}, ""); err == nil || !strings.Contains(err.Error(), "enclave down") {
		t.Errorf("generator failure: %v", err)
	}

	// An idempotency key: the same create returns the stored invoice, also
	// under concurrency; the key with other terms is refused.
	want := tools.Invoice{Invoice: client.Invoice{Amount: "5", Asset: "USDC", Memo: "logo"}, Chain: chains.Base}
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
	if _, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "6", Asset: "USDC", Memo: "logo"}, Chain: chains.Base}, "create_invoice/k1"); !errors.Is(err, ErrIDReused) {
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
	if _, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: "x"}, Chain: chains.Base}, "create_invoice/k2"); !errors.Is(err, persistence.ErrConflict) {
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
	req := tools.Invoice{Invoice: client.Invoice{Amount: "5", Asset: "USDC", Memo: "logo"}, Chain: chains.Base}
	seen := map[string]bool{}
	for range 4 {
		s := openStore(t)
		clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
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
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	old := uuid.NewSHA1(uuid.NameSpaceOID, []byte("veil/tools/create_invoice/agent-a/k")).String()
	rec := InvoiceRecord{Invoice: tools.Invoice{Invoice: client.Invoice{ID: old, Amount: "5", Asset: "USDC", Memo: "logo", Status: InvoicePending}, AgentID: "agent-a", Chain: chains.Base, PayTo: "0x01"}, AgentID: "agent-a"}
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
