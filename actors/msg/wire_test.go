package msg_test

import (
	"errors"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/runtime/cluster"
)

// Wire is the codec runtime/cluster takes.
var _ cluster.Codec = msg.Wire{}

// What the cluster reads of the envelopes, through Wire: a request's agent
// id and deadline, a reply's error code, its own refusals; anything else
// is neither.
func TestWireReadsWhatTheClusterNeeds(t *testing.T) {
	c := msg.NewCodec()
	c.RegisterTypes(&ask{}, &answer{})
	w := msg.NewWire(c)
	w.RegisterSentinel("test.gone", errGone)
	if !w.Known("test.gone") || w.Known("test.other") {
		t.Fatal("Known does not follow RegisterSentinel")
	}
	deadline := time.Unix(1700000000, 5)
	req, err := w.EncodeRequest("agent-1", &ask{Who: "bob"}, deadline, "member-7")
	if err != nil {
		t.Fatal(err)
	}
	if id, dl, ok := w.ReadRequest(req); !ok || id != "agent-1" || !dl.Equal(deadline) {
		t.Fatalf("ReadRequest = %q %v %v", id, dl, ok)
	}
	if s := w.RequestSender(req); s != "member-7" {
		t.Fatalf("RequestSender = %q, want member-7", s)
	}
	if s := w.RequestSender(w.Refusal("x", "y")); s != "" {
		t.Fatalf("RequestSender of a reply = %q", s)
	}
	if m, err := w.DecodeRequest(req); err != nil || m.(*ask).Who != "bob" {
		t.Fatalf("DecodeRequest = %+v %v", m, err)
	}
	noDeadline, _ := w.EncodeRequest("agent-2", &ask{}, time.Time{}, "")
	if _, dl, ok := w.ReadRequest(noDeadline); !ok || !dl.IsZero() {
		t.Fatalf("a request without a deadline reads %v %v", dl, ok)
	}
	for _, tc := range []struct {
		name  string
		reply any
		code  string
		is    error
	}{
		{"an answer", w.EncodeReply(&answer{N: 1}, nil), "", nil},
		{"a registered error", w.EncodeReply(nil, errGone), "test.gone", errGone},
		{"a refusal", w.Refusal("cluster.fenced", "member x is fenced"), "cluster.fenced", nil},
	} {
		code, ok := w.ReplyCode(tc.reply)
		if !ok || code != tc.code {
			t.Fatalf("%s: ReplyCode = %q %v, want %q", tc.name, code, ok, tc.code)
		}
		_, err := w.DecodeReply(tc.reply)
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Fatalf("%s: DecodeReply error %v, want %v", tc.name, err, tc.is)
		}
	}
	if _, _, ok := w.ReadRequest(w.Refusal("x", "y")); ok {
		t.Fatal("a reply read as a request")
	}
	if _, ok := w.ReplyCode(req); ok {
		t.Fatal("a request read as a reply")
	}
	if _, err := w.DecodeRequest("not an envelope"); !errors.Is(err, msg.ErrUnregistered) {
		t.Fatalf("DecodeRequest of a string: %v", err)
	}
}
