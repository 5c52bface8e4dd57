package tdx

import (
	"bytes"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
)

// RuntimeEventType is the event type of dstack's runtime events (the ones
// its initrd and guest agent extend into RTMR3: app-id, compose-hash,
// instance-id, key-provider, …).
const RuntimeEventType = 0x08000001

// MaxEvents bounds the events of one event log.
const MaxEvents = 1 << 14

// Event is one entry of the dstack guest agent's JSON event log (the
// event_log string of GetQuote): IMR 0–3 is RTMR0–3, digests and payloads
// are hex. For boot-time events only the digest is given; for runtime
// events the payload is given and the digest may be left out (the verifier
// recomputes it).
type Event struct {
	IMR          uint32 `json:"imr"`
	EventType    uint32 `json:"event_type"`
	Digest       string `json:"digest"`
	Event        string `json:"event"`
	EventPayload string `json:"event_payload"`
	// Version of a runtime event's digest format: 0 or 1 (the only one
	// this package replays) or 2.
	Version int `json:"version,omitempty"`
}

// ParseEventLog parses the guest agent's event log (a JSON array).
func ParseEventLog(s string) ([]Event, error) {
	var events []Event
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if err := dec.Decode(&events); err != nil {
		return nil, malformed("event log is not a JSON array of events")
	}
	if dec.More() {
		return nil, malformed("event log has data after its JSON array")
	}
	if len(events) > MaxEvents {
		return nil, malformed("event log has %d events, more than %d", len(events), MaxEvents)
	}
	return events, nil
}

// Payload returns the decoded payload.
func (e Event) Payload() ([]byte, error) {
	p, err := hex.DecodeString(e.EventPayload)
	if err != nil {
		return nil, malformed("payload of event %q is not hex", e.Event)
	}
	return p, nil
}

// RuntimeEventDigest is the digest of a version-1 dstack runtime event:
// SHA-384(le32(RuntimeEventType) ‖ ":" ‖ name ‖ ":" ‖ payload).
func RuntimeEventDigest(name string, payload []byte) [MeasurementLen]byte {
	h := sha512.New384()
	var t [4]byte
	binary.LittleEndian.PutUint32(t[:], RuntimeEventType)
	h.Write(t[:])
	h.Write([]byte(":"))
	h.Write([]byte(name))
	h.Write([]byte(":"))
	h.Write(payload)
	var d [MeasurementLen]byte
	h.Sum(d[:0])
	return d
}

// Extend returns SHA-384(mr ‖ digest), the RTMR extend operation.
func Extend(mr, digest [MeasurementLen]byte) [MeasurementLen]byte {
	h := sha512.New384()
	h.Write(mr[:])
	h.Write(digest[:])
	var out [MeasurementLen]byte
	h.Sum(out[:0])
	return out
}

// EventDigest returns the digest an event extends. A runtime event's
// digest is recomputed from its name and payload (and must equal the given
// digest when one is given), so its payload is bound to the RTMR; runtime
// events of digest version 2 are refused. Other events use their given
// digest (at most 48 bytes, zero-padded like dstack's SDKs do).
func (e Event) EventDigest() ([MeasurementLen]byte, error) {
	var d [MeasurementLen]byte
	var given []byte
	if e.Digest != "" {
		var err error
		if given, err = hex.DecodeString(e.Digest); err != nil || len(given) > MeasurementLen {
			return d, malformed("digest of event %q is not at most 48 bytes of hex", e.Event)
		}
	}
	if e.EventType == RuntimeEventType {
		if e.Version > 1 {
			return d, malformed("runtime event %q has digest version %d; only version 1 is replayed", e.Event, e.Version)
		}
		p, err := e.Payload()
		if err != nil {
			return d, err
		}
		d = RuntimeEventDigest(e.Event, p)
		if given != nil && !bytes.Equal(given, d[:]) {
			return d, malformed("digest of runtime event %q does not match its name and payload", e.Event)
		}
		return d, nil
	}
	if given == nil {
		return d, malformed("event %q has no digest", e.Event)
	}
	copy(d[:], given)
	return d, nil
}

// Replay extends every event into its RTMR, starting from zero, and returns
// RTMR0–3.
func Replay(events []Event) ([4][MeasurementLen]byte, error) {
	var rtmr [4][MeasurementLen]byte
	for i, e := range events {
		if e.IMR > 3 {
			return rtmr, malformed("event %d names IMR %d; only 0–3 exist", i, e.IMR)
		}
		d, err := e.EventDigest()
		if err != nil {
			return rtmr, err
		}
		rtmr[e.IMR] = Extend(rtmr[e.IMR], d)
	}
	return rtmr, nil
}

// RuntimeEvents returns the payloads of the RTMR3 runtime events by name,
// in log order.
func RuntimeEvents(events []Event) (map[string][][]byte, error) {
	out := map[string][][]byte{}
	for _, e := range events {
		if e.IMR != 3 || e.EventType != RuntimeEventType {
			continue
		}
		p, err := e.Payload()
		if err != nil {
			return nil, err
		}
		out[e.Event] = append(out[e.Event], p)
	}
	return out, nil
}

// String formats a measurement as lower-case hex.
func String(m [MeasurementLen]byte) string { return hex.EncodeToString(m[:]) }
