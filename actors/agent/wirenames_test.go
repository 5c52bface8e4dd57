package agent

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/client"
)

var updateWireNames = flag.Bool("update-wire-names", false, "rewrite testdata/wire-names.golden")

// The wire names of messages, answers and error codes are what a member of
// another version must share to understand a request during a rolling
// upgrade (docs/operations.md). A Go type renamed or moved changes its
// name: this test fails then, so the change is deliberate. Keep the old
// name decodable with an entry in earlierReplyNames (or a message alias),
// then run `go test ./actors/agent -run TestWireNamesArePinned
// -update-wire-names` to accept the new list.
func TestWireNamesArePinned(t *testing.T) {
	c := msg.NewCodec()
	RegisterWire(c)
	types, codes := c.Names()
	var b strings.Builder
	for _, n := range types {
		b.WriteString("type " + n + "\n")
	}
	for _, n := range codes {
		b.WriteString("error " + n + "\n")
	}
	path := filepath.Join("testdata", "wire-names.golden")
	if *updateWireNames {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the wire names changed (a member of the previous version would not read them):\n got:\n%s\nwant:\n%s", got, want)
	}
}

// An answer sent by a previous-version member under its old name decodes
// into this version's type with every field.
func TestEarlierReplyNamesDecode(t *testing.T) {
	c := msg.NewCodec()
	RegisterWire(c)
	decided := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		sent any
	}{
		{"*agent.ApprovalDecision", &client.ApprovalDecision{ID: "ap1", Status: "approved", TxHash: "0xab"}},
		{"*agent.ApprovalView", &client.Approval{ID: "ap1", AgentID: "a1", Status: "denied", Kind: "payment", Chain: "base",
			Asset: "USDC", Amount: "5", Recipient: "bob.veil", PayTo: "0x1", Reasons: []string{"over the daily budget"},
			CreatedAt: decided, ExpiresAt: decided, DecidedAt: &decided}},
		{"[]agent.ApprovalView", []client.Approval{{ID: "ap2", Reasons: []string{}}}},
		{"*agent.Inbox", &client.Inbox{Notifications: []client.Notification{{ID: 3, Type: "payment_sent", Title: "t", Body: "b", CreatedAt: decided}}, UnreadCount: 1}},
		{"*agent.Notification", &client.Notification{ID: 4, Type: "withdrawal", Read: true, CreatedAt: decided}},
		{"*agent.Status", &client.AgentStatus{Balance: "1.5", Tokens: map[string]string{"USDC": "2"}, PendingInvoices: 1, Address: "0x2", MetaAddress: "st:eth:0x3", Chain: "base"}},
	} {
		body, err := json.Marshal(tc.sent)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.DecodeReply(&msg.AgentReply{Type: tc.name, Payload: body})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.sent) {
			t.Errorf("%s: decoded %#v, sent %#v", tc.name, got, tc.sent)
		}
	}
}

// The six renamed answers go out under their earlier names, which
// d69a0d6 and earlier decode (they know no other) and this version decodes
// back into the client's types: members of both versions read each other's
// answers during a rolling upgrade.
func TestRenamedAnswersAreSentUnderTheEarlierNames(t *testing.T) {
	c := msg.NewCodec()
	RegisterWire(c)
	for name, proto := range earlierReplyNames {
		r := c.EncodeReply(proto, nil)
		if r.Error != nil || r.Type != name {
			t.Errorf("%T sent as %q (error %v), want %q", proto, r.Type, r.Error, name)
			continue
		}
		got, err := c.DecodeReply(r)
		if err != nil || reflect.TypeOf(got) != reflect.TypeOf(proto) {
			t.Errorf("%s decoded as %T, %v; want %T", name, got, err, proto)
		}
	}
}
