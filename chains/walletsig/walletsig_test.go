package walletsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
)

// Fixtures: the documented test keys and a second key of each kind.
var (
	evmKey   = mustECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	evmKey2  = mustECDSA("8da4ef21b864d2cc526dbdb2a120bd2874c36c9d0a1fb7f8c63d7f7a8b41de8f")
	edKey    = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	edKey2   = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	evmAddr  = EVMAddress(&evmKey.PublicKey) // 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23
	evmAddr2 = EVMAddress(&evmKey2.PublicKey)
	xlmAddr  = StellarAddress(edKey.Public().(ed25519.PublicKey))
	xlmAddr2 = StellarAddress(edKey2.Public().(ed25519.PublicKey))
	solAddr  = SolanaAddress(edKey.Public().(ed25519.PublicKey))
	solAddr2 = SolanaAddress(edKey2.Public().(ed25519.PublicKey))

	issued = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	now    = issued.Add(5 * time.Minute)
)

const agentID = "0b6c9d3e-4f5a-4b7c-8d9e-0f1a2b3c4d5e"

func mustECDSA(h string) *ecdsa.PrivateKey {
	k, err := crypto.HexToECDSA(h)
	if err != nil {
		panic(err)
	}
	return k
}

// evmSig returns SignEVM's signature re-encoded: v0 makes v 0/1, bare drops
// the 0x prefix, upper upper-cases the hex.
func evmSig(msg string, v0, bare, upper bool) string {
	s := SignEVM(evmKey, msg)
	b, _ := hex.DecodeString(s[2:])
	if v0 {
		b[64] -= 27
	}
	h := hex.EncodeToString(b)
	if upper {
		h = strings.ToUpper(h)
	}
	if bare {
		return h
	}
	return "0x" + h
}

// highS returns the malleated twin (r, n−s, v^1) of an EVM signature: valid
// for the same key and message, but not canonical.
func highS(sig string) string {
	b, _ := hex.DecodeString(strings.TrimPrefix(sig, "0x"))
	s := new(big.Int).SetBytes(b[32:64])
	s.Sub(secp256k1N, s)
	s.FillBytes(b[32:64])
	if b[64] >= 27 {
		b[64] = 27 + ((b[64] - 27) ^ 1)
	} else {
		b[64] ^= 1
	}
	return "0x" + hex.EncodeToString(b)
}

func edRaw(priv ed25519.PrivateKey, msg string) []byte { return ed25519.Sign(priv, []byte(msg)) }

func TestVerifyCreate(t *testing.T) {
	evmMsg := CreateMessage("alice", "base", evmAddr, issued)
	xlmMsg := CreateMessage("alice", "stellar", xlmAddr, issued)
	solMsg := CreateMessage("alice", "solana", solAddr, issued)
	evmShort := CreateMessageShort("alice", "base", evmAddr)
	frac := "Veil wants you to create agent alice.veil on base.\nWallet: " + evmAddr + "\nIssued At: 2026-01-15T12:00:00.123Z"
	lowerWalletMsg := CreateMessage("alice", "base", strings.ToLower(evmAddr), issued)
	allMsg := CreateMessage("alice", "all", evmAddr, issued)

	evm := func(msg, sig string) CreateRequest {
		return CreateRequest{Name: "alice", Chain: "base", Wallet: evmAddr, Message: msg, Signature: sig}
	}
	xlm := func(msg, sig string) CreateRequest {
		return CreateRequest{Name: "alice", Chain: "stellar", Wallet: xlmAddr, Message: msg, Signature: sig}
	}
	sol := func(msg, sig string) CreateRequest {
		return CreateRequest{Name: "alice", Chain: "solana", Wallet: solAddr, Message: msg, Signature: sig}
	}
	with := func(r CreateRequest, f func(*CreateRequest)) CreateRequest { f(&r); return r }
	xlmRaw := edRaw(edKey, xlmMsg)
	solRaw := edRaw(edKey, solMsg)

	tests := []struct {
		name string
		req  CreateRequest
		now  time.Time
		want *Error // nil: success
	}{
		// EVM: accepted encodings.
		{"evm 0x hex v27/28", evm(evmMsg, SignEVM(evmKey, evmMsg)), now, nil},
		{"evm bare hex", evm(evmMsg, evmSig(evmMsg, false, true, false)), now, nil},
		{"evm upper hex", evm(evmMsg, evmSig(evmMsg, false, false, true)), now, nil},
		{"evm v 0/1", evm(evmMsg, evmSig(evmMsg, true, false, false)), now, nil},
		{"evm v 0/1 bare", evm(evmMsg, evmSig(evmMsg, true, true, false)), now, nil},
		{"evm fractional seconds", evm(frac, SignEVM(evmKey, frac)), now, nil},
		{"evm message omitted", evm("", SignEVM(evmKey, evmShort)), now, nil},
		{"evm short message given", evm(evmShort, SignEVM(evmKey, evmShort)), now, nil},
		{"evm lowercase request wallet, checksum in message", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Wallet = strings.ToLower(evmAddr) }), now, nil},
		{"evm checksum request wallet, lowercase in message", evm(lowerWalletMsg, SignEVM(evmKey, lowerWalletMsg)), now, nil},
		{"evm uppercase request wallet", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Wallet = "0x" + strings.ToUpper(evmAddr[2:]) }), now, nil},
		{"evm chain all", with(evm(allMsg, SignEVM(evmKey, allMsg)), func(r *CreateRequest) { r.Chain = "all" }), now, nil},
		{"evm window: exactly 10 min old", evm(evmMsg, SignEVM(evmKey, evmMsg)), issued.Add(MaxAge), nil},
		{"evm window: 1 min ahead", evm(evmMsg, SignEVM(evmKey, evmMsg)), issued.Add(-MaxSkew), nil},

		// EVM: rejected.
		{"evm other signer", evm(evmMsg, SignEVM(evmKey2, evmMsg)), now, ErrSignatureMismatch},
		{"evm other wallet in request", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Wallet = evmAddr2 }), now, ErrBadMessage},
		{"evm tampered message", evm(evmMsg, SignEVM(evmKey, CreateMessage("alice", "base", evmAddr, issued.Add(time.Second)))), now, ErrSignatureMismatch},
		{"evm omitted message, signed full", evm("", SignEVM(evmKey, evmMsg)), now, ErrSignatureMismatch},
		{"evm name differs", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Name = "bob" }), now, ErrBadMessage},
		{"evm chain differs", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Chain = "polygon" }), now, ErrBadMessage},
		{"evm export message", evm(ExportMessage(agentID, evmAddr, issued), SignEVM(evmKey, ExportMessage(agentID, evmAddr, issued))), now, ErrBadMessage},
		{"evm expired", evm(evmMsg, SignEVM(evmKey, evmMsg)), issued.Add(MaxAge + time.Second), ErrExpired},
		{"evm future beyond skew", evm(evmMsg, SignEVM(evmKey, evmMsg)), issued.Add(-MaxSkew - time.Second), ErrNotYetValid},
		{"evm high s", evm(evmMsg, highS(SignEVM(evmKey, evmMsg))), now, ErrBadSignature},
		{"evm v 29", evm(evmMsg, SignEVM(evmKey, evmMsg)[:130]+"1d"), now, ErrBadSignature},
		{"evm v 2", evm(evmMsg, SignEVM(evmKey, evmMsg)[:130]+"02"), now, ErrBadSignature},
		{"evm 64-byte signature", evm(evmMsg, SignEVM(evmKey, evmMsg)[:130]), now, ErrBadSignature},
		{"evm r zero", evm(evmMsg, "0x"+strings.Repeat("00", 32)+SignEVM(evmKey, evmMsg)[66:]), now, ErrBadSignature},
		{"evm not hex", evm(evmMsg, "0x"+strings.Repeat("zz", 65)), now, ErrBadSignature},
		{"evm base64 signature", evm(evmMsg, base64.StdEncoding.EncodeToString(make([]byte, 65))), now, ErrBadSignature},
		{"evm huge signature", evm(evmMsg, strings.Repeat("a", 10000)), now, ErrBadSignature},
		{"evm wallet bad checksum", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Wallet = "0x2C7536E3605D9C16a7a3D7b1898e529396a65c23" }), now, ErrBadWallet},
		{"evm wallet short", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Wallet = evmAddr[:41] }), now, ErrBadWallet},
		{"evm wallet is a private key", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) {
			r.Wallet = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
		}), now, ErrBadWallet},
		{"evm wallet 0X prefix", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Wallet = "0X" + evmAddr[2:] }), now, ErrBadWallet},
		{"evm 0X wallet in message", evm(strings.Replace(evmMsg, "0x", "0X", 1), SignEVM(evmKey, strings.Replace(evmMsg, "0x", "0X", 1))), now, ErrBadMessage},

		// Message format.
		{"trailing newline", evm(evmMsg+"\n", SignEVM(evmKey, evmMsg+"\n")), now, ErrBadMessage},
		{"CRLF", evm(strings.ReplaceAll(evmMsg, "\n", "\r\n"), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"four lines", evm(evmMsg+"\nNonce: 1", SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"one line", evm("Veil wants you to create agent alice.veil on base.", SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"double space", evm(strings.Replace(evmMsg, "Wallet: ", "Wallet:  ", 1), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"missing period", evm(strings.Replace(evmMsg, "base.", "base", 1), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"lowercase veil", evm(strings.Replace(evmMsg, "Veil", "veil", 1), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"offset timestamp", evm(strings.Replace(evmMsg, "12:00:00Z", "12:00:00+00:00", 1), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"date-only timestamp", evm(strings.Replace(evmMsg, "2026-01-15T12:00:00Z", "2026-01-15", 1), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"month 13", evm(strings.Replace(evmMsg, "2026-01-15", "2026-13-15", 1), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"lines swapped", evm("Wallet: "+evmAddr+"\nVeil wants you to create agent alice.veil on base.", SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"too long", evm(evmMsg+strings.Repeat("x", MaxMessageLen), SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"name with space", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Name = "al ice" }), now, ErrBadMessage},

		// Stellar.
		{"stellar base64", xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), now, nil},
		{"stellar raw base64", xlm(xlmMsg, base64.RawStdEncoding.EncodeToString(xlmRaw)), now, nil},
		{"stellar hex", xlm(xlmMsg, hex.EncodeToString(xlmRaw)), now, nil},
		{"stellar 0x hex upper", xlm(xlmMsg, "0x"+strings.ToUpper(hex.EncodeToString(xlmRaw))), now, nil},
		{"stellar SEP-53", xlm(xlmMsg, SignStellarSEP53(edKey, xlmMsg)), now, nil},
		{"stellar omitted message", xlm("", SignEd25519Base64(edKey, CreateMessageShort("alice", "stellar", xlmAddr))), now, nil},
		{"stellar other signer", xlm(xlmMsg, SignEd25519Base64(edKey2, xlmMsg)), now, ErrSignatureMismatch},
		{"stellar other wallet", with(xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), func(r *CreateRequest) { r.Wallet = xlmAddr2 }), now, ErrBadMessage},
		{"stellar base58 not accepted", xlm(xlmMsg, base58.Encode(xlmRaw)), now, ErrBadSignature},
		{"stellar url base64 not accepted", xlm(xlmMsg, base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 64))), now, ErrBadSignature},
		{"stellar short signature", xlm(xlmMsg, base64.StdEncoding.EncodeToString(xlmRaw[:63])), now, ErrBadSignature},
		{"stellar lowercase wallet", with(xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), func(r *CreateRequest) { r.Wallet = strings.ToLower(xlmAddr) }), now, ErrBadWallet},
		{"stellar bad checksum", with(xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), func(r *CreateRequest) { r.Wallet = xlmAddr[:55] + "A" }), now, ErrBadWallet},
		{"stellar secret seed as wallet", with(xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), func(r *CreateRequest) { r.Wallet = "S" + xlmAddr[1:] }), now, ErrBadWallet},
		{"stellar expired", xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), issued.Add(time.Hour), ErrExpired},

		// Solana.
		{"solana base58", sol(solMsg, SignSolana(edKey, solMsg)), now, nil},
		{"solana base64", sol(solMsg, SignEd25519Base64(edKey, solMsg)), now, nil},
		{"solana raw base64", sol(solMsg, base64.RawStdEncoding.EncodeToString(solRaw)), now, nil},
		{"solana hex", sol(solMsg, hex.EncodeToString(solRaw)), now, nil},
		{"solana chain all", sol(CreateMessage("alice", "all", solAddr, issued), SignSolana(edKey, CreateMessage("alice", "all", solAddr, issued))).withChain("all"), now, nil},
		{"solana other signer", sol(solMsg, SignSolana(edKey2, solMsg)), now, ErrSignatureMismatch},
		{"solana other wallet", with(sol(solMsg, SignSolana(edKey, solMsg)), func(r *CreateRequest) { r.Wallet = solAddr2 }), now, ErrBadMessage},
		{"solana SEP-53 not accepted", sol(solMsg, SignStellarSEP53(edKey, solMsg)), now, ErrSignatureMismatch},
		{"solana garbage signature", sol(solMsg, "not a signature"), now, ErrBadSignature},
		{"solana wallet non-canonical", with(sol(solMsg, SignSolana(edKey, solMsg)), func(r *CreateRequest) { r.Wallet = "1" + solAddr }), now, ErrBadWallet},
		{"solana secret key as wallet", with(sol(solMsg, SignSolana(edKey, solMsg)), func(r *CreateRequest) { r.Wallet = base58.Encode(edKey) }), now, ErrBadWallet},

		// Chain and scheme.
		{"stellar chain, evm wallet", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Chain = "stellar" }), now, ErrSchemeMismatch},
		{"base chain, stellar wallet", with(xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), func(r *CreateRequest) { r.Chain = "base" }), now, ErrSchemeMismatch},
		{"solana chain, stellar wallet", with(xlm(xlmMsg, SignEd25519Base64(edKey, xlmMsg)), func(r *CreateRequest) { r.Chain = "solana" }), now, ErrSchemeMismatch},
		{"stellar chain, solana wallet", with(sol(solMsg, SignSolana(edKey, solMsg)), func(r *CreateRequest) { r.Chain = "stellar" }), now, ErrSchemeMismatch},
		{"unknown chain", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Chain = "bitcoin" }), now, ErrUnknownChain},
		{"chain case", with(evm(evmMsg, SignEVM(evmKey, evmMsg)), func(r *CreateRequest) { r.Chain = "Base" }), now, ErrUnknownChain},

		// Missing fields.
		{"no name", with(evm(evmMsg, "x"), func(r *CreateRequest) { r.Name = "" }), now, ErrMissingField},
		{"no chain", with(evm(evmMsg, "x"), func(r *CreateRequest) { r.Chain = "" }), now, ErrMissingField},
		{"no wallet", with(evm(evmMsg, "x"), func(r *CreateRequest) { r.Wallet = "" }), now, ErrMissingField},
		{"no signature", evm(evmMsg, ""), now, ErrMissingField},
		{"nothing", CreateRequest{}, now, ErrMissingField},
		{"garbage wallet", with(evm(evmMsg, "x"), func(r *CreateRequest) { r.Wallet = "hello" }), now, ErrBadWallet},
		{"muxed wallet", with(evm(evmMsg, "x"), func(r *CreateRequest) { r.Wallet = "M" + strings.Repeat("A", 68) }), now, ErrBadWallet},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := VerifyCreate(tc.req, tc.now)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("VerifyCreate: %v", err)
				}
				checkProof(t, p, ActionCreate, tc.req.Wallet)
				return
			}
			checkErr(t, err, tc.want, tc.req.Signature)
		})
	}
}

func (r CreateRequest) withChain(c string) CreateRequest { r.Chain = c; return r }

func TestVerifyExport(t *testing.T) {
	evmMsg := ExportMessage(agentID, evmAddr, issued)
	xlmMsg := ExportMessage(agentID, xlmAddr, issued)
	solMsg := ExportMessage(agentID, solAddr, issued)
	lower := strings.ToLower(evmAddr)
	req := func(wallet, msg, sig string) ExportRequest {
		return ExportRequest{AgentID: agentID, Wallet: wallet, Message: msg, Signature: sig}
	}
	createMsg := CreateMessage("alice", "base", evmAddr, issued)
	shortMsg := exportPrefix + agentID + ".\n" + walletPrefix + evmAddr

	tests := []struct {
		name string
		req  ExportRequest
		now  time.Time
		want *Error
	}{
		{"evm", req(evmAddr, evmMsg, SignEVM(evmKey, evmMsg)), now, nil},
		{"evm stored lowercase", req(lower, evmMsg, SignEVM(evmKey, evmMsg)), now, nil},
		{"evm v 0/1", req(lower, evmMsg, evmSig(evmMsg, true, true, false)), now, nil},
		{"stellar", req(xlmAddr, xlmMsg, SignEd25519Base64(edKey, xlmMsg)), now, nil},
		{"stellar SEP-53", req(xlmAddr, xlmMsg, SignStellarSEP53(edKey, xlmMsg)), now, nil},
		{"solana", req(solAddr, solMsg, SignSolana(edKey, solMsg)), now, nil},
		{"no message", req(evmAddr, "", SignEVM(evmKey, evmMsg)), now, ErrMissingField},
		{"no signature", req(evmAddr, evmMsg, ""), now, ErrMissingField},
		{"no agent id", ExportRequest{Wallet: evmAddr, Message: evmMsg, Signature: "x"}, now, ErrMissingField},
		{"no timestamp", req(evmAddr, shortMsg, SignEVM(evmKey, shortMsg)), now, ErrBadMessage},
		{"create message", req(evmAddr, createMsg, SignEVM(evmKey, createMsg)), now, ErrBadMessage},
		{"other agent", ExportRequest{AgentID: "another", Wallet: evmAddr, Message: evmMsg, Signature: SignEVM(evmKey, evmMsg)}, now, ErrBadMessage},
		{"not the owner wallet", req(evmAddr2, evmMsg, SignEVM(evmKey, evmMsg)), now, ErrBadMessage},
		{"signed by another key", req(evmAddr, evmMsg, SignEVM(evmKey2, evmMsg)), now, ErrSignatureMismatch},
		{"solana signed by another key", req(solAddr, solMsg, SignSolana(edKey2, solMsg)), now, ErrSignatureMismatch},
		{"expired", req(evmAddr, evmMsg, SignEVM(evmKey, evmMsg)), issued.Add(11 * time.Minute), ErrExpired},
		{"future", req(evmAddr, evmMsg, SignEVM(evmKey, evmMsg)), issued.Add(-2 * time.Minute), ErrNotYetValid},
		{"high s", req(evmAddr, evmMsg, highS(SignEVM(evmKey, evmMsg))), now, ErrBadSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := VerifyExport(tc.req, tc.now)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("VerifyExport: %v", err)
				}
				checkProof(t, p, ActionExport, tc.req.Wallet)
				if p.IssuedAt.IsZero() || !p.KeepUntil.Equal(p.IssuedAt.Add(MaxAge)) {
					t.Errorf("IssuedAt %v KeepUntil %v", p.IssuedAt, p.KeepUntil)
				}
				return
			}
			checkErr(t, err, tc.want, tc.req.Signature)
		})
	}
}

func checkProof(t *testing.T, p Proof, a Action, reqWallet string) {
	t.Helper()
	norm, scheme, err := NormalizeWallet(reqWallet)
	if err != nil {
		t.Fatal(err)
	}
	if p.Action != a || p.Scheme != scheme || p.Wallet != norm {
		t.Errorf("proof %+v: want action %s scheme %s wallet %s", p, a, scheme, norm)
	}
	if scheme == SchemeEVM {
		if p.Wallet != strings.ToLower(p.Wallet) || p.WalletChecksum != evmAddr && p.WalletChecksum != evmAddr2 {
			t.Errorf("EVM wallet forms %q %q", p.Wallet, p.WalletChecksum)
		}
	} else if p.WalletChecksum != p.Wallet {
		t.Errorf("WalletChecksum %q != Wallet %q", p.WalletChecksum, p.Wallet)
	}
	if p.ReplayKey != ReplayKey(p.Scheme, p.Wallet, p.Message) || len(p.ReplayKey) != 64 {
		t.Errorf("ReplayKey %q", p.ReplayKey)
	}
	if p.IssuedAt.IsZero() != p.KeepUntil.IsZero() {
		t.Errorf("IssuedAt %v KeepUntil %v", p.IssuedAt, p.KeepUntil)
	}
}

func checkErr(t *testing.T, err error, want *Error, sig string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %q; want kind %q", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind() != want {
		t.Fatalf("error %q is not a *Error of the wanted kind", err)
	}
	for _, other := range allKinds {
		if other != want && errors.Is(err, other) {
			t.Errorf("error %q also matches %q", err, other)
		}
	}
	msg := err.Error()
	if msg == "" || len(msg) > 400 {
		t.Errorf("error message length %d: %q", len(msg), msg)
	}
	if len(sig) >= 16 && strings.Contains(msg, sig) {
		t.Errorf("error message echoes the signature: %q", msg)
	}
	if strings.Contains(msg, "4c0883a69102937d") {
		t.Errorf("error message echoes a secret: %q", msg)
	}
}

var allKinds = []*Error{ErrMissingField, ErrUnknownChain, ErrBadWallet, ErrSchemeMismatch, ErrBadMessage, ErrExpired, ErrNotYetValid, ErrBadSignature, ErrSignatureMismatch, ErrReplayed}

func TestReplayKey(t *testing.T) {
	msg := CreateMessage("alice", "base", evmAddr, issued)
	base := CreateRequest{Name: "alice", Chain: "base", Wallet: evmAddr, Message: msg}
	keys := map[string]bool{}
	for _, sig := range []string{
		SignEVM(evmKey, msg),
		evmSig(msg, true, false, false),
		evmSig(msg, false, true, true),
		evmSig(msg, true, true, false),
	} {
		r := base
		r.Signature = sig
		p, err := VerifyCreate(r, now)
		if err != nil {
			t.Fatal(err)
		}
		keys[p.ReplayKey] = true
		r.Wallet = strings.ToLower(evmAddr) // same message, request wallet in another case
		p, err = VerifyCreate(r, now)
		if err != nil {
			t.Fatal(err)
		}
		keys[p.ReplayKey] = true
	}
	if len(keys) != 1 {
		t.Errorf("EVM re-encodings gave %d replay keys, want 1", len(keys))
	}
	// The malleated twin is valid ECDSA for the same key, so it must be
	// rejected outright (it would otherwise be a second "different" signature).
	r := base
	r.Signature = highS(SignEVM(evmKey, msg))
	if _, err := VerifyCreate(r, now); !errors.Is(err, ErrBadSignature) {
		t.Errorf("high-s twin: %v", err)
	}
	if b, _ := hex.DecodeString(r.Signature[2:]); func() bool {
		pub, err := crypto.SigToPub(eip191Hash(msg), append(b[:64:64], b[64]-27))
		return err != nil || crypto.PubkeyToAddress(*pub).Hex() != evmAddr
	}() {
		t.Errorf("test bug: the high-s twin does not recover to the signer")
	}

	solMsg := CreateMessage("alice", "solana", solAddr, issued)
	raw := edRaw(edKey, solMsg)
	keys = map[string]bool{}
	for _, sig := range []string{base58.Encode(raw), base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw), hex.EncodeToString(raw)} {
		p, err := VerifyCreate(CreateRequest{Name: "alice", Chain: "solana", Wallet: solAddr, Message: solMsg, Signature: sig}, now)
		if err != nil {
			t.Fatal(err)
		}
		keys[p.ReplayKey] = true
	}
	if len(keys) != 1 {
		t.Errorf("Solana re-encodings gave %d replay keys, want 1", len(keys))
	}

	// Different authorizations get different keys.
	distinct := []string{
		ReplayKey(SchemeEVM, "0xabc", msg),
		ReplayKey(SchemeEVM, "0xabd", msg),
		ReplayKey(SchemeSolana, "0xabc", msg),
		ReplayKey(SchemeEVM, "0xabc", msg+" "),
		ReplayKey(SchemeEVM, "0xab", "c\x00"+msg),
	}
	seen := map[string]bool{}
	for _, k := range distinct {
		if seen[k] {
			t.Errorf("replay key collision %s", k)
		}
		seen[k] = true
	}
}

func TestMessageBuilders(t *testing.T) {
	at := time.Date(2026, 1, 15, 13, 0, 0, 999_000_000, time.FixedZone("CET", 3600))
	tests := []struct{ got, want string }{
		{CreateMessage("alice", "base", "0xW", at), "Veil wants you to create agent alice.veil on base.\nWallet: 0xW\nIssued At: 2026-01-15T12:00:00Z"},
		{CreateMessageShort("alice", "all", "G1"), "Veil wants you to create agent alice.veil on all.\nWallet: G1"},
		{ExportMessage("id-1", "So1", at), "Veil wants you to export the private key of agent id-1.\nWallet: So1\nIssued At: 2026-01-15T12:00:00Z"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q\nwant %q", tc.got, tc.want)
		}
		m, err := parseMessage(tc.got)
		if err != nil || m.render() != tc.got {
			t.Errorf("parse/render %q: %v", tc.got, err)
		}
	}
}

func TestNormalizeWallet(t *testing.T) {
	tests := []struct {
		in, norm string
		scheme   Scheme
		err      *Error
	}{
		{evmAddr, strings.ToLower(evmAddr), SchemeEVM, nil},
		{strings.ToLower(evmAddr), strings.ToLower(evmAddr), SchemeEVM, nil},
		{"0x" + strings.ToUpper(evmAddr[2:]), strings.ToLower(evmAddr), SchemeEVM, nil},
		{xlmAddr, xlmAddr, SchemeStellar, nil},
		{solAddr, solAddr, SchemeSolana, nil},
		{"11111111111111111111111111111111", "11111111111111111111111111111111", SchemeSolana, nil}, // the system program: 32 zero bytes
		{"", "", "", ErrMissingField},
		{"0x", "", "", ErrBadWallet},
		{"0x" + strings.Repeat("g", 40), "", "", ErrBadWallet},
		{" " + evmAddr, "", "", ErrBadWallet},
		{xlmAddr + " ", "", "", ErrBadWallet},
		{solAddr[:20], "", "", ErrBadWallet},
		{"0OIl", "", "", ErrBadWallet},
	}
	for _, tc := range tests {
		norm, scheme, err := NormalizeWallet(tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("NormalizeWallet(%q) error %v, want %v", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || norm != tc.norm || scheme != tc.scheme {
			t.Errorf("NormalizeWallet(%q) = %q, %q, %v; want %q, %q", tc.in, norm, scheme, err, tc.norm, tc.scheme)
		}
	}
}

func TestChainScheme(t *testing.T) {
	for chain, want := range map[string]Scheme{"horizen": SchemeEVM, "ethereum": SchemeEVM, "polygon": SchemeEVM, "base": SchemeEVM, "stellar": SchemeStellar, "solana": SchemeSolana, "all": ""} {
		if got, err := ChainScheme(chain); err != nil || got != want {
			t.Errorf("ChainScheme(%q) = %q, %v", chain, got, err)
		}
	}
	if _, err := ChainScheme("tron"); !errors.Is(err, ErrUnknownChain) {
		t.Errorf("ChainScheme(tron): %v", err)
	}
}

func TestSentinelsAreDistinct(t *testing.T) {
	for i, a := range allKinds {
		if a.Error() == "" || a.Kind() != a {
			t.Errorf("sentinel %d: %q", i, a)
		}
		for j, b := range allKinds {
			if i != j && errors.Is(a, b) {
				t.Errorf("%q matches %q", a, b)
			}
		}
	}
}
