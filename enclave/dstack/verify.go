package dstack

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/dstack/tdx"
)

// Policy lists the values a client trusts. An empty list accepts any value
// (the Report then says what was attested, for the caller to pin). Hex
// values are compared case-insensitively.
type Policy struct {
	// ComposeHashes: SHA-256 of the app-compose.json the client reviewed.
	ComposeHashes []string
	// AppIDs: the dstack app ids (with dstack's KMS, the app contract's
	// address) whose keys the client trusts.
	AppIDs []string
	// KeyProviders: e.g. {"kms"}.
	KeyProviders []string
	// OSImages: MRTD and RTMR0–2 of dstack OS images the client built or
	// reviewed (dstack-mr computes them for a given CPU and memory size).
	OSImages []OSMeasurement
	// AllowDebug accepts a debug TD (whose memory the host can read).
	AllowDebug bool
}

// OSMeasurement is one trusted OS image: hex MRTD and RTMR0–2.
type OSMeasurement struct {
	MRTD, RTMR0, RTMR1, RTMR2 string
}

// Report is what VerifyAttestation read from an attestation it accepted.
// Hex values are lower-case.
type Report struct {
	Quote      *tdx.Quote
	ReportData [tdx.ReportDataLen]byte
	MRTD       string
	RTMR       [4]string
	// From the RTMR3 events of the replayed event log.
	AppID, ComposeHash, InstanceID string
	KeyProvider, KeyProviderID     string
	Events                         []tdx.Event
}

// VerifyAttestation checks a dstack attestation with public data only,
// offline:
//
//   - provider "dstack", quote type "tdx", a well-formed agent id and nonce,
//     every public key consistent (address of its account key, canonical
//     meta-address) and att.ReportData recomputed from them
//     (enclave.VerifyReportData); issuedAt canonical;
//   - the quote parses as a TDX quote (version 4 or 5, ECDSA P-256), its
//     signature verifies with the attestation key it carries, it is not a
//     debug TD (unless the policy allows it), and its report data is
//     ReportData's 32 bytes followed by 32 zero bytes;
//   - the event log replays to the quote's RTMR0–3 (runtime event digests
//     recomputed from their payloads), names app-id, compose-hash,
//     instance-id and key-provider at most once each, and its compose hash
//     is att.Measurement ("compose-hash:<hex>"; a "mrtd:<hex>" measurement
//     must equal the quote's MRTD); a non-empty instance-id event equals
//     att.InstanceID;
//   - the policy's allow-lists.
//
// It does NOT establish that the quote comes from genuine, up-to-date Intel
// hardware: the caller must also verify the quote with a DCAP verifier and
// Intel's collateral (docs/enclave.md), compare att.Nonce with the nonce it
// sent, and pin or allow-list the measurements. Failures wrap
// enclave.ErrAttestation.
func VerifyAttestation(att enclave.Attestation, policy Policy) (*Report, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", enclave.ErrAttestation, fmt.Sprintf(format, args...))
	}
	if att.Provider != enclave.ProviderDstack || att.QuoteType != enclave.QuoteTDX {
		return nil, fail("provider and quote type are not %q and %q", enclave.ProviderDstack, enclave.QuoteTDX)
	}
	rd, err := enclave.VerifyReportData(att)
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339, att.IssuedAt)
	if err != nil || enclave.FormatIssuedAt(t) != att.IssuedAt {
		return nil, fail("issuedAt is not an RFC 3339 UTC time in whole seconds")
	}

	raw, err := hex.DecodeString(att.Quote)
	if err != nil || strings.ToLower(att.Quote) != att.Quote {
		return nil, fail("quote is not lower-case hex")
	}
	q, err := tdx.ParseQuote(raw)
	if err != nil {
		return nil, fail("quote: %v", err)
	}
	if err := q.VerifySignature(); err != nil {
		return nil, fail("quote: %v", err)
	}
	if q.Debug() && !policy.AllowDebug {
		return nil, fail("the quote is from a debug TD, whose memory the host can read")
	}
	r := &Report{Quote: q, MRTD: tdx.String(q.MRTD)}
	copy(r.ReportData[:32], rd[:])
	if q.ReportData != r.ReportData {
		return nil, fail("the quote's report data is not the attestation's report data")
	}

	if att.EventLog == "" {
		return nil, fail("no event log: the compose hash cannot be bound to the quote")
	}
	if r.Events, err = tdx.ParseEventLog(att.EventLog); err != nil {
		return nil, fail("event log: %v", err)
	}
	rtmr, err := tdx.Replay(r.Events)
	if err != nil {
		return nil, fail("event log: %v", err)
	}
	for i := range rtmr {
		if rtmr[i] != q.RTMR[i] {
			return nil, fail("the event log does not replay to the quote's RTMR%d", i)
		}
		r.RTMR[i] = tdx.String(q.RTMR[i])
	}
	ev, err := tdx.RuntimeEvents(r.Events)
	if err != nil {
		return nil, fail("event log: %v", err)
	}
	one := func(name string) ([]byte, bool, error) {
		switch p := ev[name]; len(p) {
		case 0:
			return nil, false, nil
		case 1:
			return p[0], true, nil
		default:
			return nil, false, fail("event log: %q occurs %d times", name, len(p))
		}
	}
	// The identity events are hex in the report; an absent one stays "".
	for _, f := range []struct {
		name string
		dst  *string
	}{{"app-id", &r.AppID}, {"compose-hash", &r.ComposeHash}, {"instance-id", &r.InstanceID}} {
		p, _, err := one(f.name)
		if err != nil {
			return nil, err
		}
		*f.dst = hex.EncodeToString(p)
	}
	p, ok, err := one("key-provider")
	if err != nil {
		return nil, err
	}
	if ok {
		r.KeyProvider, r.KeyProviderID = keyProvider(string(p))
	}

	switch {
	case strings.HasPrefix(att.Measurement, MeasurementComposeHash):
		if r.ComposeHash == "" || att.Measurement != MeasurementComposeHash+r.ComposeHash {
			return nil, fail("measurement is not the compose hash of the event log")
		}
	case strings.HasPrefix(att.Measurement, MeasurementMRTD):
		if att.Measurement != MeasurementMRTD+r.MRTD {
			return nil, fail("measurement is not the quote's MRTD")
		}
	default:
		return nil, fail("measurement is neither %q nor %q", MeasurementComposeHash+"<hex>", MeasurementMRTD+"<hex>")
	}
	if r.InstanceID != "" && att.InstanceID != r.InstanceID {
		return nil, fail("instance id is not the event log's")
	}

	if !allowed(policy.ComposeHashes, r.ComposeHash) {
		return nil, fail("compose hash %s is not in the policy", r.ComposeHash)
	}
	if !allowed(policy.AppIDs, r.AppID) {
		return nil, fail("app id %s is not in the policy", r.AppID)
	}
	if !allowed(policy.KeyProviders, r.KeyProvider) {
		return nil, fail("key provider %q is not in the policy", r.KeyProvider)
	}
	if len(policy.OSImages) > 0 && !slices.ContainsFunc(policy.OSImages, func(m OSMeasurement) bool {
		return strings.EqualFold(m.MRTD, r.MRTD) && strings.EqualFold(m.RTMR0, r.RTMR[0]) &&
			strings.EqualFold(m.RTMR1, r.RTMR[1]) && strings.EqualFold(m.RTMR2, r.RTMR[2])
	}) {
		return nil, fail("MRTD and RTMR0-2 are not an OS image of the policy")
	}
	return r, nil
}

func allowed(list []string, v string) bool {
	return len(list) == 0 || slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, v) })
}
