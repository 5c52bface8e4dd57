package httpapi_test

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/httpapi"
)

// wired passes every request and answer through the cluster wire codec
// (protobuf envelopes, JSON payloads, error kinds), as a request to an agent
// on another member does. The API tests run through it, so a message, an
// answer or an error that would not survive the crossing fails them.
type wired struct {
	next  httpapi.Agents
	codec *msg.Codec
}

func wire(next httpapi.Agents) httpapi.Agents {
	c := msg.NewCodec()
	agent.RegisterWire(c)
	return &wired{next: next, codec: c}
}

func (w *wired) Request(ctx context.Context, id string, m any) (any, error) {
	dl, _ := ctx.Deadline()
	req, err := w.codec.EncodeRequest(id, m, dl, "")
	if err != nil {
		return nil, err
	}
	var back msg.AgentRequest
	if err := roundTrip(req, &back); err != nil {
		return nil, err
	}
	got, err := w.codec.DecodeRequest(&back)
	if err != nil {
		return nil, err
	}
	if d := req.GetDeadlineUnixNano(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Unix(0, d))
		defer cancel()
	}
	v, err := w.next.Request(ctx, id, got)
	var reply msg.AgentReply
	if err := roundTrip(w.codec.EncodeReply(v, err), &reply); err != nil {
		return nil, err
	}
	return w.codec.DecodeReply(&reply)
}

// roundTrip marshals in and unmarshals it into out, as remoting does.
func roundTrip(in, out proto.Message) error {
	raw, err := proto.Marshal(in)
	if err != nil {
		return err
	}
	return proto.Unmarshal(raw, out)
}
