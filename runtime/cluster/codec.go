package cluster

import (
	"time"

	"google.golang.org/protobuf/proto"
)

// Codec is what the cluster needs of the wire format. The envelopes that
// cross members are protobuf messages (protoactor's remoting carries
// proto.Message), and their schema and the payloads' encoding belong to
// the actors whose messages they carry: actors/msg implements Codec
// (msg.NewWire) and cmd/veild passes it in Config. The cluster only moves
// envelopes, reads the agent id and deadline of a request and the error
// code of a reply, and builds its own refusals; it never imports the
// actors' layer (internal/layering, docs/architecture.md).
type Codec interface {
	// EncodeRequest wraps message for the agent with this id; deadline is
	// the caller's (zero: the hosting member's default), sender the
	// sending member's cluster id.
	EncodeRequest(agentID string, message any, deadline time.Time, sender string) (proto.Message, error)
	// ReadRequest reports whether envelope is a request, and its agent id
	// and deadline (zero when it has none).
	ReadRequest(envelope any) (agentID string, deadline time.Time, ok bool)
	// RequestSender is the cluster id of the member that sent a request
	// envelope ("" from a member of an earlier version).
	RequestSender(envelope any) string
	// DecodeRequest recovers the Go message of a request envelope.
	DecodeRequest(envelope any) (any, error)
	// EncodeReply wraps an agent's answer, or its error with its kind.
	EncodeReply(v any, err error) proto.Message
	// Refusal is a reply with an error of this code and text: what a
	// member answers for a request it refuses unprocessed.
	Refusal(code, message string) proto.Message
	// ReplyCode reports whether envelope is a reply, and the code of its
	// error ("" for an answer or an error of no registered kind).
	ReplyCode(envelope any) (code string, ok bool)
	// DecodeReply recovers the answer or the error of a reply envelope.
	DecodeReply(envelope any) (any, error)
	// RegisterSentinel makes errors.Is(err, sentinel) hold on the caller's
	// side for an error that matched it on the hosting member's; Known
	// reports whether a code is registered.
	RegisterSentinel(code string, sentinel error)
	Known(code string) bool
}
