package msg_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/veilhq/veil/actors/msg"
)

type ask struct {
	Who  string
	When time.Time
}

type answer struct {
	Items []string
	N     int
}

var errGone = errors.New("gone")

// typedErr is an error callers match with errors.As.
type typedErr struct{ Code int }

func (e *typedErr) Error() string { return fmt.Sprintf("typed %d", e.Code) }

func codec() *msg.Codec {
	c := msg.NewCodec()
	c.RegisterTypes(&ask{}, &answer{}, []answer{}, "")
	c.RegisterKind("typed", func(err error) (string, bool) {
		var te *typedErr
		if errors.As(err, &te) {
			return fmt.Sprint(te.Code), true
		}
		return "", false
	}, func(m string) error {
		var n int
		fmt.Sscan(m, &n)
		return &typedErr{Code: n}
	})
	c.RegisterSentinel("gone", errGone)
	return c
}

// wire sends a reply through a protobuf round trip, as remoting does.
func wire(t *testing.T, r *msg.AgentReply) *msg.AgentReply {
	t.Helper()
	raw, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back msg.AgentReply
	if err := proto.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

func TestValuesKeepTheirTypes(t *testing.T) {
	c := codec()
	when := time.Date(2026, 11, 22, 1, 2, 3, 4, time.UTC)
	for _, v := range []any{
		&answer{Items: []string{"a"}, N: 2},
		[]answer{{N: 1}, {N: 2}},
		[]answer{}, // empty, not null: the API answers [] for an empty list
		"0xabc",
		(*answer)(nil),
		nil,
	} {
		got, err := c.DecodeReply(wire(t, c.EncodeReply(v, nil)))
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("round trip of %#v gave %#v", v, got)
		}
	}
	req, err := c.EncodeRequest("agent-1", &ask{Who: "bob", When: when}, when, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DecodeRequest(req)
	if err != nil || !reflect.DeepEqual(got, &ask{Who: "bob", When: when}) || req.GetDeadlineUnixNano() != when.UnixNano() {
		t.Fatalf("request round trip: %#v %v", got, err)
	}
}

func TestUnregisteredTypesFailLoudly(t *testing.T) {
	c := codec()
	if _, err := c.EncodeRequest("a", struct{}{}, time.Time{}, ""); !errors.Is(err, msg.ErrUnregistered) {
		t.Fatalf("encode unregistered: %v", err)
	}
	if _, err := c.DecodeRequest(&msg.AgentRequest{Type: "*main.unknown", Payload: []byte("{}")}); !errors.Is(err, msg.ErrUnregistered) {
		t.Fatalf("decode unregistered: %v", err)
	}
	if _, err := c.DecodeRequest(&msg.AgentRequest{Type: "*msg_test.ask", Payload: []byte("{")}); !errors.Is(err, msg.ErrMalformed) {
		t.Fatalf("decode malformed: %v", err)
	}
	// An unregistered answer becomes an error the caller sees, not a value.
	if _, err := c.DecodeReply(c.EncodeReply(42, nil)); err == nil {
		t.Fatal("an unregistered answer decoded")
	}
}

func TestErrorsKeepTheirKind(t *testing.T) {
	c := codec()
	tests := []struct {
		name  string
		in    error
		check func(error) bool
		text  string
	}{
		{"sentinel wrapped", fmt.Errorf("agent x: %w", errGone), func(e error) bool { return errors.Is(e, errGone) }, "agent x: gone"},
		{"typed", fmt.Errorf("ctx: %w", &typedErr{Code: 7}), func(e error) bool {
			var te *typedErr
			return errors.As(e, &te) && te.Code == 7
		}, "typed 7"},
		{"unknown", errors.New("disk on fire"), func(e error) bool { return !errors.Is(e, errGone) }, "disk on fire"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.DecodeReply(wire(t, c.EncodeReply(nil, tt.in)))
			if err == nil || !tt.check(err) || err.Error() != tt.text {
				t.Fatalf("got %v (%T), want text %q and the kind kept", err, err, tt.text)
			}
		})
	}
}

// An answer registered with RegisterSendAs goes out under the earlier name
// (which an older member knows), decodes back into its own type on this
// version, and a payload under its own name still decodes.
func TestSendAsUsesTheEarlierName(t *testing.T) {
	c := codec()
	c.RegisterSendAs("*old.answer", &answer{})
	sent := &answer{Items: []string{"hi"}, N: 2}
	r := c.EncodeReply(sent, nil)
	if r.Type != "*old.answer" {
		t.Fatalf("sent as %q, want *old.answer", r.Type)
	}
	got, err := c.DecodeReply(r)
	if err != nil || !reflect.DeepEqual(got, sent) {
		t.Fatalf("decoded %#v, %v; sent %#v", got, err, sent)
	}
	got, err = c.DecodeReply(&msg.AgentReply{Type: "*msg_test.answer", Payload: []byte(`{"Items":["hi"],"N":2}`)})
	if err != nil || !reflect.DeepEqual(got, sent) {
		t.Fatalf("own name decoded %#v, %v", got, err)
	}
	// A type sent under another name stays one type: a nil pointer too.
	if r := c.EncodeReply((*answer)(nil), nil); r.Type != "*old.answer" {
		t.Fatalf("nil answer sent as %q", r.Type)
	}
}
