package tdx_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/veilhq/veil/enclave/dstack/dstacktest"
	"github.com/veilhq/veil/enclave/dstack/tdx"
)

func spec(version int, td15 bool) dstacktest.QuoteSpec {
	s := dstacktest.QuoteSpec{Version: version, TD15: td15, MRTD: sha512.Sum384([]byte("mrtd"))}
	for i := range s.RTMR {
		s.RTMR[i] = sha512.Sum384([]byte{byte(i)})
	}
	for i := range s.ReportData {
		s.ReportData[i] = byte(i + 1)
	}
	return s
}

func key(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParseQuoteVersions(t *testing.T) {
	k := key(t)
	for _, c := range []struct {
		name     string
		version  int
		td15     bool
		bodyType uint16
		rdOffset int // report data offset per Intel's layout: header 48 (+6 in v5) + 520
	}{
		{"v4", 4, false, tdx.BodyTypeTD10, 568},
		{"v5-td10", 5, false, tdx.BodyTypeTD10, 574},
		{"v5-td15", 5, true, tdx.BodyTypeTD15, 574},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := spec(c.version, c.td15)
			raw := dstacktest.BuildQuote(s, k)
			if got := raw[c.rdOffset : c.rdOffset+64]; string(got) != string(s.ReportData[:]) {
				t.Fatalf("report data is not at offset %d", c.rdOffset)
			}
			q, err := tdx.ParseQuote(raw)
			if err != nil {
				t.Fatal(err)
			}
			if q.Version != uint16(c.version) || q.BodyType != c.bodyType || q.TEEType != tdx.TEETypeTDX || q.QEVendorID != tdx.IntelQEVendorID {
				t.Fatalf("header: %+v", q)
			}
			if q.MRTD != s.MRTD || q.RTMR != s.RTMR || q.ReportData != s.ReportData || q.Debug() {
				t.Fatal("body fields differ")
			}
			if q.CertificationDataType != 6 || len(q.CertificationData) == 0 {
				t.Fatalf("certification data type %d, %d bytes", q.CertificationDataType, len(q.CertificationData))
			}
			if err := q.VerifySignature(); err != nil {
				t.Fatal(err)
			}
			if len(q.SignedData()) != c.rdOffset+64+map[bool]int{true: 64, false: 0}[c.td15] {
				t.Fatalf("signed data has %d bytes", len(q.SignedData()))
			}
			// Trailing bytes are ignored and unsigned.
			if _, err := tdx.ParseQuote(append(raw, 0, 0, 0)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestQuoteSignatureCoversHeaderAndBody(t *testing.T) {
	k := key(t)
	raw := dstacktest.BuildQuote(spec(4, false), k)
	for _, off := range []int{0x1c /* user data */, 48 + 136 /* MRTD */, 568 /* report data */, 631} {
		bad := append([]byte(nil), raw...)
		bad[off] ^= 0x80
		q, err := tdx.ParseQuote(bad)
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		if err := q.VerifySignature(); !errors.Is(err, tdx.ErrSignature) {
			t.Fatalf("offset %d: tampered quote verifies: %v", off, err)
		}
	}
	// A flipped signature byte.
	bad := append([]byte(nil), raw...)
	bad[632+4+10] ^= 1
	q, err := tdx.ParseQuote(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.VerifySignature(); !errors.Is(err, tdx.ErrSignature) {
		t.Fatalf("bad signature verifies: %v", err)
	}
	// Another key's signature.
	q, _ = tdx.ParseQuote(raw)
	other := dstacktest.BuildQuote(spec(4, false), key(t))
	qo, _ := tdx.ParseQuote(other)
	q.AttestationKey = qo.AttestationKey
	if err := q.VerifySignature(); !errors.Is(err, tdx.ErrSignature) {
		t.Fatalf("signature verifies with another key: %v", err)
	}
}

func TestQuoteDebugAttribute(t *testing.T) {
	s := spec(4, false)
	s.Debug = true
	q, err := tdx.ParseQuote(dstacktest.BuildQuote(s, key(t)))
	if err != nil || !q.Debug() {
		t.Fatalf("debug TD not reported: %v", err)
	}
}

func TestParseQuoteRefusesMalformed(t *testing.T) {
	raw := dstacktest.BuildQuote(spec(5, true), key(t))
	for n := 0; n < len(raw); n++ {
		if _, err := tdx.ParseQuote(raw[:n]); !errors.Is(err, tdx.ErrMalformed) {
			t.Fatalf("prefix of %d bytes: %v", n, err)
		}
	}
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), raw...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"sgx tee type":      mut(func(b []byte) { binary.LittleEndian.PutUint32(b[4:], 0) }),
		"version 3":         mut(func(b []byte) { binary.LittleEndian.PutUint16(b[0:], 3) }),
		"p384 key type":     mut(func(b []byte) { binary.LittleEndian.PutUint16(b[2:], 3) }),
		"sgx body type":     mut(func(b []byte) { binary.LittleEndian.PutUint16(b[48:], 1) }),
		"body size lies":    mut(func(b []byte) { binary.LittleEndian.PutUint32(b[50:], tdx.TDReport10Len) }),
		"auth len overruns": mut(func(b []byte) { binary.LittleEndian.PutUint32(b[48+6+648:], uint32(len(raw))) }),
		"cert len overruns": mut(func(b []byte) { binary.LittleEndian.PutUint32(b[48+6+648+4+128+2:], 1<<20) }),
		"too large":         make([]byte, tdx.MaxQuoteLen+1),
	} {
		if _, err := tdx.ParseQuote(b); !errors.Is(err, tdx.ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParseQuote(f *testing.F) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f.Add(dstacktest.BuildQuote(spec(4, false), k))
	f.Add(dstacktest.BuildQuote(spec(5, true), k))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := tdx.ParseQuote(b)
		if err == nil {
			_ = q.VerifySignature()
		}
	})
}

// Vectors computed independently (Python hashlib):
//
//	sha384(le32(0x08000001) ‖ ":app-id:" ‖ deadbeef)
//	replay of that and compose-hash abcd into one RTMR
//	a 2-byte boot digest 0102 zero-padded to 48 bytes, extended into zero
const (
	vecAppIDDigest = "67b4be4efed0893cfa2bb1d35dca209ad8348b4c97f980807bcde8b9a0f26398dd0923d6eccb5aa2096d98046da8740f"
	vecRTMR3       = "b870c631aaf75ea97589238583d29aee43c1a060fd1e33e3ca9c7ee7910d6c311fb020830c070ff49632d7862d902038"
	vecShortBoot   = "32c3f441d7856ef859e4f32f0505b47d8692c80d21654a4a6b0432710b915fc65033c0d1be62e0fc1c44899966a0a512"
)

func TestRuntimeEventDigestAndReplayVectors(t *testing.T) {
	d := tdx.RuntimeEventDigest("app-id", []byte{0xde, 0xad, 0xbe, 0xef})
	if tdx.String(d) != vecAppIDDigest {
		t.Fatalf("digest %s", tdx.String(d))
	}
	log := `[
	  {"imr":0,"event_type":1,"digest":"0102","event":"","event_payload":""},
	  {"imr":3,"event_type":134217729,"digest":"` + vecAppIDDigest + `","event":"app-id","event_payload":"deadbeef"},
	  {"imr":3,"event_type":134217729,"digest":"","event":"compose-hash","event_payload":"abcd"}
	]`
	ev, err := tdx.ParseEventLog(log)
	if err != nil {
		t.Fatal(err)
	}
	rtmr, err := tdx.Replay(ev)
	if err != nil {
		t.Fatal(err)
	}
	if tdx.String(rtmr[3]) != vecRTMR3 || tdx.String(rtmr[0]) != vecShortBoot {
		t.Fatalf("rtmr0 %s rtmr3 %s", tdx.String(rtmr[0]), tdx.String(rtmr[3]))
	}
	var zero [48]byte
	if rtmr[1] != zero || rtmr[2] != zero {
		t.Fatal("untouched RTMRs are not zero")
	}
	rt, err := tdx.RuntimeEvents(ev)
	if err != nil || hex.EncodeToString(rt["compose-hash"][0]) != "abcd" || len(rt["app-id"]) != 1 {
		t.Fatalf("runtime events %v %v", rt, err)
	}
}

func TestReplayRefuses(t *testing.T) {
	for name, log := range map[string]string{
		"runtime digest mismatch": `[{"imr":3,"event_type":134217729,"digest":"` + vecAppIDDigest + `","event":"app-id","event_payload":"deadbeee"}]`,
		"digest version 2":        `[{"imr":3,"event_type":134217729,"digest":"","event":"app-id","event_payload":"deadbeef","version":2}]`,
		"imr 4":                   `[{"imr":4,"event_type":1,"digest":"01","event":"","event_payload":""}]`,
		"boot event no digest":    `[{"imr":0,"event_type":1,"digest":"","event":"","event_payload":""}]`,
		"digest too long":         `[{"imr":0,"event_type":1,"digest":"` + vecAppIDDigest + `00","event":"","event_payload":""}]`,
		"payload not hex":         `[{"imr":3,"event_type":134217729,"event":"app-id","event_payload":"xy"}]`,
	} {
		ev, err := tdx.ParseEventLog(log)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := tdx.Replay(ev); !errors.Is(err, tdx.ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, log := range []string{``, `{}`, `[] []`, `[{"imr":"x"}]`} {
		if _, err := tdx.ParseEventLog(log); !errors.Is(err, tdx.ErrMalformed) {
			t.Errorf("%q parses: %v", log, err)
		}
	}
}
