package software_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
)

const agent1 = "00000000-0000-0000-0000-000000000001"

var bg = context.Background()

func mustNew(t testing.TB, root [32]byte) *software.Provider {
	t.Helper()
	p, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func randomRoot(t testing.TB) [32]byte {
	var r [32]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	return r
}

func derive(t testing.TB, p enclave.Provider, id string, c chains.ID, epoch uint32) enclave.PublicKeys {
	t.Helper()
	k, err := p.DeriveKeys(bg, id, c, epoch)
	if err != nil {
		t.Fatalf("DeriveKeys(%s, %s, %d): %v", id, c, epoch, err)
	}
	return k
}

// TestDocumentedVector checks the worked vector of docs/enclave.md (the
// values there were cross-checked with an independent implementation,
// @noble/curves and @noble/hashes).
func TestDocumentedVector(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "enclave.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type section map[string]string
	var global = section{}
	perChain := map[chains.ID]section{}
	cur := global
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "<!-- vector:begin -->":
			in = true
			continue
		case line == "<!-- vector:end -->":
			in = false
			continue
		}
		if !in || line == "" || strings.HasPrefix(line, "```") {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("vector line %q has no value", line)
		}
		v = strings.TrimSpace(v)
		if k == "chain" {
			cur = section{}
			perChain[chains.ID(v)] = cur
			continue
		}
		cur[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(perChain) != len(chains.Order()) {
		t.Fatalf("docs/enclave.md vector has %d chains, want %d", len(perChain), len(chains.Order()))
	}
	if global["root"] != strings.Repeat("00", 32) || global["agentId"] != agent1 || global["epoch"] != "0" {
		t.Fatalf("vector header: %v", global)
	}
	var root [32]byte
	p := mustNew(t, root)
	prk, err := hkdf.Extract(sha256.New, root[:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(prk) != global["prk"] {
		t.Errorf("prk = %x, doc says %s", prk, global["prk"])
	}
	kdf := func(path string) string {
		b, err := hkdf.Expand(sha256.New, prk, path, 32)
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(b)
	}
	info, _ := p.Info(bg)
	if got := info.AttestationPublicKey; got != global["attestationPublicKey"] {
		t.Errorf("attestationPublicKey = %s, doc says %s", got, global["attestationPublicKey"])
	}
	for _, c := range chains.Order() {
		want := perChain[c]
		if want == nil {
			t.Fatalf("vector lacks chain %s", c)
		}
		k := derive(t, p, agent1, c, 0)
		ex, err := p.Export(bg, agent1, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{
			"accountKey":        ex,
			"accountPublicKey":  hex.EncodeToString(k.AccountPublicKey),
			"address":           k.Address,
			"spendingPublicKey": hex.EncodeToString(k.SpendingPublicKey),
			"viewingPublicKey":  hex.EncodeToString(k.ViewingPublicKey),
			"metaAddress":       k.MetaAddress,
			"spendSeed":         kdf(enclave.KeyPath(agent1, c, 0, enclave.RoleSpend)),
			"viewSeed":          kdf(enclave.KeyPath(agent1, c, 0, enclave.RoleView)),
		}
		if "0x"+kdf("veil/agent/"+agent1+"/"+string(c)+"/0/account") != ex {
			t.Errorf("%s: exported key is not K(path) of the documented path", c)
		}
		if len(want) != len(got) {
			t.Errorf("%s: doc has %d values, test checks %d", c, len(want), len(got))
		}
		for name, g := range got {
			if want[name] != g {
				t.Errorf("%s %s = %s, doc says %q", c, name, g, want[name])
			}
		}
	}
}

func TestKeysDistinct(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	other := mustNew(t, randomRoot(t))
	seen := map[string]string{}
	note := func(what, v string) {
		t.Helper()
		if prev, dup := seen[v]; dup {
			t.Fatalf("%s and %s share %s", prev, what, v)
		}
		seen[v] = what
	}
	for _, id := range []string{agent1, "00000000-0000-0000-0000-000000000002", "agent-b"} {
		for _, c := range chains.Order() {
			for _, e := range []uint32{0, 1, 4294967295} {
				k := derive(t, p, id, c, e)
				what := id + "/" + string(c) + "/" + string(rune('0'+e%10))
				note(what+" address", k.Address)
				note(what+" meta", k.MetaAddress)
				note(what+" account", hex.EncodeToString(k.AccountPublicKey))
				note(what+" spend", hex.EncodeToString(k.SpendingPublicKey))
				note(what+" view", hex.EncodeToString(k.ViewingPublicKey))
				if k.Chain != c || k.Epoch != e {
					t.Fatalf("PublicKeys names %s/%d, want %s/%d", k.Chain, k.Epoch, c, e)
				}
				if again := derive(t, p, id, c, e); again.Address != k.Address || again.MetaAddress != k.MetaAddress {
					t.Fatal("derivation is not deterministic")
				}
			}
		}
	}
	if derive(t, other, agent1, chains.Base, 0).Address == derive(t, p, agent1, chains.Base, 0).Address {
		t.Fatal("two roots derived the same address")
	}
}

func TestPublicKeyFormats(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, c := range chains.Order() {
		k := derive(t, p, agent1, c, 0)
		switch c.Family() {
		case chains.FamilyEVM:
			if !common.IsHexAddress(k.Address) || common.HexToAddress(k.Address).Hex() != k.Address {
				t.Errorf("%s address %s is not EIP-55", c, k.Address)
			}
			pub, err := crypto.DecompressPubkey(k.AccountPublicKey)
			if err != nil || crypto.PubkeyToAddress(*pub).Hex() != k.Address {
				t.Errorf("%s address is not the account key's", c)
			}
			m, err := secpstealth.ParseMetaAddress(k.MetaAddress)
			if err != nil || !strings.HasPrefix(k.MetaAddress, "st:eth:0x") ||
				string(m.Spend[:]) != string(k.SpendingPublicKey) || string(m.View[:]) != string(k.ViewingPublicKey) {
				t.Errorf("%s meta-address %s does not hold the stealth keys", c, k.MetaAddress)
			}
		case chains.FamilyStellar:
			raw, err := strkey.Decode(strkey.VersionByteAccountID, k.Address)
			if err != nil || string(raw) != string(k.AccountPublicKey) || k.Address[0] != 'G' {
				t.Errorf("stellar address %s is not the account key's", k.Address)
			}
			if _, err := edstealth.ParseMetaAddressFor(edstealth.Stellar, k.MetaAddress); err != nil {
				t.Errorf("stellar meta-address: %v", err)
			}
		case chains.FamilySolana:
			raw, err := base58.Decode(k.Address)
			if err != nil || string(raw) != string(k.AccountPublicKey) {
				t.Errorf("solana address %s is not the account key's", k.Address)
			}
			if _, err := edstealth.ParseMetaAddressFor(edstealth.Solana, k.MetaAddress); err != nil {
				t.Errorf("solana meta-address: %v", err)
			}
		}
	}
}

func TestInputChecks(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, id := range []string{"", "a/b", "a b", "ä", strings.Repeat("a", 129), "a\n"} {
		if _, err := p.DeriveKeys(bg, id, chains.Base, 0); !errors.Is(err, enclave.ErrInvalidInput) {
			t.Errorf("agent id %q: err = %v", id, err)
		}
	}
	if _, err := p.DeriveKeys(bg, agent1, "all", 0); !errors.Is(err, chains.ErrUnknownChain) {
		t.Errorf("chain all: err = %v", err)
	}
	if _, err := p.Sign(bg, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Base}, make([]byte, 31))); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Errorf("31-byte EVM digest: err = %v", err)
	}
	if _, err := p.Sign(bg, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Base, EphemeralPub: make([]byte, 33)}, make([]byte, 32))); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Errorf("invalid EVM ephemeral key: err = %v", err)
	}
	if _, err := p.Sign(bg, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Solana, EphemeralPub: make([]byte, 31)}, []byte("m"))); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Errorf("short ed25519 ephemeral key: err = %v", err)
	}
	if _, err := p.Sign(bg, spendReq(chains.KeyRef{AgentID: agent1, Chain: chains.Solana}, make([]byte, 64<<10+1))); !errors.Is(err, enclave.ErrInvalidInput) {
		t.Errorf("oversized payload: err = %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := p.DeriveKeys(ctx, agent1, chains.Base, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
}

func TestSignAccountEVM(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, c := range []chains.ID{chains.Horizen, chains.Ethereum, chains.Polygon, chains.Base} {
		k := derive(t, p, agent1, c, 0)
		digest := crypto.Keccak256([]byte("transfer on " + c))
		sig, err := p.Sign(bg, spendReq(chains.KeyRef{AgentID: agent1, Chain: c}, digest))
		if err != nil {
			t.Fatal(err)
		}
		if len(sig) != 65 || sig[64] > 1 {
			t.Fatalf("signature is %d bytes with V=%d", len(sig), sig[64])
		}
		pub, err := crypto.SigToPub(digest, sig)
		if err != nil {
			t.Fatal(err)
		}
		if got := crypto.PubkeyToAddress(*pub).Hex(); got != k.Address {
			t.Fatalf("%s: recovered %s, want %s", c, got, k.Address)
		}
		if !crypto.VerifySignature(crypto.CompressPubkey(pub), digest, sig[:64]) {
			t.Fatal("signature does not verify (high S?)")
		}
		if raw, _ := crypto.Ecrecover(digest, sig); string(crypto.Keccak256(raw[1:])[12:]) != string(common.HexToAddress(k.Address).Bytes()) {
			t.Fatal("Ecrecover disagrees")
		}
	}
}

func TestSignAccountEd25519(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, c := range []chains.ID{chains.Stellar, chains.Solana} {
		k := derive(t, p, agent1, c, 0)
		for _, msg := range [][]byte{nil, []byte("a stellar tx hash, 32 bytes ...."), make([]byte, 1232)} {
			sig, err := p.Sign(bg, spendReq(chains.KeyRef{AgentID: agent1, Chain: c}, msg))
			if err != nil {
				t.Fatal(err)
			}
			if !ed25519.Verify(k.AccountPublicKey, msg, sig) {
				t.Fatalf("%s: signature does not verify", c)
			}
		}
	}
}

func TestSignStealth(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, c := range chains.Order() {
		k := derive(t, p, agent1, c, 3)
		ref := chains.KeyRef{AgentID: agent1, Chain: c, Epoch: 3}
		if c.Family() == chains.FamilyEVM {
			meta, err := secpstealth.ParseMetaAddress(k.MetaAddress)
			if err != nil {
				t.Fatal(err)
			}
			ann, err := secpstealth.Generate(meta, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			ref.EphemeralPub = ann.EphemeralPub[:]
			digest := crypto.Keccak256([]byte("withdraw"))
			sig, err := p.Sign(bg, spendReq(ref, digest))
			if err != nil {
				t.Fatal(err)
			}
			pub, err := crypto.SigToPub(digest, sig)
			if err != nil {
				t.Fatal(err)
			}
			if crypto.PubkeyToAddress(*pub) != common.Address(ann.StealthAddress) {
				t.Fatalf("%s: stealth signature recovers %s, want %x", c, crypto.PubkeyToAddress(*pub).Hex(), ann.StealthAddress)
			}
			if crypto.PubkeyToAddress(*pub).Hex() == k.Address {
				t.Fatal("stealth signature used the account key")
			}
			continue
		}
		ec := edstealth.Stellar
		if c == chains.Solana {
			ec = edstealth.Solana
		}
		meta, err := edstealth.ParseMetaAddressFor(ec, k.MetaAddress)
		if err != nil {
			t.Fatal(err)
		}
		ann, err := edstealth.Generate(meta, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		ref.EphemeralPub = ann.EphemeralPub[:]
		msg := []byte("withdraw from the one-time account")
		sig, err := p.Sign(bg, spendReq(ref, msg))
		if err != nil {
			t.Fatal(err)
		}
		if !ed25519.Verify(ann.OneTimePub[:], msg, sig) {
			t.Fatalf("%s: stealth signature does not verify against the one-time key", c)
		}
		if ed25519.Verify(k.AccountPublicKey, msg, sig) {
			t.Fatal("stealth signature used the account key")
		}
	}
}

func TestScanKeysFindPayments(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, c := range chains.Order() {
		k := derive(t, p, agent1, c, 0)
		sk, err := p.ScanKeys(bg, agent1, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(sk.SpendingPublicKey) != string(k.SpendingPublicKey) || sk.Chain != c {
			t.Fatalf("%s: scan keys do not match the derived keys", c)
		}
		if c.Family() == chains.FamilyEVM {
			meta, _ := secpstealth.ParseMetaAddress(k.MetaAddress)
			ann, _ := secpstealth.Generate(meta, rand.Reader)
			e, err := sk.Secp256k1Entry()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sk.Ed25519Entry(); err == nil {
				t.Fatal("EVM scan keys converted to ed25519")
			}
			s, err := secpstealth.NewScanner([]secpstealth.ViewKeyEntry{e})
			if err != nil {
				t.Fatal(err)
			}
			if m := s.Scan([]secpstealth.Announcement{ann}); len(m) != 1 {
				t.Fatalf("%s: scanner found %d matches", c, len(m))
			}
		} else {
			ec := edstealth.Stellar
			if c == chains.Solana {
				ec = edstealth.Solana
			}
			meta, _ := edstealth.ParseMetaAddressFor(ec, k.MetaAddress)
			ann, _ := edstealth.Generate(meta, rand.Reader)
			e, err := sk.Ed25519Entry()
			if err != nil {
				t.Fatal(err)
			}
			s, err := edstealth.NewScanner([]edstealth.ViewKeyEntry{e})
			if err != nil {
				t.Fatal(err)
			}
			if m := s.Scan([]edstealth.Announcement{ann}); len(m) != 1 {
				t.Fatalf("%s: scanner found %d matches", c, len(m))
			}
		}
		sk.Zero()
		if sk.ViewingPrivateKey != [32]byte{} {
			t.Fatal("Zero left the viewing key")
		}
	}
}

func TestExport(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	for _, c := range chains.Order() {
		k := derive(t, p, agent1, c, 0)
		ex, err := p.Export(bg, agent1, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ex) != 66 || !strings.HasPrefix(ex, "0x") || strings.ToLower(ex) != ex {
			t.Fatalf("export %q is not 0x + 64 lower-case hex digits", ex[:2])
		}
		raw, err := hex.DecodeString(ex[2:])
		if err != nil {
			t.Fatal(err)
		}
		switch c.Family() {
		case chains.FamilyEVM:
			priv, err := crypto.ToECDSA(raw)
			if err != nil {
				t.Fatal(err)
			}
			if crypto.PubkeyToAddress(priv.PublicKey).Hex() != k.Address {
				t.Fatalf("%s: exported key controls another address", c)
			}
		case chains.FamilyStellar:
			kp, err := keypair.FromRawSeed([32]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			if kp.Address() != k.Address {
				t.Fatalf("stellar: exported seed is account %s, want %s", kp.Address(), k.Address)
			}
			full, err := keypair.ParseFull(kp.Seed()) // the "S…" secret a wallet imports
			if err != nil || full.Address() != k.Address || kp.Seed()[0] != 'S' {
				t.Fatalf("stellar: S… seed does not import")
			}
		case chains.FamilySolana:
			kp := ed25519.NewKeyFromSeed(raw) // Solana's 64-byte keypair: seed || public key
			if base58.Encode(kp.Public().(ed25519.PublicKey)) != k.Address {
				t.Fatal("solana: exported seed controls another address")
			}
		}
	}
}

func TestClose(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	p.Close()
	if _, err := p.DeriveKeys(bg, agent1, chains.Base, 0); !errors.Is(err, enclave.ErrUnavailable) {
		t.Fatalf("after Close: err = %v", err)
	}
	if _, err := p.Attest(bg, agent1, []chains.ID{chains.Base}, []byte("n")); !errors.Is(err, enclave.ErrUnavailable) {
		t.Fatalf("Attest after Close: err = %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := mustNew(t, randomRoot(t))
	want := map[chains.ID]string{}
	for _, c := range chains.Order() {
		want[c] = derive(t, p, agent1, c, 0).Address
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range chains.Order() {
				k, err := p.DeriveKeys(bg, agent1, c, 0)
				if err != nil || k.Address != want[c] {
					t.Errorf("concurrent DeriveKeys: %v", err)
				}
				payload := make([]byte, 32)
				if _, err := p.Sign(bg, spendReq(chains.KeyRef{AgentID: agent1, Chain: c}, payload)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

func TestMeasurement(t *testing.T) {
	m := software.Measurement()
	exe, _ := os.Executable()
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Skip("cannot read the test executable")
	}
	d := sha256.Sum256(b)
	if m != "sha256:"+hex.EncodeToString(d[:]) {
		t.Fatalf("measurement %s is not the executable's SHA-256", m)
	}
}

// spendReq labels a raw test signature as a spend of the key's own agent
// (the enclave signs nothing unlabelled).
func spendReq(key chains.KeyRef, payload []byte) chains.SignRequest {
	return chains.SpendRequest(key, payload, chains.Spend{Key: "test", AgentID: key.AgentID, Chain: key.Chain,
		Asset: "ETH", Amount: chains.NewAmount(big.NewInt(1), 18), Recipient: "test"})
}
