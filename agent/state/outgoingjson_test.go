package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/fakeclock"
	"github.com/veilhq/veil/persistence"
)

// TestOutgoingJSONIsStable pins the bytes of a payment record as stored
// (table outgoing_payments): the record carries its chain typed, parsed
// where it is decoded, and the bytes are what earlier versions wrote and
// a member of the previous version reads, so they read back the same.
func TestOutgoingJSONIsStable(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	amount, err := chains.ParseAmountOf("0.5", 6)
	if err != nil {
		t.Fatal(err)
	}
	rec := tools.OutgoingPayment{ID: "019ac4a0-0000-7000-8000-000000000001", AgentID: "a1", Kind: tools.KindX402,
		Source: tools.PaymentSource{Type: tools.SourceConversation, ID: "c1"}, Chain: chains.Base, Asset: "USDC", Amount: amount,
		Recipient: tools.PaymentRecipient{Name: "shop", Address: "0x00000000000000000000000000000000000000a4"}, IdempotencyKey: "x402/k",
		Status: tools.PaymentPending, Reason: "checking", CreatedAt: at, UpdatedAt: at}
	const want = `{"id":"019ac4a0-0000-7000-8000-000000000001","agentId":"a1","kind":"x402","source":{"type":"conversation","id":"c1"},"chain":"base","asset":"USDC","amount":{"units":"500000","decimals":6},"recipient":{"name":"shop","address":"0x00000000000000000000000000000000000000a4"},"idempotencyKey":"x402/k","status":"pending","reason":"checking","createdAt":"2026-11-27T08:00:00Z","updatedAt":"2026-11-27T08:00:00Z"}`
	got, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("marshal:\n got %s\nwant %s", got, want)
	}
	var back tools.OutgoingPayment
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rec) {
		t.Fatalf("unmarshal:\n got %+v\nwant %+v", back, rec)
	}
}

// A stored record whose chain Veil does not know (a damaged row, one
// written by a version with another chain) is refused where it is decoded,
// with chains.ErrUnknownChain, by every read: nothing below the decode
// holds a record with an unparsed chain. Open does not parse the chain
// (the record is built from a typed one); only a record without one is
// the caller's mistake.
func TestStoredRecordWithUnknownChainIsRefused(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	st := openStore(t)
	s := NewOutgoing(st, "a1", clk.Now)
	p, err := s.Open(ctx, outgoingPayment(t, "k-bad", "0.5"))
	if err != nil {
		t.Fatal(err)
	}
	row, err := st.Get(ctx, TableOutgoing, s.key(p.ID))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(row.Value, []byte(`"chain":"base"`), []byte(`"chain":"bitcoin"`), 1)
	if bytes.Equal(bad, row.Value) {
		t.Fatalf("stored record %s has no chain to damage", row.Value)
	}
	if _, err := st.Apply(ctx, persistence.Put(TableOutgoing, s.key(p.ID), bad, persistence.AtVersion(row.Version))); err != nil {
		t.Fatal(err)
	}
	reads := map[string]func() error{
		"Get":   func() error { _, err := s.Get(ctx, p.ID); return err },
		"ByKey": func() error { _, err := s.ByKey(ctx, chains.Base, "k-bad"); return err },
		"List":  func() error { _, err := s.List(ctx, PaymentFilter{}); return err },
		"Open (a retry of its key)": func() error {
			_, err := s.Open(ctx, outgoingPayment(t, "k-bad", "0.5"))
			return err
		},
	}
	for name, read := range reads {
		if err := read(); !errors.Is(err, chains.ErrUnknownChain) {
			t.Errorf("%s: err = %v, want chains.ErrUnknownChain", name, err)
		}
	}
	noChain := outgoingPayment(t, "k-none", "0.5")
	noChain.Chain = ""
	if _, err := s.Open(ctx, noChain); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a record without a chain: err = %v, want ErrInvalid", err)
	}
}
