//go:build !nodevnet

package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// fundedConnector is a Stellar or Solana connector with its devnet's faucet.
type fundedConnector interface {
	chains.Connector
	Fund(ctx context.Context, address string) (chains.TxResult, error)
}

// ledgerDevnet starts a fresh Stellar or Solana devnet and answers how
// a Veil server connects to it (its own store and signer).
func ledgerDevnet(t *testing.T, c chains.ID) func(st persistence.Store, signer chains.Signer) (fundedConnector, error) {
	t.Helper()
	ctx := context.Background()
	switch c {
	case chains.Stellar:
		dev, err := stellardev.Start(ctx, stellardev.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dev.Close() })
		return func(st persistence.Store, signer chains.Signer) (fundedConnector, error) {
			return stellar.New(ctx, dev.Config(), stellar.Options{Store: st, Signer: signer})
		}
	default:
		dev, err := solanadev.Start(ctx, solanadev.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dev.Close() })
		return func(st persistence.Store, signer chains.Signer) (fundedConnector, error) {
			return solana.New(ctx, dev.Config(), solana.Options{Store: st, Signer: signer})
		}
	}
}

// newLedgerServer is one Veil server (its own store and enclave root) on
// a Stellar or Solana devnet (ledgerDevnet); two on one devnet can pay
// each other's invoices. Stellar's connector scans plain transfers (its
// scanner settles an invoice); Solana's does not, so an invoice there
// settles when the payer names the transaction (POST /pay/:id/paid).
func newLedgerServer(t *testing.T, c chains.ID, rootByte byte, connect func(persistence.Store, chains.Signer) (fundedConnector, error)) (*moneyEnv, fundedConnector) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var root [32]byte
	root[0] = rootByte
	prov, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := connect(st, enclave.WithPolicy(prov, policy.NewStore(st, time.Now)))
	if err != nil {
		t.Fatal(err)
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	var handler http.Handler = http.NotFoundHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	ref, err := chainactor.Start(ctx, system, conn, chainactor.Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var models llm.Config
	h := host.NewHost(system, agent.Loader(agent.Deps{
		Store: st, Log: quiet, Keys: agent.EnclaveKeys(prov), Chains: agent.ChainMap{c: ref},
		Models:    func(p, key string) (llms.Model, error) { return models.Model(llm.Provider(p), key) },
		PublicURL: srv.URL,
		// pay_invoice tells the invoice's server (this test server, on
		// loopback) the transaction.
		HTTP: tools.NewWebClient(tools.WebOptions{AllowPrivate: true}),
	}), host.HostConfig{PassivateAfter: time.Minute}, quiet, nil)
	api := httpapi.New(httpapi.Config{Store: st, Agents: wire(h), Logger: quiet, TEE: prov})
	handler = api
	key, err := apikey.Bootstrap(ctx, st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		_ = h.Stop(context.Background())
		ref.Stop()
		system.Shutdown()
		_ = st.Close()
	})
	return &moneyEnv{env: &env{t: t, url: srv.URL, key: key, store: st, host: h, api: api}, ref: ref, enclave: prov}, conn
}

// TestPayInvoiceOnStellarAndSolana: on the Stellar and Solana devnets an
// agent pays another agent's invoice with pay_invoice: the transfer
// creates the invoice's one-time account with exactly its amount; on
// Stellar the payee's scanner sees it, on Solana the payer names the
// transaction to the invoice's server, which verifies it on chain (POST
// /pay/:id/paid, through the agent's web client); the invoice settles once
// with one invoice_paid, the payer gets one payment_sent, and paying
// again moves nothing. A claim with a transaction that paid something
// else is refused; an invoice for an amount a new account cannot hold is
// not created.
func TestPayInvoiceOnStellarAndSolana(t *testing.T) {
	for _, tc := range []struct {
		chain            chains.ID
		invoice, amount  string
		asset            string
		tooSmall, reason string
		// scans: the payee's Veil sees the plain transfer (Stellar's
		// scanner); otherwise the payer names the transaction (Solana).
		scans bool
	}{
		{chains.Stellar, "create an invoice for 2 XLM for the design work", "2", "XLM", "create an invoice for 0.5 XLM for a sticker", "at least 1 XLM", true},
		{chains.Solana, "create an invoice for 0.25 SOL for the design work", "0.25", "SOL", "create an invoice for 0.0001 SOL for a sticker", "a new Solana account must hold", false},
	} {
		t.Run(string(tc.chain), func(t *testing.T) {
			ctx := context.Background()
			e, conn := newLedgerServer(t, tc.chain, 21, ledgerDevnet(t, tc.chain))
			payer := e.create(t, newEdOwner(t, string(tc.chain)), "payer", string(tc.chain))
			payee := e.create(t, newEdOwner(t, string(tc.chain)), "payee", string(tc.chain))
			if _, err := conn.Fund(ctx, payer.Address); err != nil {
				t.Fatal(err)
			}
			if tc.scans {
				e.startScanner(t)
			}
			inv := e.createInvoice(t, payee.ID, tc.invoice)
			name, status, detail := e.tool(t, payer.ID, "pay invoice "+inv.ID)
			var paid struct{ Invoice, TxHash, Amount, Asset, PayTo, Settlement string }
			if err := json.Unmarshal([]byte(detail), &paid); name != "pay_invoice" || status != "success" || err != nil ||
				paid.Invoice != inv.ID || paid.Amount != tc.amount || paid.Asset != tc.asset || paid.PayTo != inv.PayTo || tc.scans != (paid.Settlement == "") {
				t.Fatalf("pay invoice: %s %s %s", name, status, detail)
			}
			if tc.scans {
				e.waitPaid(t, inv.ID)
			} else if !strings.Contains(paid.Settlement, "the invoice is paid") {
				t.Fatalf("the payee's server was not told: %s", paid.Settlement)
			}
			var got invoiceJSON
			e.do("GET", "/invoice/"+inv.ID, e.key, nil).decode(t, &got)
			if got.Status != "paid" || got.TxHash == nil || *got.TxHash != paid.TxHash {
				t.Fatalf("the payee's invoice after the payment: %+v", got)
			}
			// Exactly the invoice's amount reached its address.
			transfers, err := conn.(chains.PaymentVerifier).TransfersIn(ctx, paid.TxHash)
			if err != nil {
				t.Fatal(err)
			}
			var sent []string
			for _, tr := range transfers {
				if tr.To == inv.PayTo {
					sent = append(sent, tr.Amount+" "+tr.Asset)
				}
			}
			if strings.Join(sent, ",") != tc.amount+" "+tc.asset {
				t.Fatalf("the transaction sent %v to the invoice's address, want %s %s", sent, tc.amount, tc.asset)
			}
			// Paying again moves nothing; the same claim again is the
			// paid invoice.
			e.steps(t, payer.ID, []step{{"pay invoice " + inv.ID, "pay_invoice", "error", "already paid"}})
			if r := e.do("POST", "/pay/"+inv.ID+"/paid", "", map[string]string{"txHash": paid.TxHash}); r.status != 200 {
				t.Fatalf("the claim again = %d %s", r.status, r.body)
			}
			// A transaction that paid something else settles nothing.
			other := e.createInvoice(t, payee.ID, tc.invoice)
			msg, code := e.do("POST", "/pay/"+other.ID+"/paid", "", map[string]string{"txHash": paid.TxHash}).errorBody(t)
			if code != 400 || !strings.Contains(msg, "pays nothing") {
				t.Fatalf("a claim with another invoice's transaction = %d %q", code, msg)
			}
			if msg, code := e.do("POST", "/pay/"+inv.ID+"/paid", "", map[string]string{"txHash": strings.Repeat("1", 64)}).errorBody(t); code != 409 {
				t.Fatalf("another hash on the paid invoice = %d %q", code, msg)
			}
			e.do("GET", "/invoice/"+other.ID, e.key, nil).decode(t, &got)
			if got.Status != "pending" {
				t.Fatalf("the other invoice: %+v", got)
			}
			// An amount a new account cannot hold: no such invoice is made
			// (pay_invoice refuses one another server made: agent/tools).
			e.steps(t, payee.ID, []step{{tc.tooSmall, "create_invoice", "error", tc.reason}})

			in := e.notes(t, payee.ID)
			if countType(in, agent.NoteInvoicePaid) != 1 {
				t.Fatalf("payee notifications %+v", in.Notifications)
			}
			if n := countType(e.notes(t, payer.ID), "payment_sent"); n != 1 {
				t.Fatalf("payer has %d payment_sent", n)
			}
		})
	}
}

// TestPayForeignSolanaInvoiceClaim: an agent pays another Veil server's
// Solana invoice by its link. The first claim does not reach that server
// (it answers 503): the payment stands, the answer says how the invoice
// still settles, and the invoice stays pending there. Paying again sends
// nothing (the same transaction, under the invoice's key) and its claim
// settles the invoice once.
func TestPayForeignSolanaInvoiceClaim(t *testing.T) {
	ctx := context.Background()
	connect := ledgerDevnet(t, chains.Solana)
	e, conn := newLedgerServer(t, chains.Solana, 21, connect)
	far, _ := newLedgerServer(t, chains.Solana, 22, connect)
	// far behind a front that refuses the first claim.
	var refused atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && refused.CompareAndSwap(false, true) {
			http.Error(w, `{"message":"down for maintenance","statusCode":503}`, http.StatusServiceUnavailable)
			return
		}
		far.api.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	payer := e.create(t, newEdOwner(t, "solana"), "payer", "solana")
	payee := far.create(t, newEdOwner(t, "solana"), "payee", "solana")
	if _, err := conn.Fund(ctx, payer.Address); err != nil {
		t.Fatal(err)
	}
	inv := far.createInvoice(t, payee.ID, "create an invoice for 0.3 SOL for the translation")
	link := front.URL + "/pay/" + inv.ID
	pay := func() (txHash, settlement string) {
		t.Helper()
		name, status, detail := e.tool(t, payer.ID, "pay "+link)
		var d struct{ TxHash, Settlement string }
		if err := json.Unmarshal([]byte(detail), &d); name != "pay_invoice" || status != "success" || err != nil || d.TxHash == "" {
			t.Fatalf("pay %s: %s %s %s", link, name, status, detail)
		}
		return d.TxHash, d.Settlement
	}
	first, settlement := pay()
	if !strings.Contains(settlement, "was not told") || !strings.Contains(settlement, first) || !strings.Contains(settlement, link+"/paid") {
		t.Fatalf("a failed claim: %q", settlement)
	}
	if s := far.invoiceStatus(t, inv.ID); s != "pending" {
		t.Fatalf("the invoice is %s before any claim reached its server", s)
	}
	again, settlement := pay()
	if again != first || !strings.Contains(settlement, "the invoice is paid") {
		t.Fatalf("paying again: %s (first %s), %q", again, first, settlement)
	}
	if s := far.invoiceStatus(t, inv.ID); s != "paid" {
		t.Fatalf("the invoice is %s after the claim", s)
	}
	if n := countType(far.notes(t, payee.ID), agent.NoteInvoicePaid); n != 1 {
		t.Fatalf("%d invoice_paid", n)
	}
	if n := countType(e.notes(t, payer.ID), "payment_sent"); n != 1 {
		t.Fatalf("%d payment_sent", n)
	}
	e.steps(t, payer.ID, []step{{"pay " + link, "pay_invoice", "error", "already paid"}})
}
