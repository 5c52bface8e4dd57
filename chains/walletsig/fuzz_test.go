package walletsig

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// Fuzz targets. Seed corpora live in testdata/fuzz; run one with e.g.
//
//	go test ./chains/walletsig -run '^$' -fuzz '^FuzzParseMessage$' -fuzztime 30s

// FuzzParseMessage: the parser never panics, and it is strict: whatever it
// accepts is exactly the canonical rendering of what it parsed, so two
// different texts never parse to the same fields.
func FuzzParseMessage(f *testing.F) {
	f.Add(CreateMessage("alice", "base", "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", issued))
	f.Add(CreateMessageShort("alice", "all", "AKnL4NNf3DGWZJS6cPknBuEGnVsV4A4m5tgebLHaRSZ9"))
	f.Add(ExportMessage(agentID, "GCFIRY65OQE7DFP5KLNS2PF2LVZMUZYJX4OZIEQ36N2IQANUB5XVYOJR", issued))
	f.Add("Veil wants you to create agent a.veil.veil on b..\nWallet: w\nIssued At: 2026-01-15T12:00:00.123456789Z")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMessage(s)
		if err != nil {
			if !errors.Is(err, ErrBadMessage) {
				t.Fatalf("error of kind %v", err)
			}
			return
		}
		if got := m.render(); got != s {
			t.Fatalf("render(parse(%q)) = %q", s, got)
		}
		if !token(m.subject) || !token(m.wallet) || (m.action == ActionCreate) != token(m.chain) {
			t.Fatalf("fields are not tokens: %+v", m)
		}
		if (m.issuedAt == "") != m.when.IsZero() {
			t.Fatalf("timestamp %q parsed as %v", m.issuedAt, m.when)
		}
	})
}

// FuzzDecodeEVMSignature: never panics; what it accepts is 65 bytes with
// v in {0, 1} and a low, non-zero s.
func FuzzDecodeEVMSignature(f *testing.F) {
	sig := SignEVM(evmKey, "hello")
	f.Add(sig)
	f.Add(strings.ToUpper(sig[2:]))
	f.Add(highS(sig))
	f.Add("0x" + strings.Repeat("ff", 65))
	f.Fuzz(func(t *testing.T, s string) {
		b, err := decodeEVMSignature(s)
		if err != nil {
			if !errors.Is(err, ErrBadSignature) {
				t.Fatalf("error of kind %v", err)
			}
			return
		}
		sv := new(big.Int).SetBytes(b[32:64])
		if len(b) != 65 || b[64] > 1 || sv.Sign() == 0 || sv.Cmp(secp256k1HalfN) > 0 {
			t.Fatalf("accepted %q as %x", s, b)
		}
	})
}

// FuzzDecodeEd25519Signature: never panics; every candidate is 64 bytes and
// there are at most two (hex, base58 and base64 cannot all fit one text).
func FuzzDecodeEd25519Signature(f *testing.F) {
	f.Add(SignEd25519Base64(edKey, "hello"), false)
	f.Add(SignSolana(edKey, "hello"), true)
	f.Add(strings.Repeat("0", 128), true)
	f.Add(strings.TrimRight(SignEd25519Base64(edKey, "hello"), "="), true)
	f.Fuzz(func(t *testing.T, s string, solana bool) {
		scheme := SchemeStellar
		if solana {
			scheme = SchemeSolana
		}
		cands, err := decodeEd25519Signature(scheme, s)
		if err != nil {
			if !errors.Is(err, ErrBadSignature) {
				t.Fatalf("error of kind %v", err)
			}
			return
		}
		if len(cands) == 0 || len(cands) > 2 {
			t.Fatalf("%d candidates for %q", len(cands), s)
		}
		for _, c := range cands {
			if len(c) != 64 {
				t.Fatalf("candidate of %d bytes for %q", len(c), s)
			}
		}
	})
}

// FuzzNormalizeWallet: never panics; normalization is idempotent and keeps
// the scheme.
func FuzzNormalizeWallet(f *testing.F) {
	for _, w := range []string{evmAddr, strings.ToLower(evmAddr), xlmAddr, solAddr, "S" + xlmAddr[1:], "0x" + strings.Repeat("a", 64)} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w string) {
		norm, scheme, err := NormalizeWallet(w)
		if err != nil {
			if !errors.Is(err, ErrBadWallet) && !errors.Is(err, ErrMissingField) {
				t.Fatalf("error of kind %v", err)
			}
			return
		}
		norm2, scheme2, err := NormalizeWallet(norm)
		if err != nil || norm2 != norm || scheme2 != scheme {
			t.Fatalf("NormalizeWallet(%q) = %q %s; again: %q %s %v", w, norm, scheme, norm2, scheme2, err)
		}
		if !strings.EqualFold(norm, w) {
			t.Fatalf("NormalizeWallet(%q) = %q changed more than case", w, norm)
		}
	})
}

// FuzzVerifyCreate: whole-request fuzzing. Never panics, every error is a
// *Error of one kind, and nothing but a real signature is accepted.
func FuzzVerifyCreate(f *testing.F) {
	msg := CreateMessage("alice", "base", evmAddr, issued)
	f.Add("alice", "base", evmAddr, SignEVM(evmKey, msg), msg)
	msg = CreateMessage("alice", "solana", solAddr, issued)
	f.Add("alice", "solana", solAddr, SignSolana(edKey, msg), msg)
	f.Add("alice", "stellar", xlmAddr, SignEd25519Base64(edKey, "x"), "")
	f.Fuzz(func(t *testing.T, name, chain, wallet, sig, msg string) {
		p, err := VerifyCreate(CreateRequest{Name: name, Chain: chain, Wallet: wallet, Signature: sig, Message: msg}, now)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind() == e {
				t.Fatalf("error %v is not a specific *Error", err)
			}
			return
		}
		// Accepted: it must be one of the seeds' genuine signatures.
		if p.Wallet != strings.ToLower(evmAddr) && p.Wallet != solAddr && p.Wallet != xlmAddr {
			t.Fatalf("accepted a signature for wallet %q", p.Wallet)
		}
		if _, err := VerifyCreate(CreateRequest{Name: name, Chain: chain, Wallet: wallet, Signature: sig, Message: msg}, now.Add(time.Hour)); p.IssuedAt.IsZero() == (err != nil) {
			t.Fatalf("time window not applied: %v", err)
		}
	})
}
