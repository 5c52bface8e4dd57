package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxArgsBytes caps the raw arguments of one call.
const MaxArgsBytes = 8 << 10

type kind uint8

const (
	kString kind = iota
	kInt
)

func (k kind) String() string {
	if k == kInt {
		return "an integer"
	}
	return "a string"
}

// param is one argument of a tool. The JSON schema and the decoder are both
// built from it, so they cannot disagree.
type param struct {
	name     string
	kind     kind
	desc     string
	required bool
	// enum lists the valid values (compared case-insensitively, reported
	// lower-case).
	enum []string
	// maxLen caps a string in characters (runes); 0 means 256.
	maxLen int
	// multiline allows newlines and tabs in a string.
	multiline bool
	// min and max bound an integer.
	min, max int
	// example is shown in a type error ("such as \"0.5\"").
	example string
}

type spec []param

func (s spec) find(name string) (param, bool) {
	for _, p := range s {
		if p.name == name {
			return p, true
		}
	}
	return param{}, false
}

// schema renders s as a JSON schema object.
func (s spec) schema() map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, p := range s {
		prop := map[string]any{"description": p.desc}
		switch p.kind {
		case kInt:
			prop["type"] = "integer"
			prop["minimum"] = p.min
			prop["maximum"] = p.max
		default:
			prop["type"] = "string"
			if len(p.enum) > 0 {
				prop["enum"] = append([]string(nil), p.enum...)
			} else {
				prop["maxLength"] = p.maxLength()
			}
		}
		props[p.name] = prop
		if p.required {
			required = append(required, p.name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

func (p param) maxLength() int {
	if p.maxLen == 0 {
		return 256
	}
	return p.maxLen
}

// args is a decoded, type-checked arguments object.
type args struct {
	strs map[string]string
	ints map[string]int
}

// str returns a string argument, "" when absent.
func (a *args) str(name string) string { return a.strs[name] }

// has reports whether an argument was given (and not null).
func (a *args) has(name string) bool {
	_, s := a.strs[name]
	_, i := a.ints[name]
	return s || i
}

// int returns an integer argument or def when absent.
func (a *args) int(name string, def int) int {
	if v, ok := a.ints[name]; ok {
		return v
	}
	return def
}

func argErr(format string, v ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgs, fmt.Sprintf(format, v...))
}

// decode checks raw against s strictly: a JSON object, no unknown or
// duplicate members, the right types, required members present, enums and
// bounds respected. A null member counts as absent.
func (s spec) decode(raw json.RawMessage) (*args, error) {
	a := &args{strs: map[string]string{}, ints: map[string]int{}}
	if len(raw) > MaxArgsBytes {
		return nil, argErr("arguments are %d bytes; the limit is %d", len(raw), MaxArgsBytes)
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, argErr("arguments must be a JSON object %s", s.takes())
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, argErr("arguments are not valid JSON")
		}
		name, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, argErr("arguments are not valid JSON")
		}
		p, ok := s.find(name)
		if !ok {
			return nil, argErr("unknown argument %q; %s", clip(name, 40), s.takes())
		}
		if seen[name] {
			return nil, argErr("argument %q is given twice", name)
		}
		seen[name] = true
		if err := p.set(a, val); err != nil {
			return nil, err
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, argErr("arguments are not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, argErr("arguments must be one JSON object with nothing after it")
	}
	for _, p := range s {
		if p.required && !a.has(p.name) {
			return nil, argErr("missing required argument %q (%s)", p.name, p.desc)
		}
	}
	return a, nil
}

func (s spec) takes() string {
	if len(s) == 0 {
		return "(this tool takes no arguments: send {})"
	}
	var req, opt []string
	for _, p := range s {
		if p.required {
			req = append(req, p.name)
		} else {
			opt = append(opt, p.name)
		}
	}
	out := "with"
	if len(req) > 0 {
		out += " required " + strings.Join(req, ", ")
	}
	if len(opt) > 0 {
		if len(req) > 0 {
			out += " and"
		}
		out += " optional " + strings.Join(opt, ", ")
	}
	return out
}

func (p param) set(a *args, val json.RawMessage) error {
	if len(val) == 0 {
		return argErr("argument %q has no value", p.name)
	}
	if string(val) == "null" {
		return nil
	}
	got := jsonKind(val[0])
	switch p.kind {
	case kInt:
		if got != "a number" {
			return argErr("argument %q must be an integer from %d to %d, got %s", p.name, p.min, p.max, got)
		}
		n, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil {
			return argErr("argument %q must be a whole number from %d to %d, got %s", p.name, p.min, p.max, clip(string(val), 20))
		}
		if n < int64(p.min) || n > int64(p.max) {
			return argErr("argument %q must be from %d to %d, got %d", p.name, p.min, p.max, n)
		}
		a.ints[p.name] = int(n)
		return nil
	default:
		if got != "a string" {
			hint := ""
			if p.example != "" {
				hint = " such as " + strconv.Quote(p.example)
			}
			return argErr("argument %q must be a string%s, got %s", p.name, hint, got)
		}
		var v string
		if err := json.Unmarshal(val, &v); err != nil {
			return argErr("argument %q is not a valid JSON string", p.name)
		}
		if !utf8.ValidString(v) || strings.ContainsRune(v, utf8.RuneError) {
			return argErr("argument %q is not valid UTF-8 text", p.name)
		}
		if n := utf8.RuneCountInString(v); n > p.maxLength() {
			return argErr("argument %q has %d characters; the limit is %d", p.name, n, p.maxLength())
		}
		for _, r := range v {
			if unicode.IsControl(r) && !(p.multiline && (r == '\n' || r == '\t')) {
				return argErr("argument %q contains a control character", p.name)
			}
		}
		if len(p.enum) > 0 {
			lv := strings.ToLower(strings.TrimSpace(v))
			ok := false
			for _, e := range p.enum {
				if lv == e {
					ok = true
					break
				}
			}
			if !ok {
				return argErr("argument %q must be one of %s; got %q", p.name, strings.Join(p.enum, ", "), clip(v, 40))
			}
			v = lv
		}
		a.strs[p.name] = v
		return nil
	}
}

func jsonKind(b byte) string {
	switch b {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// service is one of Env's services a tool may need (Tool.needs): what a
// missing one is called, and whether env lacks it.
type service struct {
	what   string
	absent func(env *Env) bool
}

var (
	chainAccess    = service{"no chain access", func(env *Env) bool { return env.Chains == nil }}
	agentDirectory = service{"no agent directory", func(env *Env) bool { return env.Directory == nil }}
	invoiceStore   = service{"no invoice store", func(env *Env) bool { return env.Invoices == nil }}
	scheduleStore  = service{"no schedule store", func(env *Env) bool { return env.Schedules == nil }}
	memoryStore    = service{"no memory store", func(env *Env) bool { return env.Memories == nil }}
	paymentRecords = service{"no payment records", func(env *Env) bool { return env.Payments == nil }}
)

// missing refuses s with ErrNotConfigured when env lacks it.
func (s service) missing(env *Env) error {
	if s.absent(env) {
		return fmt.Errorf("%w: %s", ErrNotConfigured, s.what)
	}
	return nil
}

// withArgs completes t from s: its schema, and a Run that checks the
// arguments against s (decode), for a payment tool the call's idempotency
// key (needKey), and the services the tool needs (Tool.needs), before do
// sees them, so a tool cannot run on arguments its schema does not admit
// or without its services, a payment cannot be made twice by a retry, and
// no tool repeats the checks. A payment tool also moves value:
// withArgs marks it so (MovesValue), for Call to put it behind the money
// gate, rather than each payment tool carrying both marks.
func withArgs(t Tool, s spec, do func(ctx context.Context, env *Env, a *args) (any, error)) Tool {
	t.Parameters = s.schema()
	payment, needs := t.Payment, t.needs
	t.MovesValue = t.MovesValue || payment
	t.Run = func(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
		a, err := s.decode(raw)
		if err != nil {
			return nil, err
		}
		if payment {
			if err := needKey(env); err != nil {
				return nil, err
			}
		}
		for _, sv := range needs {
			if err := sv.missing(env); err != nil {
				return nil, err
			}
		}
		return do(ctx, env, a)
	}
	return t
}
