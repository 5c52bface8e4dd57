package dstack_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/dstack"
	"github.com/veilhq/veil/enclave/dstack/dstacktest"
	"github.com/veilhq/veil/enclave/software"
)

const agent1 = "00000000-0000-0000-0000-000000000001"

var appKey = [32]byte{0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x7a, 0x8b, 0x9c, 0x0d, 0x1e, 0x2f, 0x3a, 0x4b, 0x5c, 0x6d,
	0x7e, 0x8f, 0x9a, 0x0b, 0x1c, 0x2d, 0x3e, 0x4f, 0x5a, 0x6b, 0x7c, 0x8d, 0x9e, 0x0f, 0x1a, 0x2b}

func open(t *testing.T, srv *dstacktest.Server, opts dstack.Options) *dstack.Provider {
	t.Helper()
	if opts.API == "" && srv != nil {
		opts.API = dstack.APIDstack
	}
	p, err := dstack.Open(context.Background(), srv.Socket(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func derive(t *testing.T, p enclave.Provider, agentID string, c chains.ID, epoch uint32) enclave.PublicKeys {
	t.Helper()
	k, err := p.DeriveKeys(context.Background(), agentID, c, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestDerivationMatchesSoftwareProviderWithTheDstackRoot(t *testing.T) {
	// The root is the guest agent's derived key of RootKeyPath; from there
	// the derivation is the software provider's, byte for byte.
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
	p := open(t, srv, dstack.Options{})
	sw, err := software.New(dstacktest.DeriveKey(appKey[:], dstack.RootKeyPath))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range chains.Order() {
		for _, epoch := range []uint32{0, 7} {
			got, want := derive(t, p, agent1, c, epoch), derive(t, sw, agent1, c, epoch)
			if got.Address != want.Address || got.MetaAddress != want.MetaAddress ||
				!bytes.Equal(got.AccountPublicKey, want.AccountPublicKey) ||
				!bytes.Equal(got.SpendingPublicKey, want.SpendingPublicKey) || !bytes.Equal(got.ViewingPublicKey, want.ViewingPublicKey) {
				t.Fatalf("%s/%d: dstack %+v, software %+v", c, epoch, got, want)
			}
			e1, err1 := p.Export(ctx, agent1, c, epoch)
			e2, err2 := sw.Export(ctx, agent1, c, epoch)
			if err1 != nil || err2 != nil || e1 != e2 {
				t.Fatalf("%s/%d: export differs (%v, %v)", c, epoch, err1, err2)
			}
			s1, err1 := p.ScanKeys(ctx, agent1, c, epoch)
			s2, err2 := sw.ScanKeys(ctx, agent1, c, epoch)
			if err1 != nil || err2 != nil || s1.ViewingPrivateKey != s2.ViewingPrivateKey || !bytes.Equal(s1.SpendingPublicKey, s2.SpendingPublicKey) {
				t.Fatalf("%s/%d: scan keys differ", c, epoch)
			}
		}
	}
	if srv.Calls("GetKey") != 1 || srv.Calls("Info") != 1 {
		t.Fatalf("Open made %d GetKey and %d Info calls; derivation must not call the agent", srv.Calls("GetKey"), srv.Calls("Info"))
	}
	reqs := srv.Requests()
	if !slicesContains(reqs, `GetKey {"path":"veil/enclave/root/v1","purpose":"veil-enclave-root","algorithm":"secp256k1"}`) {
		t.Fatalf("GetKey request: %q", reqs)
	}
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestDerivationStableAcrossReopenAndMembers(t *testing.T) {
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
	first := map[chains.ID]enclave.PublicKeys{}
	p := open(t, srv, dstack.Options{})
	for _, c := range chains.Order() {
		first[c] = derive(t, p, agent1, c, 0)
	}
	p.Close()
	// Reopen, and a second member of the deployment (same app key, other
	// instance), on the legacy tappd API too.
	p2 := open(t, srv, dstack.Options{})
	member := dstacktest.New(t, dstacktest.Config{AppKey: appKey, InstanceID: "0b"})
	p3 := open(t, member, dstack.Options{})
	legacy := dstacktest.New(t, dstacktest.Config{AppKey: appKey, Tappd: true})
	p4 := open(t, legacy, dstack.Options{API: dstack.APITappd})
	for _, q := range []*dstack.Provider{p2, p3, p4} {
		for _, c := range chains.Order() {
			if k := derive(t, q, agent1, c, 0); k.Address != first[c].Address || k.MetaAddress != first[c].MetaAddress {
				t.Fatalf("%s: %s after reopen, %s before", c, k.Address, first[c].Address)
			}
		}
	}
	// Another app (another app key) gets other keys.
	otherKey := appKey
	otherKey[0] ^= 1
	other := open(t, dstacktest.New(t, dstacktest.Config{AppKey: otherKey}), dstack.Options{})
	if derive(t, other, agent1, chains.Base, 0).Address == first[chains.Base].Address {
		t.Fatal("another app key derives the same address")
	}
}

func TestDifferentAgentsChainsEpochsDiffer(t *testing.T) {
	p := open(t, dstacktest.New(t, dstacktest.Config{AppKey: appKey}), dstack.Options{})
	seen := map[string]string{}
	for _, id := range []string{agent1, "00000000-0000-0000-0000-000000000002"} {
		for _, c := range chains.Order() {
			for _, epoch := range []uint32{0, 1} {
				k := derive(t, p, id, c, epoch)
				for _, v := range []string{k.Address, k.MetaAddress, hex.EncodeToString(k.AccountPublicKey)} {
					where := id + "/" + string(c) + "/" + string(rune('0'+epoch))
					if prev, dup := seen[v]; dup {
						t.Fatalf("%s repeats %s's value", where, prev)
					}
					seen[v] = where
				}
			}
		}
	}
}

func TestSignVerifies(t *testing.T) {
	p := open(t, dstacktest.New(t, dstacktest.Config{AppKey: appKey}), dstack.Options{})
	ctx := context.Background()
	digest := crypto.Keccak256([]byte("payload"))
	sig, err := p.Sign(ctx, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Base}, digest))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.SigToPub(digest, sig)
	if err != nil || crypto.PubkeyToAddress(*pub).Hex() != derive(t, p, agent1, chains.Base, 0).Address {
		t.Fatalf("EVM signature does not recover the account address: %v", err)
	}
	msg := []byte("stellar payload")
	sig, err = p.Sign(ctx, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Stellar}, msg))
	if err != nil || !ed25519.Verify(derive(t, p, agent1, chains.Stellar, 0).AccountPublicKey, msg, sig) {
		t.Fatalf("ed25519 signature does not verify: %v", err)
	}
	if _, err := p.Sign(ctx, spendReq(chains.KeyRef{AgentID: "../x", Chain: chains.Base}, digest)); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("bad agent id: %v", err)
	}
}

func attest(t *testing.T, p *dstack.Provider, nonce string, cs ...chains.ID) enclave.Attestation {
	t.Helper()
	if len(cs) == 0 {
		cs = []chains.ID{chains.Base, chains.Stellar, chains.Solana}
	}
	att, err := p.Attest(context.Background(), agent1, cs, []byte(nonce))
	if err != nil {
		t.Fatal(err)
	}
	return att
}

func TestAttestBindsReportData(t *testing.T) {
	for _, cfg := range []dstacktest.Config{
		{AppKey: appKey},
		{AppKey: appKey, QuoteVersion: 5},
		{AppKey: appKey, QuoteVersion: 5, QuoteBodyTD15: true, StripRuntimeDigests: true},
		{AppKey: appKey, Tappd: true},
	} {
		srv := dstacktest.New(t, cfg)
		opts := dstack.Options{}
		if cfg.Tappd {
			opts.API = dstack.APITappd
		}
		p := open(t, srv, opts)
		att := attest(t, p, "nonce-1")
		info, err := p.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if att.Provider != "dstack" || att.QuoteType != "tdx" || att.Measurement != info.Measurement || att.InstanceID != info.InstanceID ||
			att.Measurement != "compose-hash:"+dstacktest.DefaultComposeHash || att.EventLog == "" || att.Statement != "" {
			t.Fatalf("attestation fields: %+v", att)
		}
		r, err := dstack.VerifyAttestation(att, dstack.Policy{
			ComposeHashes: []string{dstacktest.DefaultComposeHash},
			AppIDs:        []string{strings.ToUpper(dstacktest.DefaultAppID)},
			KeyProviders:  []string{"kms"},
		})
		if err != nil {
			t.Fatalf("quote v%d tappd=%v: %v", cfg.QuoteVersion, cfg.Tappd, err)
		}
		want, _ := dstack.QuoteReportData(att.ReportData)
		if r.ReportData != want || r.AppID != dstacktest.DefaultAppID || r.InstanceID != dstacktest.DefaultInstanceID ||
			r.ComposeHash != dstacktest.DefaultComposeHash || r.KeyProvider != "kms" || r.MRTD != hex.EncodeToString(srvMRTD(srv)) {
			t.Fatalf("report: %+v", r)
		}
		if hex.EncodeToString(want[32:]) != strings.Repeat("00", 32) || hex.EncodeToString(want[:32]) != att.ReportData {
			t.Fatal("quote report data is not report data ‖ 32 zero bytes")
		}
	}
}

func srvMRTD(s *dstacktest.Server) []byte { m := s.MRTD(); return m[:] }

func TestAttestTamperFails(t *testing.T) {
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
	p := open(t, srv, dstack.Options{})
	att := attest(t, p, "fresh-nonce")
	other := attest(t, p, "another-nonce")
	otherAgent, err := p.Attest(context.Background(), "00000000-0000-0000-0000-000000000002", []chains.ID{chains.Base}, []byte("fresh-nonce"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dstack.VerifyAttestation(att, dstack.Policy{}); err != nil {
		t.Fatal(err)
	}
	flipQuote := func(off int) func(a *enclave.Attestation) {
		return func(a *enclave.Attestation) {
			b, _ := hex.DecodeString(a.Quote)
			b[off] ^= 1
			a.Quote = hex.EncodeToString(b)
		}
	}
	events := srv.EventLog()
	for name, mut := range map[string]func(a *enclave.Attestation){
		"nonce":    func(a *enclave.Attestation) { a.Nonce = "other" },
		"agent id": func(a *enclave.Attestation) { a.AgentID = "00000000-0000-0000-0000-000000000002" },
		"address": func(a *enclave.Attestation) {
			k := a.PublicKeys[chains.Base]
			k.Address = otherAgent.PublicKeys[chains.Base].Address
			a.PublicKeys[chains.Base] = k
		},
		"whole key set":          func(a *enclave.Attestation) { a.PublicKeys = otherAgent.PublicKeys },
		"chain dropped":          func(a *enclave.Attestation) { delete(a.PublicKeys, chains.Solana) },
		"report data":            func(a *enclave.Attestation) { a.ReportData = other.ReportData },
		"report data recomputed": func(a *enclave.Attestation) { a.Nonce, a.ReportData = other.Nonce, other.ReportData },
		"quote of another nonce": func(a *enclave.Attestation) { a.Quote = other.Quote },
		"quote report data byte": flipQuote(568),
		"quote MRTD byte":        flipQuote(48 + 136),
		"quote signature byte":   flipQuote(640),
		"quote truncated":        func(a *enclave.Attestation) { a.Quote = a.Quote[:600] },
		"quote upper case":       func(a *enclave.Attestation) { a.Quote = strings.ToUpper(a.Quote) },
		"measurement":            func(a *enclave.Attestation) { a.Measurement = "compose-hash:" + strings.Repeat("ab", 32) },
		"measurement kind":       func(a *enclave.Attestation) { a.Measurement = "sha256:" + dstacktest.DefaultComposeHash },
		"instance id":            func(a *enclave.Attestation) { a.InstanceID = "0b" },
		"event log missing":      func(a *enclave.Attestation) { a.EventLog = "" },
		"event log compose hash": func(a *enclave.Attestation) { a.EventLog = strings.Replace(a.EventLog, "c0de00", "c0de01", 1) },
		"event log event dropped": func(a *enclave.Attestation) {
			a.EventLog = strings.Replace(events, `"event":"system-ready"`, `"event":"system-readz"`, 1)
		},
		"provider":   func(a *enclave.Attestation) { a.Provider = "software" },
		"quote type": func(a *enclave.Attestation) { a.QuoteType = "software-ed25519" },
		"issuedAt":   func(a *enclave.Attestation) { a.IssuedAt = "yesterday" },
	} {
		a := att
		a.PublicKeys = map[chains.ID]enclave.AttestedKeys{}
		for c, k := range att.PublicKeys {
			a.PublicKeys[c] = k
		}
		mut(&a)
		if _, err := dstack.VerifyAttestation(a, dstack.Policy{}); !errors.Is(err, enclave.ErrAttestation) {
			t.Errorf("%s: tampered attestation verifies (%v)", name, err)
		}
	}
	// Policies.
	for name, pol := range map[string]dstack.Policy{
		"compose hash": {ComposeHashes: []string{strings.Repeat("ab", 32)}},
		"app id":       {AppIDs: []string{"00"}},
		"key provider": {KeyProviders: []string{"local-sgx"}},
		"os image":     {OSImages: []dstack.OSMeasurement{{MRTD: "00"}}},
	} {
		if _, err := dstack.VerifyAttestation(att, pol); !errors.Is(err, enclave.ErrAttestation) {
			t.Errorf("policy %s: %v", name, err)
		}
	}
	r, _ := dstack.VerifyAttestation(att, dstack.Policy{})
	os := dstack.OSMeasurement{MRTD: r.MRTD, RTMR0: r.RTMR[0], RTMR1: r.RTMR[1], RTMR2: r.RTMR[2]}
	if _, err := dstack.VerifyAttestation(att, dstack.Policy{OSImages: []dstack.OSMeasurement{os}}); err != nil {
		t.Fatalf("OS image policy: %v", err)
	}
}

func TestDebugTDRefused(t *testing.T) {
	p := open(t, dstacktest.New(t, dstacktest.Config{AppKey: appKey, Debug: true}), dstack.Options{})
	att := attest(t, p, "n")
	if _, err := dstack.VerifyAttestation(att, dstack.Policy{}); !errors.Is(err, enclave.ErrAttestation) {
		t.Fatalf("debug TD accepted: %v", err)
	}
	if _, err := dstack.VerifyAttestation(att, dstack.Policy{AllowDebug: true}); err != nil {
		t.Fatal(err)
	}
}

func TestAttestRefusesAQuoteWithOtherReportData(t *testing.T) {
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
	p := open(t, srv, dstack.Options{})
	srv.TamperReportData(true)
	_, err := p.Attest(context.Background(), agent1, []chains.ID{chains.Base}, []byte("n"))
	var e *dstack.Error
	if !errors.As(err, &e) || !errors.Is(err, dstack.ErrBadResponse) || !errors.Is(err, enclave.ErrUnavailable) || e.Method != "GetQuote" {
		t.Fatalf("tampered quote: %v", err)
	}
	if _, err := p.Attest(context.Background(), agent1, nil, []byte("n")); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("no chains: %v", err)
	}
	if _, err := p.Attest(context.Background(), agent1, []chains.ID{chains.Base}, []byte("bad\nnonce")); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("bad nonce: %v", err)
	}
}

func TestSocketMissingOrUnreachable(t *testing.T) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "veil-dstack-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)

	check := func(name, socket string, err error, want string) {
		t.Helper()
		var e *dstack.Error
		if !errors.Is(err, dstack.ErrUnreachable) || !errors.Is(err, enclave.ErrUnavailable) || !errors.As(err, &e) {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(err.Error(), socket) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %q does not name %s and %q", name, err, socket, want)
		}
	}
	missing := filepath.Join(dir, "dstack.sock")
	_, err = dstack.Open(ctx, missing, dstack.Options{})
	check("missing", missing, err, "no such file")

	regular := filepath.Join(dir, "file")
	os.WriteFile(regular, nil, 0o600)
	_, err = dstack.Open(ctx, regular, dstack.Options{})
	check("regular file", regular, err, "not a Unix socket")

	// A socket file nobody listens on (a guest agent that died).
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	_, err = dstack.Open(ctx, stale, dstack.Options{})
	check("stale", stale, err, "connection refused")

	// A guest agent that does not answer in time.
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
	srv.Fail("Info", dstacktest.Failure{Delay: time.Minute})
	start := time.Now()
	_, err = dstack.Open(ctx, srv.Socket(), dstack.Options{Timeout: 200 * time.Millisecond})
	check("timeout", srv.Socket(), err, "no answer within 200ms")
	if time.Since(start) > 10*time.Second {
		t.Fatal("timeout not honoured")
	}

	// The caller's own deadline is the caller's error.
	dctx, dcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer dcancel()
	if _, err := dstack.Open(dctx, srv.Socket(), dstack.Options{Timeout: time.Minute}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, dstack.ErrUnreachable) {
		t.Fatalf("caller deadline: %v", err)
	}

	// The default path is named when it is missing.
	if _, statErr := os.Stat(dstack.DefaultSocket); errors.Is(statErr, os.ErrNotExist) {
		_, err = dstack.Open(ctx, "", dstack.Options{})
		check("default", dstack.DefaultSocket, err, "no such file")
	}

	// A caller's cancellation is returned as such.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := dstack.Open(cctx, dstacktest.New(t, dstacktest.Config{AppKey: appKey}).Socket(), dstack.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestGuestAgentErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
	agentErr := func(name string, err error, method string, status int, detail string) {
		t.Helper()
		var e *dstack.Error
		if !errors.As(err, &e) || !errors.Is(err, dstack.ErrAgent) || !errors.Is(err, enclave.ErrUnavailable) {
			t.Fatalf("%s: %v", name, err)
		}
		if e.Method != method || e.Status != status || !strings.Contains(e.Detail, detail) || !strings.Contains(err.Error(), srv.Socket()) {
			t.Fatalf("%s: %+v (%q)", name, e, err)
		}
	}
	srv.Fail("GetKey", dstacktest.Failure{Status: 400, Message: "Failed to derive k256 key\nbecause\x00 reasons"})
	_, err := dstack.Open(ctx, srv.Socket(), dstack.Options{})
	agentErr("GetKey 400", err, "GetKey", 400, "Failed to derive k256 key because reasons")

	srv.Fail("GetKey", dstacktest.Failure{})
	srv.Fail("Info", dstacktest.Failure{Status: 500})
	_, err = dstack.Open(ctx, srv.Socket(), dstack.Options{})
	agentErr("Info 500", err, "Info", 500, "")

	// The wrong API for the socket: rocket answers 404.
	srv.Fail("Info", dstacktest.Failure{})
	_, err = dstack.Open(ctx, srv.Socket(), dstack.Options{API: dstack.APITappd})
	agentErr("wrong API", err, "Tappd.Info", 404, "no such method")

	p := open(t, srv, dstack.Options{})
	srv.Fail("GetQuote", dstacktest.Failure{Status: 400, Message: "Failed to get quote: TDX is not available"})
	_, err = p.Attest(ctx, agent1, []chains.ID{chains.Base}, []byte("n"))
	agentErr("GetQuote 400", err, "GetQuote", 400, "TDX is not available")
	// Keys keep working without the guest agent.
	srv.Close()
	if _, err := p.DeriveKeys(ctx, agent1, chains.Base, 0); err != nil {
		t.Fatalf("derivation needs the guest agent after Open: %v", err)
	}
	_, err = p.Attest(ctx, agent1, []chains.ID{chains.Base}, []byte("n"))
	if !errors.Is(err, dstack.ErrUnreachable) {
		t.Fatalf("attest without guest agent: %v", err)
	}

	if _, err := dstack.Open(ctx, srv.Socket(), dstack.Options{API: "grpc"}); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Fatalf("bad API option: %v", err)
	}
}

func TestBadResponsesAndKeyProviders(t *testing.T) {
	ctx := context.Background()
	root := dstacktest.DeriveKey(appKey[:], dstack.RootKeyPath)
	rootHex := hex.EncodeToString(root[:])
	for name, c := range map[string]struct {
		method, body string
	}{
		"key not hex":   {"GetKey", `{"key":"` + rootHex[:62] + `zz","signature_chain":[]}`},
		"key short":     {"GetKey", `{"key":"` + rootHex[:62] + `","signature_chain":[]}`},
		"key zero":      {"GetKey", `{"key":"` + strings.Repeat("0", 64) + `"}`},
		"key not json":  {"GetKey", `{"key":"` + rootHex},
		"info not json": {"Info", `<html>`},
		"compose hash":  {"Info", `{"app_id":"00","compose_hash":"abc"}`},
		"no identity":   {"Info", `{"app_id":"00","instance_id":"01"}`},
		"tcb info":      {"Info", `{"compose_hash":"` + dstacktest.DefaultComposeHash + `","tcb_info":"{"}`},
	} {
		srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
		srv.Fail(c.method, dstacktest.Failure{Body: c.body})
		_, err := dstack.Open(ctx, srv.Socket(), dstack.Options{})
		if !errors.Is(err, dstack.ErrBadResponse) || !errors.Is(err, enclave.ErrUnavailable) {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(err.Error(), rootHex[:16]) {
			t.Fatalf("%s: error shows key material: %v", name, err)
		}
	}

	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	none := dstacktest.New(t, dstacktest.Config{AppKey: appKey, KeyProviderInfo: `{"type":"none","id":""}`})
	if _, err := dstack.Open(ctx, none.Socket(), dstack.Options{Logger: log}); !errors.Is(err, dstack.ErrEphemeralKeys) {
		t.Fatalf("ephemeral keys accepted: %v", err)
	}
	p := open(t, none, dstack.Options{Logger: log, AllowEphemeralKeys: true})
	if p.App().KeyProvider != dstack.KeyProviderNone || !strings.Contains(logs.String(), "change at every boot") {
		t.Fatalf("ephemeral keys not reported: %+v %s", p.App(), logs.String())
	}
	sgx := dstacktest.New(t, dstacktest.Config{AppKey: appKey, KeyProviderInfo: `{"name":"local-sgx","id":"aa"}`})
	p = open(t, sgx, dstack.Options{Logger: log})
	if p.App().KeyProvider != dstack.KeyProviderLocalSGX || !strings.Contains(logs.String(), "bound to this host") {
		t.Fatalf("local-sgx not reported: %+v", p.App())
	}
}

func TestInfo(t *testing.T) {
	var logs bytes.Buffer
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey})
	p := open(t, srv, dstack.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	info, err := p.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Provider != "dstack" || info.Measurement != "compose-hash:"+dstacktest.DefaultComposeHash ||
		info.InstanceID != dstacktest.DefaultInstanceID || info.AttestationKeyType != "tdx-dcap" || info.AttestationPublicKey != "" || info.Note != dstack.Note {
		t.Fatalf("info: %+v", info)
	}
	a := p.App()
	if a.AppID != dstacktest.DefaultAppID || a.KeyProvider != "kms" || a.AppName != "veil" || a.OSImageHash != strings.Repeat("05", 32) ||
		a.MRTD != hex.EncodeToString(srvMRTD(srv)) || a.Socket != srv.Socket() || a.API != "dstack" {
		t.Fatalf("app: %+v", a)
	}
	for _, w := range []string{"dstack enclave opened", dstacktest.DefaultAppID, dstacktest.DefaultComposeHash, srv.Socket()} {
		if !strings.Contains(logs.String(), w) {
			t.Fatalf("log line lacks %q: %s", w, logs.String())
		}
	}
	// An app without instance ids gets a random one per process.
	q := open(t, dstacktest.New(t, dstacktest.Config{AppKey: appKey, NoInstanceID: true}), dstack.Options{})
	i1, _ := q.Info(context.Background())
	q2 := open(t, dstacktest.New(t, dstacktest.Config{AppKey: appKey, NoInstanceID: true}), dstack.Options{})
	i2, _ := q2.Info(context.Background())
	if len(i1.InstanceID) != 32 || i1.InstanceID == i2.InstanceID || q.App().InstanceID != "" {
		t.Fatalf("instance ids %q %q", i1.InstanceID, i2.InstanceID)
	}
	if _, err := dstack.VerifyAttestation(attest(t, q, "n"), dstack.Policy{}); err != nil {
		t.Fatalf("attestation without instance id: %v", err)
	}
}

func TestNoKeyMaterialInErrorsOrLogs(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := dstacktest.New(t, dstacktest.Config{AppKey: appKey, KeyProviderInfo: `{"type":"local-sgx","id":"aa"}`})
	p := open(t, srv, dstack.Options{Logger: log})
	var secrets []string
	root := dstacktest.DeriveKey(appKey[:], dstack.RootKeyPath)
	secrets = append(secrets, hex.EncodeToString(appKey[:]), hex.EncodeToString(root[:]))
	for _, c := range chains.Order() {
		x, err := p.Export(ctx, agent1, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := p.ScanKeys(ctx, agent1, c, 0)
		secrets = append(secrets, strings.TrimPrefix(x, "0x"), hex.EncodeToString(s.ViewingPrivateKey[:]))
	}
	var errs []string
	collect := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	_, err := p.Sign(ctx, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Base}, []byte("short")))
	collect(err)
	_, err = p.Sign(ctx, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Solana, EphemeralPub: []byte{1, 2}}, []byte("m")))
	collect(err)
	srv.Fail("GetQuote", dstacktest.Failure{Status: 400, Message: "quote failed"})
	_, err = p.Attest(ctx, agent1, []chains.ID{chains.Base}, []byte("n"))
	collect(err)
	srv.Fail("GetKey", dstacktest.Failure{Body: `{"key":"` + hex.EncodeToString(root[:31]) + `"}`})
	_, err = dstack.Open(ctx, srv.Socket(), dstack.Options{Logger: log})
	collect(err)
	srv.Fail("GetKey", dstacktest.Failure{Body: `{"key":"` + hex.EncodeToString(root[:]) + `x"}`})
	_, err = dstack.Open(ctx, srv.Socket(), dstack.Options{Logger: log})
	collect(err)
	if len(errs) != 5 {
		t.Fatalf("errors: %q", errs)
	}
	all := strings.ToLower(strings.Join(errs, "\n") + logs.String())
	for _, s := range secrets {
		for i := 0; i+16 <= len(s); i += 8 {
			if strings.Contains(all, s[i:i+16]) {
				t.Fatalf("key material in errors or logs:\n%s", all)
			}
		}
	}
}

func TestClosedAndConcurrent(t *testing.T) {
	ctx := context.Background()
	p := open(t, dstacktest.New(t, dstacktest.Config{AppKey: appKey}), dstack.Options{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := chains.Order()[i%len(chains.Order())]
			if _, err := p.DeriveKeys(ctx, agent1, c, uint32(i)); err != nil {
				t.Error(err)
			}
			if _, err := p.Attest(ctx, agent1, []chains.ID{c}, []byte("n")); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	p.Close()
	if _, err := p.DeriveKeys(ctx, agent1, chains.Base, 0); !errors.Is(err, enclave.ErrUnavailable) {
		t.Fatalf("closed derive: %v", err)
	}
	if _, err := p.Info(ctx); !errors.Is(err, enclave.ErrUnavailable) {
		t.Fatalf("closed info: %v", err)
	}
	if _, err := p.Attest(ctx, agent1, []chains.ID{chains.Base}, []byte("n")); !errors.Is(err, enclave.ErrUnavailable) {
		t.Fatalf("closed attest: %v", err)
	}
}

// TestDocumentedVector checks the dstack vector of docs/enclave.md: the
// root for a known app key (HKDF-SHA256 with salt "RATLS", cross-checked
// with Python's hmac/hashlib) and the account addresses it gives (the
// software derivation from that root).
func TestDocumentedVector(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "enclave.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, "<!-- dstack-vector:begin -->"), strings.Index(doc, "<!-- dstack-vector:end -->")
	if i < 0 || j < i {
		t.Fatal("docs/enclave.md has no dstack vector")
	}
	v := map[string]string{}
	for _, line := range strings.Split(doc[i:j], "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			v[f[0]] = f[1]
		}
	}
	if v["appKey"] != hex.EncodeToString(appKey[:]) || v["rootKeyPath"] != dstack.RootKeyPath || v["agentId"] != agent1 {
		t.Fatalf("vector header: %v", v)
	}
	root := dstacktest.DeriveKey(appKey[:], dstack.RootKeyPath)
	if v["root"] != hex.EncodeToString(root[:]) {
		t.Fatalf("root %x, documented %s", root, v["root"])
	}
	p := open(t, dstacktest.New(t, dstacktest.Config{AppKey: appKey}), dstack.Options{})
	for _, c := range chains.Order() {
		if got := derive(t, p, agent1, c, 0).Address; v[string(c)] != got {
			t.Fatalf("%s: %s, documented %q", c, got, v[string(c)])
		}
	}
}

// spendReq labels a raw test signature as a spend of the key's own agent
// (the enclave signs nothing unlabelled).
func spendReq(key chains.KeyRef, payload []byte) chains.SignRequest {
	return chains.SpendRequest(key, payload, chains.Spend{Key: "test", AgentID: key.AgentID, Chain: key.Chain,
		Asset: "ETH", Amount: chains.NewAmount(big.NewInt(1), 18), Recipient: "test"})
}
