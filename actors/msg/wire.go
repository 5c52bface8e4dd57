package msg

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
)

// Wire is a Codec as runtime/cluster uses it (its Codec interface): the
// cluster moves envelopes without knowing their schema, which lives here,
// with the actors whose messages they carry. cmd/veild builds the codec,
// registers the agents' messages and passes NewWire(codec) to the cluster.
type Wire struct{ c *Codec }

// NewWire adapts c.
func NewWire(c *Codec) Wire { return Wire{c: c} }

// EncodeRequest wraps m in an *AgentRequest from the member sender.
func (w Wire) EncodeRequest(agentID string, m any, deadline time.Time, sender string) (proto.Message, error) {
	req, err := w.c.EncodeRequest(agentID, m, deadline, "")
	if err != nil {
		return nil, err
	}
	req.SenderMember = sender
	return req, nil
}

// RequestSender reads an *AgentRequest's sending member.
func (w Wire) RequestSender(envelope any) string {
	req, _ := envelope.(*AgentRequest)
	return req.GetSenderMember()
}

// ReadRequest reads an *AgentRequest's agent id and deadline.
func (w Wire) ReadRequest(envelope any) (string, time.Time, bool) {
	req, ok := envelope.(*AgentRequest)
	if !ok {
		return "", time.Time{}, false
	}
	var deadline time.Time
	if d := req.GetDeadlineUnixNano(); d > 0 {
		deadline = time.Unix(0, d)
	}
	return req.GetAgentId(), deadline, true
}

// DecodeRequest recovers the message of an *AgentRequest.
func (w Wire) DecodeRequest(envelope any) (any, error) {
	req, ok := envelope.(*AgentRequest)
	if !ok {
		return nil, fmt.Errorf("%w: %T is not an agent request", ErrUnregistered, envelope)
	}
	return w.c.DecodeRequest(req)
}

// EncodeReply wraps an answer or an error in an *AgentReply.
func (w Wire) EncodeReply(v any, err error) proto.Message { return w.c.EncodeReply(v, err) }

// Refusal is an *AgentReply with an error of this code.
func (w Wire) Refusal(code, message string) proto.Message {
	return &AgentReply{Error: &Error{Code: code, Message: message}}
}

// ReplyCode reads an *AgentReply's error code.
func (w Wire) ReplyCode(envelope any) (string, bool) {
	r, ok := envelope.(*AgentReply)
	if !ok {
		return "", false
	}
	return r.GetError().GetCode(), true
}

// DecodeReply recovers the answer or the error of an *AgentReply.
func (w Wire) DecodeReply(envelope any) (any, error) {
	r, ok := envelope.(*AgentReply)
	if !ok {
		return nil, fmt.Errorf("%w: %T is not an agent reply", ErrUnregistered, envelope)
	}
	return w.c.DecodeReply(r)
}

// RegisterSentinel registers an error kind (Codec.RegisterSentinel).
func (w Wire) RegisterSentinel(code string, sentinel error) { w.c.RegisterSentinel(code, sentinel) }

// Known reports whether code is registered.
func (w Wire) Known(code string) bool { return w.c.Known(code) }
