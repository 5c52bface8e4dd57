//go:build !nodevnet

package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// TestInvoiceExpiry: an invoice with an expiry shows it in GET
// /invoice/:id and on the pay page; once it has passed, POST /paid is a
// 409 that names the expiry and changes nothing, and the pay page and its
// status say expired and offer no way to pay.
func TestInvoiceExpiry(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return fmt.Sprintf("0x%040x", time.Now().UnixNano()), []byte{1}, nil
	}
	expires := e.clock.Now().Add(time.Hour).UTC().Truncate(time.Second)
	inv, err := state.NewInvoices(e.store, a.ID, e.clock.Now, "alice", e.url, gen).Create(context.Background(),
		tools.Invoice{Invoice: client.Invoice{Amount: "0.01", Asset: "ETH", Memo: "valid an hour"}, Chain: chains.Ethereum, ExpiresAt: &expires}, "")
	if err != nil {
		t.Fatal(err)
	}

	var got struct {
		Status    string     `json:"status"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	r := e.do("GET", "/invoice/"+inv.ID, e.key, nil)
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 || got.ExpiresAt == nil || !got.ExpiresAt.Equal(expires) {
		t.Fatalf("GET /invoice = %d %s", r.status, r.body)
	}
	page := e.do("GET", "/pay/"+inv.ID, "", nil)
	if !strings.Contains(string(page.body), expires.Format("2006-01-02 15:04 UTC")) || !strings.Contains(string(page.body), `data-status="pending"`) {
		t.Fatalf("pending page lacks the expiry: %s", page.body)
	}

	e.clock.Advance(2 * time.Hour)
	r = e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, map[string]string{"txHash": "0x" + strings.Repeat("ab", 32)})
	msg, status := r.errorBody(t)
	if status != 409 || !strings.Contains(msg, "expired at "+expires.Format(time.RFC3339)) || !strings.Contains(msg, "new invoice") {
		t.Fatalf("POST /paid on an expired invoice = %d %q", status, msg)
	}
	r = e.do("GET", "/invoice/"+inv.ID, e.key, nil)
	if err := json.Unmarshal(r.body, &got); err != nil || got.Status != "pending" {
		t.Fatalf("after the refusal: %s", r.body)
	}
	page = e.do("GET", "/pay/"+inv.ID, "", nil)
	body := string(page.body)
	if !strings.Contains(body, `data-status="expired"`) || !strings.Contains(body, `<strong id="status">expired</strong>`) ||
		!strings.Contains(body, `<section id="pending" hidden>`) || !strings.Contains(body, `<section id="expired">`) {
		t.Fatalf("expired page: %s", body)
	}
	var v struct {
		Expired   bool       `json:"expired"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	r = e.do("GET", "/pay/"+inv.ID+"/status", "", nil)
	if err := json.Unmarshal(r.body, &v); err != nil || !v.Expired || v.ExpiresAt == nil {
		t.Fatalf("status of an expired invoice: %s", r.body)
	}
}
