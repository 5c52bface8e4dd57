//go:build !nodevnet

package httpapi_test

import (
	"context"
	"testing"

	"github.com/veilhq/veil/actors/agent"
)

// TestInboxAcrossTools: the notifications the tools and the scanner raise
// (payment_sent, payment_received, withdrawal) reach the spec's inbox
// endpoints: listed newest first with unreadCount, marked read, deleted.
func TestInboxAcrossTools(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")
	if r, out := e.chat(t, b.ID, e.key, map[string]string{"message": "send 0.01 ETH to alice"}); r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
		t.Fatalf("bob pays = %d %s", r.status, r.body)
	}
	sc := e.newScannerOnce(t)
	if _, err := sc.ScanOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	const to = "0x00000000000000000000000000000000000000b2"
	r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "withdraw everything to " + to})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
		t.Fatalf("withdraw = %d %s", r.status, r.body)
	}
	if in := e.notes(t, b.ID); countType(in, agent.NotePaymentSent) != 1 || in.UnreadCount != 1 {
		t.Fatalf("bob's inbox %+v", in)
	}
	in := e.notes(t, a.ID)
	if countType(in, agent.NotePaymentReceived) != 1 || countType(in, agent.NoteWithdrawal) != 1 || in.UnreadCount != 2 {
		t.Fatalf("alice's inbox %+v", in)
	}
	if in.Notifications[0].Type != agent.NoteWithdrawal || in.Notifications[0].ID <= in.Notifications[1].ID {
		t.Fatalf("not newest first: %+v", in.Notifications)
	}
	if r := e.do("POST", "/agent/"+a.ID+"/notifications/read", e.key, nil); r.status != 200 {
		t.Fatalf("read = %d", r.status)
	}
	if in := e.notes(t, a.ID); in.UnreadCount != 0 || len(in.Notifications) != 2 || !in.Notifications[0].Read {
		t.Fatalf("after read %+v", in)
	}
	if r := e.do("DELETE", "/agent/"+a.ID+"/notifications", e.key, nil); r.status != 200 {
		t.Fatalf("delete = %d", r.status)
	}
	if in := e.notes(t, a.ID); len(in.Notifications) != 0 || in.UnreadCount != 0 {
		t.Fatalf("after delete %+v", in)
	}
	// Deleted notifications stay delivered: scanning again raises nothing.
	if _, err := sc.ScanOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if in := e.notes(t, a.ID); len(in.Notifications) != 0 {
		t.Fatalf("re-notified after delete: %+v", in)
	}
}
