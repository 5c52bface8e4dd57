package msg

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"
)

// Errors of the codec itself. Match them with errors.Is.
var (
	// ErrUnregistered reports a message or reply type the codec does not
	// know: a programming error (register it), never a client's fault.
	ErrUnregistered = errors.New("msg: type not registered for the wire")
	// ErrMalformed reports a payload that does not decode.
	ErrMalformed = errors.New("msg: malformed payload")
)

// Codec turns the agent actors' Go messages, answers and errors into the
// protobuf envelopes that cross members, and back. Messages keep their Go
// types on both sides, so the HTTP layer and the agent actor are the same
// code whether the agent is local or on another member.
//
// A Codec is built once at start (Register*) and then only read, so it is
// safe for concurrent use without locks.
type Codec struct {
	types  map[string]reflect.Type
	sendAs map[reflect.Type]string // types sent under an earlier name
	errs   []errorKind
	byCode map[string]int // code → index in errs
}

// errorKind is one error the wire preserves: match recognises it on the
// hosting member, rebuild recreates it on the caller's.
type errorKind struct {
	code    string
	encode  func(error) (message string, ok bool)
	rebuild func(message string) error
}

// NewCodec returns an empty codec.
func NewCodec() *Codec {
	return &Codec{types: map[string]reflect.Type{}, sendAs: map[reflect.Type]string{}, byCode: map[string]int{}}
}

// RegisterTypes registers the dynamic types of the prototypes (a zero
// value of each message or answer type: &agent.Chat{}, []agent.Message{},
// "" for string answers).
func (c *Codec) RegisterTypes(protos ...any) {
	for _, p := range protos {
		t := reflect.TypeOf(p)
		c.types[t.String()] = t
	}
}

// RegisterAlias makes the codec decode a payload named name as proto's
// type: the name an earlier version gave the same JSON form, so a member
// reads the answers of a member one version older during a rolling
// upgrade. Encoding keeps the type's own name. Registering a name twice
// for different types panics.
func (c *Codec) RegisterAlias(name string, proto any) {
	t := reflect.TypeOf(proto)
	if old, dup := c.types[name]; dup && old != t {
		panic("msg: wire name registered for two types: " + name)
	}
	c.types[name] = t
}

// RegisterSendAs is RegisterAlias that also sends proto's type under the
// earlier name: for a renamed answer whose earlier name every supported
// version decodes (this one through the alias, the older ones natively),
// while the oldest supported version does not know the new name. Once no
// supported version lacks the new name, drop the call and the type goes
// out under its own name again.
func (c *Codec) RegisterSendAs(name string, proto any) {
	c.RegisterAlias(name, proto)
	c.sendAs[reflect.TypeOf(proto)] = name
}

// Names is the codec's wire vocabulary: the type names it decodes (aliases
// included) and the error codes it keeps, each sorted. A member of another
// version understands a message only if both sides have its name.
func (c *Codec) Names() (types, codes []string) {
	for n := range c.types {
		types = append(types, n)
	}
	for n := range c.byCode {
		codes = append(codes, n)
	}
	slices.Sort(types)
	slices.Sort(codes)
	return types, codes
}

// RegisterSentinel makes errors.Is(err, sentinel) hold on the caller's side
// for an error that matched it on the host's; the error's text is kept.
func (c *Codec) RegisterSentinel(code string, sentinel error) {
	c.RegisterKind(code, func(err error) (string, bool) {
		if errors.Is(err, sentinel) {
			return err.Error(), true
		}
		return "", false
	}, func(m string) error { return &remoteError{msg: m, kind: sentinel} })
}

// Known reports whether an error code is registered.
func (c *Codec) Known(code string) bool {
	_, ok := c.byCode[code]
	return ok
}

// RegisterKind registers an error kind for typed errors that callers match
// with errors.As: encode recognises one and says what to carry (its text,
// or its fields as JSON), rebuild recreates it from that. Kinds are tried in
// registration order: register the more specific first.
func (c *Codec) RegisterKind(code string, encode func(error) (string, bool), rebuild func(message string) error) {
	if _, dup := c.byCode[code]; dup {
		panic("msg: error code registered twice: " + code)
	}
	c.byCode[code] = len(c.errs)
	c.errs = append(c.errs, errorKind{code: code, encode: encode, rebuild: rebuild})
}

// remoteError is an error rebuilt from the wire: its text is the host's,
// and it unwraps to the registered sentinel.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

// EncodeRequest wraps msg for the agent with this id.
func (c *Codec) EncodeRequest(agentID string, m any, deadline time.Time, requestID string) (*AgentRequest, error) {
	name, body, err := c.encode(m)
	if err != nil {
		return nil, err
	}
	req := &AgentRequest{AgentId: agentID, Type: name, Payload: body, RequestId: requestID}
	if !deadline.IsZero() {
		req.DeadlineUnixNano = deadline.UnixNano()
	}
	return req, nil
}

// DecodeRequest recovers the Go message of req.
func (c *Codec) DecodeRequest(req *AgentRequest) (any, error) {
	return c.decode(req.GetType(), req.GetPayload())
}

// EncodeReply wraps an agent's answer. An error the codec knows keeps its
// kind; any other keeps only its text, under code "".
func (c *Codec) EncodeReply(v any, err error) *AgentReply {
	if err != nil {
		return &AgentReply{Error: c.EncodeError(err)}
	}
	name, body, encErr := c.encode(v)
	if encErr != nil {
		return &AgentReply{Error: &Error{Message: encErr.Error()}}
	}
	return &AgentReply{Type: name, Payload: body}
}

// EncodeError classifies err by the first registered kind it matches.
func (c *Codec) EncodeError(err error) *Error {
	for i := range c.errs {
		if m, ok := c.errs[i].encode(err); ok {
			return &Error{Code: c.errs[i].code, Message: m}
		}
	}
	return &Error{Message: err.Error()}
}

// DecodeReply recovers the answer or the error of r.
func (c *Codec) DecodeReply(r *AgentReply) (any, error) {
	if e := r.GetError(); e != nil {
		return nil, c.DecodeError(e)
	}
	return c.decode(r.GetType(), r.GetPayload())
}

// DecodeError rebuilds a wire error; an unknown code is a plain error.
func (c *Codec) DecodeError(e *Error) error {
	if i, ok := c.byCode[e.GetCode()]; ok {
		return c.errs[i].rebuild(e.GetMessage())
	}
	return errors.New(e.GetMessage())
}

// nilType names an answer with no value (a handler that returns only an
// error, nil on success).
const nilType = "nil"

func (c *Codec) encode(v any) (string, []byte, error) {
	if v == nil {
		return nilType, nil, nil
	}
	t := reflect.TypeOf(v)
	name := t.String()
	if c.types[name] != t {
		return "", nil, fmt.Errorf("%w: %s", ErrUnregistered, name)
	}
	if earlier, ok := c.sendAs[t]; ok {
		name = earlier
	}
	if t.Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
		return name, nil, nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return "", nil, fmt.Errorf("msg: encode %s: %w", name, err)
	}
	return name, body, nil
}

func (c *Codec) decode(name string, body []byte) (any, error) {
	if name == nilType {
		return nil, nil
	}
	t, ok := c.types[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnregistered, name)
	}
	if body == nil && t.Kind() == reflect.Pointer {
		return reflect.Zero(t).Interface(), nil // a typed nil pointer
	}
	// Decode into a new value of t (for a pointer type, into what it
	// points at) so the caller gets exactly the type the host sent.
	var target reflect.Value
	if t.Kind() == reflect.Pointer {
		target = reflect.New(t.Elem())
		if err := json.Unmarshal(body, target.Interface()); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, name, err)
		}
		return target.Interface(), nil
	}
	target = reflect.New(t)
	if err := json.Unmarshal(body, target.Interface()); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, name, err)
	}
	return target.Elem().Interface(), nil
}
