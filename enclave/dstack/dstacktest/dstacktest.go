// Package dstacktest runs a fake dstack guest agent on a Unix socket, for
// tests of code that uses enclave/dstack without a TDX machine. It speaks the
// guest agent's JSON API (POST /GetKey, /GetQuote, /Info; or the tappd
// compatibility paths /prpc/Tappd.DeriveK256Key, Tappd.RawQuote, Tappd.Info)
// with the real request and reply shapes, derives keys the way the real guest
// agent does (HKDF-SHA256 with salt "RATLS" over the app key, info = path),
// and answers quote requests with a structurally valid TDX quote (version 4
// or 5) whose report data echoes the request, whose RTMRs are the replay of
// the event log it returns, and which is signed by a P-256 key of the
// server's own: it passes every offline check, never a DCAP verifier.
package dstacktest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/enclave/dstack/tdx"
)

// DeriveKey is the guest agent's key derivation for GetKey (ra-tls
// kdf::derive_key): HKDF-SHA256(salt = "RATLS", IKM = app key,
// info = path, 32 bytes).
func DeriveKey(appKey []byte, path string) [32]byte {
	b, err := hkdf.Key(sha256.New, appKey, []byte("RATLS"), path, 32)
	if err != nil {
		panic(err)
	}
	return [32]byte(b)
}

// Config describes the app the fake guest agent serves. Zero fields get
// deterministic defaults.
type Config struct {
	// AppKey is the app key every derived key comes from (the KMS gives
	// the same one to every instance of an app).
	AppKey [32]byte
	// AppID (20 bytes), InstanceID and ComposeHash (32 bytes) in hex.
	AppID, InstanceID, ComposeHash string
	// KeyProviderInfo is the key_provider_info JSON (default
	// {"type":"kms","id":"…"}).
	KeyProviderInfo string
	// MRTD in hex (48 bytes).
	MRTD string
	// QuoteVersion is 4 (default) or 5; QuoteBodyTD15 makes a version 5
	// quote carry a TD 1.5 body.
	QuoteVersion  int
	QuoteBodyTD15 bool
	// NoInstanceID deploys the app without instance ids (Info's
	// instance_id and the instance-id event are empty).
	NoInstanceID bool
	// Debug sets the TD's DEBUG attribute in quotes.
	Debug bool
	// Tappd serves the tappd paths (/prpc/Tappd.*) instead of dstack's.
	Tappd bool
	// StripRuntimeDigests leaves the digests of runtime events out of the
	// event log (as the guest agent does to save space; verifiers
	// recompute them).
	StripRuntimeDigests bool
}

// Defaults.
const (
	DefaultAppID       = "a11ce0000000000000000000000000000000beef"
	DefaultInstanceID  = "1a57a4ce00000000000000000000000000000001"
	DefaultComposeHash = "c0de000000000000000000000000000000000000000000000000000000000001"
)

// Failure makes a method misbehave.
type Failure struct {
	// Status is the HTTP status (400 is what the real agent uses for RPC
	// errors; with Body, 0 means 200).
	Status int
	// Message is the "error" text; empty (and no Body) sends a non-JSON
	// body.
	Message string
	// Body, if set, is sent as the reply instead (a malformed success).
	Body string
	// Delay waits before answering (or until the request is abandoned);
	// alone, the normal reply follows.
	Delay time.Duration
}

// Server is a running fake guest agent.
type Server struct {
	cfg     Config
	socket  string
	ln      net.Listener
	srv     *http.Server
	attKey  *ecdsa.PrivateKey
	mrtd    [tdx.MeasurementLen]byte
	events  []tdx.Event
	rtmr    [4][tdx.MeasurementLen]byte
	done    chan struct{}
	closeMu sync.Once

	mu       sync.Mutex
	failures map[string]Failure
	calls    map[string]int
	tamper   bool
	bodies   []string
}

// New starts a fake guest agent on a socket in a new short temporary
// directory (Unix socket paths are limited to ~100 bytes, too short for
// t.TempDir under long test names) and stops it when the test ends.
func New(t testing.TB, cfg Config) *Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "veil-dstack-")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(filepath.Join(dir, "dstack.sock"), cfg)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		os.RemoveAll(dir)
	})
	return s
}

// Start serves a fake guest agent on a Unix socket at socketPath.
func Start(socketPath string, cfg Config) (*Server, error) {
	if cfg.AppID == "" {
		cfg.AppID = DefaultAppID
	}
	if cfg.InstanceID == "" && !cfg.NoInstanceID {
		cfg.InstanceID = DefaultInstanceID
	}
	if cfg.ComposeHash == "" {
		cfg.ComposeHash = DefaultComposeHash
	}
	if cfg.KeyProviderInfo == "" {
		cfg.KeyProviderInfo = `{"type":"kms","id":"02` + strings.Repeat("ab", 32) + `"}`
	}
	if cfg.QuoteVersion == 0 {
		cfg.QuoteVersion = 4
	}
	s := &Server{cfg: cfg, socket: socketPath, done: make(chan struct{}),
		failures: map[string]Failure{}, calls: map[string]int{}}
	var err error
	if cfg.MRTD != "" {
		b, err := hex.DecodeString(cfg.MRTD)
		if err != nil || len(b) != tdx.MeasurementLen {
			return nil, errors.New("dstacktest: MRTD must be 48 bytes of hex")
		}
		s.mrtd = [tdx.MeasurementLen]byte(b)
	} else {
		s.mrtd = sha512.Sum384([]byte("dstacktest mrtd"))
	}
	if s.events, err = s.eventLog(); err != nil {
		return nil, err
	}
	if s.rtmr, err = tdx.Replay(s.events); err != nil {
		return nil, err
	}
	if s.attKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if s.ln, err = net.Listen("unix", socketPath); err != nil {
		return nil, err
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(s.ln)
	return s, nil
}

// Socket is the socket path.
func (s *Server) Socket() string { return s.socket }

// Close stops the server and removes the socket.
func (s *Server) Close() error {
	s.closeMu.Do(func() { close(s.done) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	os.Remove(s.socket)
	return err
}

// Fail makes every later call of method ("GetKey", "GetQuote", "Info",
// "Tappd.DeriveK256Key", …) answer f; a zero Failure clears it.
func (s *Server) Fail(method string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == (Failure{}) {
		delete(s.failures, method)
		return
	}
	s.failures[method] = f
}

// TamperReportData makes quotes carry report data other than requested.
func (s *Server) TamperReportData(on bool) {
	s.mu.Lock()
	s.tamper = on
	s.mu.Unlock()
}

// Calls counts the requests of method.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Requests returns the request bodies received so far, as "Method body".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// RTMR is what the quotes carry (the replay of EventLog).
func (s *Server) RTMR() [4][tdx.MeasurementLen]byte { return s.rtmr }

// MRTD is what the quotes carry.
func (s *Server) MRTD() [tdx.MeasurementLen]byte { return s.mrtd }

// EventLog returns the event log the server sends with quotes.
func (s *Server) EventLog() string {
	b, _ := json.Marshal(s.events)
	return string(b)
}

// eventLog is a dstack-like event log: boot-time events (digests only) in
// RTMR0–2 and the runtime events dstack's initrd extends into RTMR3.
func (s *Server) eventLog() ([]tdx.Event, error) {
	var ev []tdx.Event
	for imr, names := range [][]string{{"EV_POST_CODE", "EV_EFI_VARIABLE_DRIVER_CONFIG", "EV_SEPARATOR"},
		{"EV_EFI_BOOT_SERVICES_APPLICATION", "EV_SEPARATOR"}, {"EV_EVENT_TAG kernel cmdline", "EV_EVENT_TAG initrd"}} {
		for i, n := range names {
			d := sha512.Sum384([]byte(fmt.Sprintf("dstacktest boot %d %d %s", imr, i, n)))
			ev = append(ev, tdx.Event{IMR: uint32(imr), EventType: 0x80000001 + uint32(i), Digest: hex.EncodeToString(d[:]), Event: n})
		}
	}
	appID, err := hex.DecodeString(s.cfg.AppID)
	if err != nil {
		return nil, errors.New("dstacktest: AppID is not hex")
	}
	inst, err := hex.DecodeString(s.cfg.InstanceID)
	if err != nil {
		return nil, errors.New("dstacktest: InstanceID is not hex")
	}
	compose, err := hex.DecodeString(s.cfg.ComposeHash)
	if err != nil || len(compose) != 32 {
		return nil, errors.New("dstacktest: ComposeHash is not 32 bytes of hex")
	}
	for _, r := range []struct {
		name    string
		payload []byte
	}{
		{"system-preparing", nil},
		{"app-id", appID},
		{"compose-hash", compose},
		{"instance-id", inst},
		{"boot-mr-done", nil},
		{"key-provider", []byte(s.cfg.KeyProviderInfo)},
		{"system-ready", nil},
	} {
		e := tdx.Event{IMR: 3, EventType: tdx.RuntimeEventType, Event: r.name, EventPayload: hex.EncodeToString(r.payload)}
		if !s.cfg.StripRuntimeDigests {
			d := tdx.RuntimeEventDigest(r.name, r.payload)
			e.Digest = hex.EncodeToString(d[:])
		}
		ev = append(ev, e)
	}
	return ev, nil
}

// method maps a request path to its method name, or "".
func (s *Server) method(path string) string {
	if s.cfg.Tappd {
		switch path {
		case "/prpc/Tappd.DeriveK256Key", "/prpc/Tappd.RawQuote", "/prpc/Tappd.Info":
			return strings.TrimPrefix(path, "/prpc/")
		}
		return ""
	}
	switch path {
	case "/GetKey", "/GetQuote", "/Info":
		return path[1:]
	}
	return ""
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	m := s.method(r.URL.Path)
	if m == "" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<h1>404: Not Found</h1>")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.calls[m]++
	s.bodies = append(s.bodies, m+" "+string(body))
	f, failing := s.failures[m]
	tamper := s.tamper
	s.mu.Unlock()
	if failing {
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			case <-s.done:
				return
			}
		}
		if f.Body != "" {
			st := f.Status
			if st == 0 {
				st = http.StatusOK
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(st)
			fmt.Fprint(w, f.Body)
			return
		}
		if f.Status != 0 {
			if f.Message == "" {
				w.WriteHeader(f.Status)
				fmt.Fprint(w, "internal error")
				return
			}
			writeErr(w, f.Status, f.Message)
			return
		}
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		// The real agent decodes a POST without a JSON content type as
		// protobuf; the client must not do that.
		writeErr(w, http.StatusBadRequest, "dstacktest: want POST with Content-Type application/json")
		return
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	switch m {
	case "GetKey", "Tappd.DeriveK256Key":
		var a struct {
			Path      string `json:"path"`
			Purpose   string `json:"purpose"`
			Algorithm string `json:"algorithm"`
		}
		if err := dec.Decode(&a); err != nil {
			writeErr(w, http.StatusBadRequest, "Failed to decode request: "+err.Error())
			return
		}
		switch a.Algorithm {
		case "", "secp256k1", "k256", "ed25519":
		default:
			writeErr(w, http.StatusBadRequest, "Unsupported algorithm")
			return
		}
		k := DeriveKey(s.cfg.AppKey[:], a.Path)
		chain := []string{strings.Repeat("00", 65), strings.Repeat("00", 65)}
		if m == "GetKey" {
			writeJSON(w, map[string]any{"key": hex.EncodeToString(k[:]), "signature_chain": chain})
		} else {
			writeJSON(w, map[string]any{"k256_key": hex.EncodeToString(k[:]), "k256_signature_chain": chain})
		}
	case "GetQuote", "Tappd.RawQuote":
		var a struct {
			ReportData string `json:"report_data"`
		}
		if err := dec.Decode(&a); err != nil {
			writeErr(w, http.StatusBadRequest, "Failed to decode request: "+err.Error())
			return
		}
		rd, err := hex.DecodeString(a.ReportData)
		if err != nil {
			writeErr(w, http.StatusBadRequest, "Failed to decode request: report_data is not hex")
			return
		}
		if len(rd) > tdx.ReportDataLen {
			writeErr(w, http.StatusBadRequest, "Report data is too long")
			return
		}
		var padded [tdx.ReportDataLen]byte
		copy(padded[:], rd)
		quoted := padded
		if tamper {
			quoted[0] ^= 1
		}
		quote := BuildQuote(QuoteSpec{Version: s.cfg.QuoteVersion, TD15: s.cfg.QuoteBodyTD15, MRTD: s.mrtd,
			RTMR: s.rtmr, ReportData: quoted, Debug: s.cfg.Debug}, s.attKey)
		out := map[string]any{"quote": hex.EncodeToString(quote), "event_log": s.EventLog()}
		if m == "GetQuote" {
			out["report_data"] = hex.EncodeToString(padded[:])
			out["vm_config"] = `{"cpu_count":2,"memory_size":4294967296}`
		}
		writeJSON(w, out)
	default: // Info, Tappd.Info
		tcb, _ := json.Marshal(map[string]any{
			"mrtd": tdx.String(s.mrtd), "rtmr0": tdx.String(s.rtmr[0]), "rtmr1": tdx.String(s.rtmr[1]),
			"rtmr2": tdx.String(s.rtmr[2]), "rtmr3": tdx.String(s.rtmr[3]),
			"compose_hash": s.cfg.ComposeHash, "event_log": s.events, "app_compose": `{"manifest_version":2,"name":"veil"}`,
		})
		writeJSON(w, map[string]any{
			"app_id": s.cfg.AppID, "instance_id": s.cfg.InstanceID, "app_cert": "", "tcb_info": string(tcb),
			"app_name": "veil", "device_id": strings.Repeat("de", 32), "mr_aggregated": strings.Repeat("a9", 32),
			"os_image_hash": strings.Repeat("05", 32), "key_provider_info": s.cfg.KeyProviderInfo,
			"compose_hash": s.cfg.ComposeHash, "vm_config": `{"cpu_count":2}`,
		})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// writeErr answers like the guest agent's RPC layer: a pretty-printed
// {"error": "…"}.
func writeErr(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.MarshalIndent(map[string]string{"error": msg}, "", "  ")
	w.Write(b)
}

// QuoteSpec describes a quote to build.
type QuoteSpec struct {
	Version    int  // 4 or 5
	TD15       bool // version 5 only: a TD 1.5 body
	MRTD       [tdx.MeasurementLen]byte
	RTMR       [4][tdx.MeasurementLen]byte
	ReportData [tdx.ReportDataLen]byte
	Debug      bool
}

// BuildQuote lays out a TDX quote as the DCAP quoting library does and
// signs header and body with key. The certification data is a QE report
// certification data block (type 6) of the right shape with zero contents
// and an empty PCK chain.
func BuildQuote(spec QuoteSpec, key *ecdsa.PrivateKey) []byte {
	le16 := binary.LittleEndian.AppendUint16
	le32 := binary.LittleEndian.AppendUint32
	var q []byte
	q = le16(q, uint16(spec.Version))
	q = le16(q, tdx.AttKeyECDSAP256)
	q = le32(q, tdx.TEETypeTDX)
	q = le16(q, 3) // QE SVN
	q = le16(q, 7) // PCE SVN
	q = append(q, tdx.IntelQEVendorID[:]...)
	q = append(q, make([]byte, 20)...)
	bodyLen := tdx.TDReport10Len
	if spec.Version == 5 {
		bt := uint16(tdx.BodyTypeTD10)
		if spec.TD15 {
			bt, bodyLen = tdx.BodyTypeTD15, tdx.TDReport15Len
		}
		q = le16(q, bt)
		q = le32(q, uint32(bodyLen))
	}
	var body []byte
	body = append(body, make([]byte, 16)...)                 // TEE_TCB_SVN
	body = append(body, fill(0x5e, tdx.MeasurementLen)...)   // MRSEAM
	body = append(body, make([]byte, tdx.MeasurementLen)...) // MRSIGNERSEAM
	body = append(body, make([]byte, 8)...)                  // SEAMATTRIBUTES
	tdAttr := make([]byte, 8)                                // TDATTRIBUTES
	if spec.Debug {
		tdAttr[0] = 1
	}
	body = append(body, tdAttr...)
	body = append(body, 0xe7, 0x18, 6, 0, 0, 0, 0, 0) // XFAM
	body = append(body, spec.MRTD[:]...)
	body = append(body, make([]byte, 3*tdx.MeasurementLen)...) // MRCONFIGID, MROWNER, MROWNERCONFIG
	for i := range spec.RTMR {
		body = append(body, spec.RTMR[i][:]...)
	}
	body = append(body, spec.ReportData[:]...)
	if bodyLen == tdx.TDReport15Len {
		body = append(body, make([]byte, 16+tdx.MeasurementLen)...)
	}
	q = append(q, body...)

	h := sha256.Sum256(q)
	r, s, err := ecdsa.Sign(rand.Reader, key, h[:])
	if err != nil {
		panic(err)
	}
	var auth []byte
	auth = append(auth, r.FillBytes(make([]byte, 32))...)
	auth = append(auth, s.FillBytes(make([]byte, 32))...)
	pub, err := key.PublicKey.Bytes() // 0x04 ‖ x ‖ y
	if err != nil {
		panic(err)
	}
	auth = append(auth, pub[1:]...)
	// QE report certification data: QE report (384), its signature (64),
	// QE auth data (u16 length + data), PCK certification data (type 5,
	// empty chain).
	var qe []byte
	qe = append(qe, make([]byte, 384+64)...)
	qe = le16(qe, 32)
	qe = append(qe, make([]byte, 32)...)
	qe = le16(qe, 5)
	qe = le32(qe, 0)
	auth = le16(auth, 6)
	auth = le32(auth, uint32(len(qe)))
	auth = append(auth, qe...)
	q = le32(q, uint32(len(auth)))
	return append(q, auth...)
}

func fill(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
