package main

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/client"
)

// invoicesJSON is `veil invoices --json`: the API's page.
type invoicesJSON struct {
	Invoices   []client.Invoice `json:"invoices"`
	NextCursor string           `json:"nextCursor"`
}

// TestInvoicesCommand: `veil invoices AGENT` against a real veild lists
// the invoices made in chat newest first, as a table or the API's page
// with --json; --limit pages and prints how to go on, --cursor goes on,
// --all follows every page; --status and --since filter; bad flags are
// usage errors (exit 2) and an unknown agent exit 3. `veil payments`
// lists a payment made in chat and shows it by id.
func TestInvoicesAndPaymentsCommands(t *testing.T) {
	s := startVeild(t)
	env := veilEnv(t, s)
	key, _ := crypto.GenerateKey()
	ok(t, append(env, "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(key))), "agent", "create", "biller", "--chain", "ethereum")

	if r := ok(t, env, "invoices", "biller"); !strings.Contains(r.stderr, "No invoices for biller.veil") {
		t.Fatalf("empty list: %s", r)
	}
	if p := decode[invoicesJSON](t, ok(t, env, "invoices", "biller", "--json").stdout); p.Invoices == nil || len(p.Invoices) != 0 {
		t.Fatalf("empty --json: %+v", p)
	}
	memos := []string{"logo work", "hosting", "coffee"}
	for _, m := range memos {
		ok(t, env, "chat", "biller", "-m", "create an invoice for 3 USDC for "+m)
	}

	r := ok(t, env, "invoices", "biller")
	for _, m := range memos {
		if !strings.Contains(r.stdout, m) {
			t.Fatalf("table lacks %q:\n%s", m, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "ID") || !strings.Contains(r.stdout, "pending") || strings.Index(r.stdout, "coffee") > strings.Index(r.stdout, "logo work") {
		t.Fatalf("table, newest first:\n%s", r.stdout)
	}

	// Paging: two pages of two and one, the hint names the cursor.
	r = ok(t, env, "invoices", "biller", "--limit", "2")
	if !strings.Contains(r.stderr, "More: veil invoices biller --cursor ") {
		t.Fatalf("no paging hint: %s", r)
	}
	first := decode[invoicesJSON](t, ok(t, env, "invoices", "biller", "--limit", "2", "--json").stdout)
	if len(first.Invoices) != 2 || first.NextCursor == "" || first.Invoices[0].Memo != "coffee" {
		t.Fatalf("first page %+v", first)
	}
	rest := decode[invoicesJSON](t, ok(t, env, "invoices", "biller", "--limit", "2", "--cursor", first.NextCursor, "--json").stdout)
	if len(rest.Invoices) != 1 || rest.NextCursor != "" || rest.Invoices[0].Memo != "logo work" {
		t.Fatalf("second page %+v", rest)
	}
	all := decode[invoicesJSON](t, ok(t, env, "invoices", "biller", "--limit", "1", "--all", "--json").stdout)
	if len(all.Invoices) != 3 || all.NextCursor != "" {
		t.Fatalf("--all %+v", all)
	}

	// Filters.
	if p := decode[invoicesJSON](t, ok(t, env, "invoices", "biller", "--status", "paid", "--json").stdout); len(p.Invoices) != 0 {
		t.Fatalf("paid %+v", p)
	}
	if p := decode[invoicesJSON](t, ok(t, env, "invoices", "biller", "-s", "pending", "--since", "1h", "--json").stdout); len(p.Invoices) != 3 {
		t.Fatalf("pending since 1h %+v", p)
	}
	if p := decode[invoicesJSON](t, ok(t, env, "invoices", "biller", "--since", "2999-01-01", "--json").stdout); len(p.Invoices) != 0 {
		t.Fatalf("since the future %+v", p)
	}

	// Usage errors never reach the server; an unknown agent is exit 3.
	for _, args := range [][]string{
		{"invoices", "biller", "--status", "open"},
		{"invoices", "biller", "--limit", "101"},
		{"invoices", "biller", "--since", "yesterday"},
		{"invoices"},
	} {
		fails(t, env, 2, args...)
	}
	fails(t, env, 1, "invoices", "biller", "--cursor", "nope")
	fails(t, env, 3, "invoices", "nobody")
	if r := ok(t, env, "help", "invoices"); !strings.Contains(r.stdout, "--since") || !strings.Contains(r.stdout, "veil invoices alice") {
		t.Fatalf("help: %s", r.stdout)
	}

	// Payments: none, then the one paid in chat.
	if r := ok(t, env, "payments", "biller"); !strings.Contains(r.stderr, "No payments recorded for biller.veil") {
		t.Fatalf("no payments: %s", r)
	}
	ok(t, append(env, "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(key))), "agent", "create", "payee", "--chain", "ethereum")
	ok(t, env, "chat", "biller", "-m", "send 0.001 ETH to payee")
	pays := decode[paymentsJSON](t, ok(t, env, "payments", "biller", "--chain", "ethereum", "--json").stdout)
	if len(pays.Payments) != 1 || pays.Payments[0].Amount != "0.001" || pays.Payments[0].Recipient.Name == "" {
		t.Fatalf("payments %+v", pays)
	}
	p := pays.Payments[0]
	if r := ok(t, env, "payments", "biller"); !strings.Contains(r.stdout, p.ID) || !strings.Contains(r.stdout, "0.001 ETH") {
		t.Fatalf("payments table:\n%s", r.stdout)
	}
	if r := ok(t, env, "payments", "biller", p.ID); !strings.Contains(r.stdout, "Payment "+p.ID) || !strings.Contains(r.stdout, p.TxHash) {
		t.Fatalf("one payment:\n%s", r.stdout)
	}
	if one := decode[client.PaymentRecord](t, ok(t, env, "payments", "biller", p.ID, "--json").stdout); one.ID != p.ID {
		t.Fatalf("one payment --json %+v", one)
	}
	if l := decode[paymentsJSON](t, ok(t, env, "payments", "biller", "--status", "refused", "--json").stdout); len(l.Payments) != 0 {
		t.Fatalf("refused %+v", l)
	}
	fails(t, env, 2, "payments", "biller", "--status", "sent")

	// Received: the payee finds the payment once veild's scanner records it.
	type receivedJSON struct {
		Payments   []client.ReceivedPayment `json:"payments"`
		NextCursor string                   `json:"nextCursor"`
	}
	if l := decode[receivedJSON](t, ok(t, env, "payments", "biller", "--received", "--json").stdout); l.Payments == nil || len(l.Payments) != 0 {
		t.Fatalf("biller received %+v", l)
	}
	var got receivedJSON
	for deadline := time.Now().Add(90 * time.Second); len(got.Payments) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the payee's received list never showed the payment")
		}
		got = decode[receivedJSON](t, ok(t, env, "payments", "payee", "--received", "--chain", "ethereum", "--json").stdout)
	}
	if rp := got.Payments[0]; len(got.Payments) != 1 || rp.Amount != "0.001" || rp.Asset != "ETH" || rp.TxHash != p.TxHash || rp.Withdrawn {
		t.Fatalf("payee received %+v (sent %s)", got, p.TxHash)
	}
	if r := ok(t, env, "payments", "payee", "--received", "--status", "held"); !strings.Contains(r.stdout, "0.001 ETH") || !strings.Contains(r.stdout, p.TxHash) || !strings.Contains(r.stdout, "RECEIVED") {
		t.Fatalf("received table:\n%s", r)
	}
	if r := ok(t, env, "payments", "payee", "--received", "--status", "withdrawn"); !strings.Contains(r.stderr, "No payments received by payee.veil yet.") {
		t.Fatalf("none withdrawn: %s", r)
	}
	fails(t, env, 2, "payments", "payee", "--received", "--status", "confirmed")
	fails(t, env, 2, "payments", "payee", "--received", p.ID)
	fails(t, env, 2, "payments", "biller", "--chain", "mars")
	fails(t, env, 3, "payments", "biller", "00000000-0000-7000-8000-000000000000")
}

// paymentsJSON is `veil payments --json`: the API's page.
type paymentsJSON struct {
	Payments   []client.PaymentRecord `json:"payments"`
	NextCursor string                 `json:"nextCursor"`
}
