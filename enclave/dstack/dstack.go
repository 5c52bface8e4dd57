// Package dstack is the enclave provider for dstack, Phala's confidential
// VM runtime on Intel TDX. It talks to the dstack guest agent's HTTP API over
// its Unix socket (/var/run/dstack.sock): once at Open it asks for the
// app-scoped derived key of the path RootKeyPath (GetKey) and for the app's
// identity (Info); every agent key then derives from that key with
// HKDF-SHA256 exactly as the software provider derives from its root, so the
// addresses, meta-addresses and signatures come out of the same code
// (enclave/internal/keys). Attest asks the guest agent for a TDX quote
// (GetQuote) whose report data is Veil's enclave.ReportData.
//
// dstack's derived keys depend on the app's key, which dstack's KMS gives to
// every instance of the same app id: every member of a deployment derives the
// same root, hence the same agent addresses, and a restart changes nothing.
// docs/enclave.md ("dstack provider") has the details, the choices and how a
// client verifies a quote.
package dstack

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/dstack/tdx"
	"github.com/veilhq/veil/enclave/internal/keys"
)

// Socket paths and APIs.
const (
	// DefaultSocket is where dstack OS mounts the guest agent's socket
	// (map it into veild's container: "/var/run/dstack.sock:/var/run/dstack.sock").
	DefaultSocket = "/var/run/dstack.sock"
	// LegacySocket is the tappd socket of dstack before 0.4.2, which
	// newer guest agents still serve for compatibility.
	LegacySocket = "/var/run/tappd.sock"

	// APIDstack is the guest agent's API (GetKey, GetQuote, Info at the
	// socket's root): dstack OS 0.4.2 and later.
	APIDstack = "dstack"
	// APITappd is the tappd-compatible API the guest agent serves on
	// tappd.sock (/prpc/Tappd.DeriveK256Key, Tappd.RawQuote, Tappd.Info);
	// DeriveK256Key derives the same key as GetKey.
	APITappd = "tappd"
)

// The root request. Changing either changes every agent key.
const (
	// RootKeyPath is the dstack key path whose derived key is the root.
	RootKeyPath = "veil/enclave/root/v1"
	// RootKeyPurpose is the purpose sent with it (it only enters the
	// guest agent's signature chain, not the key).
	RootKeyPurpose = "veil-enclave-root"
	// rootKeyAlgorithm: dstack derives the same 32 bytes for every
	// algorithm; secp256k1 is the one every guest agent version knows.
	rootKeyAlgorithm = "secp256k1"
)

// DefaultTimeout bounds one guest agent request when Options.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Note is Info.Note of the dstack provider.
const Note = "a TDX quote proves, once a DCAP verifier has checked it with Intel's collateral, " +
	"that an Intel TDX trust domain with the quote's measurements (MRTD, RTMR0-3) produced this report data; " +
	"replaying the event log into RTMR3 binds the compose hash, app id and key provider; " +
	"the client must compare these measurements with values it trusts"

// Key providers, as the guest agent reports them (key_provider_info).
const (
	KeyProviderKMS      = "kms"       // app keys from dstack's KMS: the same for every instance of the app id
	KeyProviderLocalSGX = "local-sgx" // app keys sealed on this host: other hosts derive other keys
	KeyProviderNone     = "none"      // ephemeral app keys: new keys at every boot
)

// ErrEphemeralKeys: the guest agent's app keys are ephemeral (key provider
// "none"), so every agent's keys, and the funds at its addresses, would be
// lost at the next boot. Open refuses such a guest agent unless
// Options.AllowEphemeralKeys is set.
var ErrEphemeralKeys = errors.New("dstack: the guest agent's keys are ephemeral (key provider \"none\"): agent keys would change at every boot")

// Options configure Open. The zero value is the production default.
type Options struct {
	// API is APIDstack (default) or APITappd.
	API string
	// Timeout bounds each guest agent request (DefaultTimeout if 0).
	Timeout time.Duration
	// Logger receives one line at Open (socket, app id, compose hash,
	// instance id, key provider) and warnings; never key material. Nil
	// discards.
	Logger *slog.Logger
	// AllowEphemeralKeys accepts key provider "none" (tests, demos).
	AllowEphemeralKeys bool
}

// AppInfo is what the guest agent says about the app (Info), as Open read
// it. Hex values are lower-case.
type AppInfo struct {
	Socket        string
	API           string
	AppID         string
	AppName       string
	InstanceID    string
	ComposeHash   string
	OSImageHash   string
	MRTD          string
	KeyProvider   string // KeyProviderKMS, KeyProviderLocalSGX, KeyProviderNone or "" (not reported)
	KeyProviderID string
}

// keyring is keys.Locked under an unexported name: embedded, it gives the
// provider its key methods without an exported field.
type keyring = keys.Locked

// Provider is the dstack enclave. It is safe for concurrent use.
type Provider struct {
	c   *client
	log *slog.Logger
	app AppInfo

	// keyring gives the provider DeriveKeys, Sign, ScanKeys and Export
	// (keys.Locked: checks, the KDF under mu held for reading, zeroing).
	keyring

	mu   sync.RWMutex
	prk  []byte // HKDF-Extract(salt = none, IKM = root); nil once closed
	info enclave.Info
	now  func() time.Time
}

var _ enclave.Provider = (*Provider)(nil)

// Open connects to the guest agent at socketPath (DefaultSocket when empty,
// LegacySocket for APITappd), reads the app's identity (Info) and the root
// key (GetKey of RootKeyPath), and returns the provider. After Open only
// Attest talks to the guest agent; keys derive in-process. Errors match
// ErrUnreachable (socket missing, not a socket, no answer), ErrAgent (the
// guest agent answered an error), ErrBadResponse, ErrEphemeralKeys or
// enclave.ErrInvalidInput (bad options); the first three also match
// enclave.ErrUnavailable. No error and no log line carries key material.
func Open(ctx context.Context, socketPath string, opts Options) (*Provider, error) {
	a := apiDstack
	switch opts.API {
	case "", APIDstack:
	case APITappd:
		a = apiTappd
	default:
		return nil, fmt.Errorf("%w: dstack API %q: want %q or %q", enclave.ErrInvalidInput, opts.API, APIDstack, APITappd)
	}
	if socketPath == "" {
		socketPath = DefaultSocket
		if a.name == APITappd {
			socketPath = LegacySocket
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := newClient(socketPath, a, timeout)
	if err := c.checkSocket(); err != nil {
		return nil, err
	}
	app, err := c.appInfo(ctx)
	if err != nil {
		c.close()
		return nil, err
	}
	switch app.KeyProvider {
	case KeyProviderNone:
		if !opts.AllowEphemeralKeys {
			c.close()
			return nil, fmt.Errorf("%w; deploy with dstack's KMS (socket %s)", ErrEphemeralKeys, socketPath)
		}
		log.Warn("dstack key provider is none: agent keys change at every boot", slog.String("socket", socketPath))
	case KeyProviderLocalSGX:
		log.Warn("dstack key provider is local-sgx: agent keys are bound to this host; members on other hosts derive other keys",
			slog.String("socket", socketPath))
	case KeyProviderKMS:
	default:
		log.Warn("dstack guest agent does not report a known key provider; keys are stable only with dstack's KMS",
			slog.String("socket", socketPath), slog.String("key_provider", app.KeyProvider))
	}
	root, err := c.rootKey(ctx)
	if err != nil {
		c.close()
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, root[:], nil)
	clear(root[:])
	if err != nil {
		c.close()
		return nil, fmt.Errorf("enclave: hkdf: %w", err)
	}
	p := &Provider{c: c, log: log, app: app, prk: prk, now: time.Now}
	p.keyring = keys.NewLocked(&p.mu, p.kdf)
	p.info = enclave.Info{
		Provider:           enclave.ProviderDstack,
		Measurement:        measurement(app),
		InstanceID:         app.InstanceID,
		AttestationKeyType: enclave.KeyTypeTDXDCAP,
		Note:               Note,
	}
	if p.info.InstanceID == "" {
		// An app deployed without instance ids: a random id per process
		// still lets clients see restarts.
		var inst [16]byte
		if _, err := io.ReadFull(rand.Reader, inst[:]); err != nil {
			p.Close()
			return nil, fmt.Errorf("enclave: instance id: %w", err)
		}
		p.info.InstanceID = hex.EncodeToString(inst[:])
	}
	log.Info("dstack enclave opened",
		slog.String("socket", socketPath), slog.String("api", a.name),
		slog.String("app_id", app.AppID), slog.String("compose_hash", app.ComposeHash),
		slog.String("instance_id", app.InstanceID), slog.String("key_provider", app.KeyProvider),
		slog.String("measurement", p.info.Measurement))
	return p, nil
}

// measurement is Info.Measurement: "compose-hash:<64 hex>" (SHA-256 of the
// app-compose.json the CVM runs, which dstack extends into RTMR3), or, when
// the guest agent reports no compose hash, "mrtd:<96 hex>".
func measurement(a AppInfo) string {
	if a.ComposeHash != "" {
		return MeasurementComposeHash + a.ComposeHash
	}
	return MeasurementMRTD + a.MRTD
}

// Measurement prefixes.
const (
	MeasurementComposeHash = "compose-hash:"
	MeasurementMRTD        = "mrtd:"
)

// appInfo calls Info and checks the identity fields.
func (c *client) appInfo(ctx context.Context) (AppInfo, error) {
	var r appInfoReply
	if err := c.call(ctx, c.api.info, struct{}{}, &r); err != nil {
		return AppInfo{}, err
	}
	bad := func(detail string) error {
		return &Error{Kind: ErrBadResponse, Socket: c.socket, Method: c.api.info, Detail: detail}
	}
	a := AppInfo{Socket: c.socket, API: c.api.name, AppName: sanitize(r.AppName)}
	var ok bool
	if a.AppID, ok = hexField(r.AppID, 0); !ok {
		return AppInfo{}, bad("app_id is not hex")
	}
	if a.InstanceID, ok = hexField(r.InstanceID, 0); !ok {
		return AppInfo{}, bad("instance_id is not hex")
	}
	if a.OSImageHash, ok = hexField(r.OSImageHash, 0); !ok {
		return AppInfo{}, bad("os_image_hash is not hex")
	}
	var tcb tcbInfo
	if r.TCBInfo != "" {
		if json.Unmarshal([]byte(r.TCBInfo), &tcb) != nil {
			return AppInfo{}, bad("tcb_info is not a JSON object")
		}
	}
	compose := r.ComposeHash
	if compose == "" {
		compose = tcb.ComposeHash
	}
	if a.ComposeHash, ok = hexField(compose, 32); !ok {
		return AppInfo{}, bad("compose_hash is not 32 bytes of hex")
	}
	if a.MRTD, ok = hexField(tcb.MRTD, tdx.MeasurementLen); !ok {
		return AppInfo{}, bad("tcb_info.mrtd is not 48 bytes of hex")
	}
	if a.ComposeHash == "" && a.MRTD == "" {
		return AppInfo{}, bad("neither compose_hash nor tcb_info.mrtd is given: nothing identifies the code")
	}
	a.KeyProvider, a.KeyProviderID = keyProvider(r.KeyProviderInfo)
	return a, nil
}

// hexField lower-cases a hex field; "" is accepted (not reported); n > 0
// requires n bytes.
func hexField(s string, n int) (string, bool) {
	if s == "" {
		return "", true
	}
	b, err := hex.DecodeString(s)
	if err != nil || (n > 0 && len(b) != n) {
		return "", false
	}
	return hex.EncodeToString(b), true
}

// keyProvider reads key_provider_info ({"type": "kms", "id": "…"}; some
// versions say "name"). Unknown content gives "".
func keyProvider(s string) (kind, id string) {
	var kp struct {
		Type string `json:"type"`
		Name string `json:"name"`
		ID   string `json:"id"`
	}
	if json.Unmarshal([]byte(s), &kp) != nil {
		return "", ""
	}
	kind = kp.Type
	if kind == "" {
		kind = kp.Name
	}
	return sanitize(kind), sanitize(kp.ID)
}

// rootKey asks for the derived key of RootKeyPath: 32 bytes of hex.
func (c *client) rootKey(ctx context.Context) ([32]byte, error) {
	var root [32]byte
	var r keyReply
	err := c.call(ctx, c.api.getKey, getKeyArgs{Path: RootKeyPath, Purpose: RootKeyPurpose, Algorithm: rootKeyAlgorithm}, &r)
	if err != nil {
		return root, err
	}
	k := r.Key
	if c.api.name == APITappd {
		k = r.K256Key
	}
	bad := func(detail string) error {
		return &Error{Kind: ErrBadResponse, Socket: c.socket, Method: c.api.getKey, Detail: detail}
	}
	if len(k) != 64 {
		return root, bad(fmt.Sprintf("the key is not 64 hex digits (%d characters)", len(k)))
	}
	if _, err := hex.Decode(root[:], []byte(k)); err != nil {
		clear(root[:])
		return root, bad("the key is not 64 hex digits")
	}
	var zero [32]byte
	if root == zero {
		return root, bad("the key is all zero")
	}
	return root, nil
}

// App returns what the guest agent reported at Open.
func (p *Provider) App() AppInfo { return p.app }

// Close forgets the root (best effort: Go may have copied memory) and
// closes idle connections. Later calls return enclave.ErrUnavailable.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.prk)
	p.prk = nil
	p.c.close()
	return nil
}

// kdf is HKDF-Expand(PRK, info = path, 32 bytes), as in the software
// provider. The caller holds mu.
func (p *Provider) kdf(path string) ([32]byte, error) { return keys.HKDF(p.prk, path) }

// Info implements enclave.Provider: provider "dstack", the measurement
// (compose hash) and instance id the guest agent reported at Open.
func (p *Provider) Info(ctx context.Context) (enclave.Info, error) {
	if err := ctx.Err(); err != nil {
		return enclave.Info{}, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.prk == nil {
		return enclave.Info{}, enclave.ErrUnavailable
	}
	return p.info, nil
}

// Attest implements enclave.Provider: it attests the keys of epoch 0 on
// every chain of chainIDs (duplicates ignored, at least one) and asks the
// guest agent for a TDX quote whose 64-byte report data is the 32 bytes of
// enclave.ReportData followed by 32 zero bytes. The quote is returned as
// lower-case hex with the guest agent's event log, after checking that it
// parses and carries exactly that report data.
func (p *Provider) Attest(ctx context.Context, agentID string, chainIDs []chains.ID, nonce []byte) (enclave.Attestation, error) {
	// p.info is written once, by Open; a closed provider derives no keys.
	att, err := p.Unquoted(ctx, p.info, enclave.QuoteTDX, agentID, chainIDs, nonce)
	if err != nil {
		return enclave.Attestation{}, err
	}
	want, _ := QuoteReportData(att.ReportData)
	quote, eventLog, err := p.c.quote(ctx, want)
	if err != nil {
		return enclave.Attestation{}, err
	}
	att.Quote = hex.EncodeToString(quote)
	att.EventLog = eventLog
	att.IssuedAt = enclave.FormatIssuedAt(p.now())
	return att, nil
}

// QuoteReportData returns the 64 bytes a TDX quote carries for an
// attestation's report data (64 hex digits): the 32 bytes, then 32 zero
// bytes.
func QuoteReportData(reportDataHex string) ([tdx.ReportDataLen]byte, error) {
	var out [tdx.ReportDataLen]byte
	if len(reportDataHex) != 64 || strings.ToLower(reportDataHex) != reportDataHex {
		return out, fmt.Errorf("%w: report data is not 64 lower-case hex digits", enclave.ErrInvalidInput)
	}
	if _, err := hex.Decode(out[:32], []byte(reportDataHex)); err != nil {
		return out, fmt.Errorf("%w: report data is not 64 lower-case hex digits", enclave.ErrInvalidInput)
	}
	return out, nil
}

// quote asks for a TDX quote of reportData and checks that the quote parses
// and carries it.
func (c *client) quote(ctx context.Context, reportData [tdx.ReportDataLen]byte) ([]byte, string, error) {
	var r quoteReply
	if err := c.call(ctx, c.api.quote, quoteArgs{ReportData: hex.EncodeToString(reportData[:])}, &r); err != nil {
		return nil, "", err
	}
	bad := func(detail string) error {
		return &Error{Kind: ErrBadResponse, Socket: c.socket, Method: c.api.quote, Detail: detail}
	}
	quote, err := hex.DecodeString(r.Quote)
	if err != nil || len(quote) == 0 {
		return nil, "", bad("quote is not hex")
	}
	q, err := tdx.ParseQuote(quote)
	if err != nil {
		return nil, "", bad(err.Error())
	}
	if q.ReportData != reportData {
		return nil, "", bad("the quote does not carry the requested report data")
	}
	if r.ReportData != "" {
		echo, err := hex.DecodeString(r.ReportData)
		if err != nil || len(echo) != tdx.ReportDataLen || [tdx.ReportDataLen]byte(echo) != reportData {
			return nil, "", bad("report_data is not the requested report data")
		}
	}
	return quote, r.EventLog, nil
}
