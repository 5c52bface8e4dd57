package walletsig

import (
	"crypto/ed25519"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
	"github.com/stellar/go-stellar-sdk/strkey"
)

// TestDocExamples keeps docs/signatures.md true: every worked example there
// is produced by the helpers, accepted by Verify*, and present in the page
// verbatim.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/signatures.md")
	if err != nil {
		t.Fatal(err)
	}
	inDoc := func(s string) {
		t.Helper()
		if !strings.Contains(string(doc), s) {
			t.Errorf("docs/signatures.md does not contain %q", s)
		}
	}
	// A message is shown in the doc as a fenced block of its lines.
	msgInDoc := func(m string) { t.Helper(); inDoc("```\n" + m + "\n```") }

	const (
		evmPriv   = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
		evmWallet = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
		xlmSeed   = "SAAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQC5MY"
		xlmWallet = "GCFIRY65OQE7DFP5KLNS2PF2LVZMUZYJX4OZIEQ36N2IQANUB5XVYOJR"
		solSecret = "2AXDGYSE4f2sz7tvMMzyHvUfcoJmxudvdhBcmiUSo6iuCXagjUCKEQF21awZnUGxmwD4m9vGXuC3qieHXJQHAcT"
		solWallet = "AKnL4NNf3DGWZJS6cPknBuEGnVsV4A4m5tgebLHaRSZ9"
		id        = "0b6c9d3e-4f5a-4b7c-8d9e-0f1a2b3c4d5e"
		ts        = "2026-01-15T12:00:00Z"
	)
	at, _ := time.Parse(time.RFC3339, ts)
	verifyAt := at.Add(3 * time.Minute)

	// Keys and addresses.
	key, err := crypto.HexToECDSA(evmPriv[2:])
	if err != nil {
		t.Fatal(err)
	}
	pub := edKey.Public().(ed25519.PublicKey)
	for _, c := range []struct{ got, want string }{
		{EVMAddress(&key.PublicKey), evmWallet},
		{StellarAddress(pub), xlmWallet},
		{strkey.MustEncode(strkey.VersionByteSeed, edKey.Seed()), xlmSeed},
		{SolanaAddress(pub), solWallet},
		{base58.Encode(edKey), solSecret},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
		inDoc(c.want)
	}
	inDoc(evmPriv)
	inDoc("ed25519 seed 32 × `0x01`")

	type example struct {
		name   string
		msg    string
		sig    string // as the doc shows it
		signed string // what the helper produces
		create *CreateRequest
		export *ExportRequest
	}
	evmCreate := "Veil wants you to create agent alice.veil on base.\nWallet: " + evmWallet + "\nIssued At: " + ts
	evmShort := "Veil wants you to create agent alice.veil on base.\nWallet: " + evmWallet
	evmExport := "Veil wants you to export the private key of agent " + id + ".\nWallet: " + evmWallet + "\nIssued At: " + ts
	xlmCreate := "Veil wants you to create agent alice.veil on stellar.\nWallet: " + xlmWallet + "\nIssued At: " + ts
	xlmExport := "Veil wants you to export the private key of agent " + id + ".\nWallet: " + xlmWallet + "\nIssued At: " + ts
	solCreate := "Veil wants you to create agent alice.veil on solana.\nWallet: " + solWallet + "\nIssued At: " + ts
	solExport := "Veil wants you to export the private key of agent " + id + ".\nWallet: " + solWallet + "\nIssued At: " + ts

	// The builders produce exactly the documented messages.
	for _, c := range []struct{ got, want string }{
		{CreateMessage("alice", "base", evmWallet, at), evmCreate},
		{CreateMessageShort("alice", "base", evmWallet), evmShort},
		{ExportMessage(id, evmWallet, at), evmExport},
		{CreateMessage("alice", "stellar", xlmWallet, at), xlmCreate},
		{ExportMessage(id, xlmWallet, at), xlmExport},
		{CreateMessage("alice", "solana", solWallet, at), solCreate},
		{ExportMessage(id, solWallet, at), solExport},
	} {
		if c.got != c.want {
			t.Errorf("builder: got %q, want %q", c.got, c.want)
		}
	}

	cr := func(chain, wallet, msg, sig string) *CreateRequest {
		return &CreateRequest{Name: "alice", Chain: chain, Wallet: wallet, Message: msg, Signature: sig}
	}
	er := func(wallet, msg, sig string) *ExportRequest {
		return &ExportRequest{AgentID: id, Wallet: wallet, Message: msg, Signature: sig}
	}
	const (
		sigEVMCreate = "0xd7630739970e3c9b88a4c29c7d4b589b54cc29dabb1902b0b0ad5ca7e6c2b810724553c9a59d67db4ef925f0a50d6867ad7fcef5e5f9c0d042576ba6a9cad6841b"
		sigEVMShort  = "0xbd2f3f4444d44f32a0e3c78b737d8db5cf99c4bf2e3c2c48c829ed771bbad4bc718805884f8d999d058cddc8d2bb6f8dc2fd71fd27c9c61ef0eb3e04d2979aaa1b"
		sigEVMExport = "0xa5007a699435ae18efd96303d04d6de603fc10573738c109028b5e67f37d2ffb306774a24127e7cede51ffbeb2d663b2c2a628dbe6a9ff111d1364761f4b296b1c"
		sigXLMCreate = "LL544nS8Bd1w+jvogFJwWZFMRJQsuCPnWPnWyLpuTW9yd3GIV5RsQKE8hBOhgyc960lWeyO3wrWh8pcc/BOiCA=="
		sigXLMSEP53  = "BrtGf4m7EH6NBK4oAdtnuljvGmFCGm2FrDSrwipeyjioaXTRwInU2TBkZxvWFIcXVj5Y1adNtd04vxdgIXdfDw=="
		sigXLMExport = "xsUX/Py5iGx7X04F3KnJmUxwEvpk3JO88xEVm10/Qvc1EYsO9OWhnnqPgSe+T9tL0f57Hm9xDgHb8iLV3tzEAQ=="
		sigSOLCreate = "4kB6nK5yfd9FkmA4q1KZ8uJuGrPTAAWPxrJfaS2AD1c2hC6hT6hw446zAtPDbdmbP2VvCz4eo2AHCNWZ1MNzrXLq"
		sigSOLExport = "4aTVNVaHUGC4mbTdLUGEw9Eaqby7vXvArepE1B8E656zyDodVVXf99vM4CXQtvySE6dVN9sXbYqSvKXvAfmvKmdM"
	)
	examples := []example{
		{"evm create", evmCreate, sigEVMCreate, SignEVM(key, evmCreate), cr("base", evmWallet, evmCreate, sigEVMCreate), nil},
		{"evm create, message omitted", evmShort, sigEVMShort, SignEVM(key, evmShort), cr("base", evmWallet, "", sigEVMShort), nil},
		{"evm export", evmExport, sigEVMExport, SignEVM(key, evmExport), nil, er(strings.ToLower(evmWallet), evmExport, sigEVMExport)},
		{"stellar create", xlmCreate, sigXLMCreate, SignEd25519Base64(edKey, xlmCreate), cr("stellar", xlmWallet, xlmCreate, sigXLMCreate), nil},
		{"stellar create SEP-53", xlmCreate, sigXLMSEP53, SignStellarSEP53(edKey, xlmCreate), cr("stellar", xlmWallet, xlmCreate, sigXLMSEP53), nil},
		{"stellar export", xlmExport, sigXLMExport, SignEd25519Base64(edKey, xlmExport), nil, er(xlmWallet, xlmExport, sigXLMExport)},
		{"solana create", solCreate, sigSOLCreate, SignSolana(edKey, solCreate), cr("solana", solWallet, solCreate, sigSOLCreate), nil},
		{"solana export", solExport, sigSOLExport, SignSolana(edKey, solExport), nil, er(solWallet, solExport, sigSOLExport)},
	}
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			if ex.signed != ex.sig {
				t.Errorf("helper signs %s, doc shows %s", ex.signed, ex.sig)
			}
			inDoc(ex.sig)
			if !strings.HasSuffix(ex.name, "SEP-53") {
				msgInDoc(ex.msg)
			}
			var p Proof
			var err error
			if ex.create != nil {
				p, err = VerifyCreate(*ex.create, verifyAt)
			} else {
				p, err = VerifyExport(*ex.export, verifyAt)
			}
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if p.Message != ex.msg {
				t.Errorf("proof message %q", p.Message)
			}
			// The documented window bounds hold for the example.
			for _, n := range []time.Time{at.Add(-MaxSkew), at.Add(MaxAge)} {
				if ex.create != nil {
					_, err = VerifyCreate(*ex.create, n)
				} else {
					_, err = VerifyExport(*ex.export, n)
				}
				if err != nil {
					t.Errorf("at %s: %v", n.Format(time.RFC3339), err)
				}
			}
		})
	}
	inDoc("between\n`2026-01-15T11:59:00Z` and `2026-01-15T12:10:00Z`")

	// The stored wallet and replay key of the first example.
	p, err := VerifyCreate(*examples[0].create, verifyAt)
	if err != nil {
		t.Fatal(err)
	}
	const replay = "ca56cac277c6eb62079b6374b66786a6219f3a5e3f1f7fa973db8db368f2c9ca"
	if p.Wallet != strings.ToLower(evmWallet) || p.ReplayKey != replay {
		t.Errorf("wallet %s replay key %s", p.Wallet, p.ReplayKey)
	}
	inDoc("Stored owner wallet `" + p.Wallet + "`; replay key\n`" + replay + "`")
	inDoc(`"veil-walletsig-replay-v1" ‖ 0x00 ‖ scheme ‖ 0x00 ‖`)
	inDoc("server time − 10 minutes  ≤  Issued At  ≤  server time + 1 minute")
}
