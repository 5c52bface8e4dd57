package enclave

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

func TestEIP55(t *testing.T) {
	// The examples of EIP-55.
	for _, want := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	} {
		raw, _ := hex.DecodeString(strings.ToLower(want[2:]))
		if got := EIP55([20]byte(raw)); got != want {
			t.Errorf("EIP55 = %s, want %s", got, want)
		}
	}
}

func TestChecks(t *testing.T) {
	for _, ok := range []string{"00000000-0000-0000-0000-000000000001", "a", "A.b_c-9", strings.Repeat("x", 128)} {
		if err := CheckAgentID(ok); err != nil {
			t.Errorf("CheckAgentID(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", "a b", "é", strings.Repeat("x", 129)} {
		if err := CheckAgentID(bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("CheckAgentID(%q) = %v", bad, err)
		}
	}
	for _, ok := range []string{"n", "0123456789abcdef", strings.Repeat("f", 128), "✓ nonce"} {
		if err := CheckNonce([]byte(ok)); err != nil {
			t.Errorf("CheckNonce(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("f", 129), "\xff", "a\x00", "a\x7f"} {
		if err := CheckNonce([]byte(bad)); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("CheckNonce(%q) = %v", bad, err)
		}
	}
	if got := KeyPath("id", chains.Base, 42, RoleView); got != "veil/agent/id/base/42/view" {
		t.Errorf("KeyPath = %s", got)
	}
	if _, err := AccountAddress(chains.Base, make([]byte, 32)); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("AccountAddress with a 32-byte EVM key: %v", err)
	}
	if _, err := AccountAddress("all", make([]byte, 32)); !errors.Is(err, chains.ErrUnknownChain) {
		t.Errorf("AccountAddress(all): %v", err)
	}
}

func TestReportDataInput(t *testing.T) {
	keys := map[chains.ID]AttestedKeys{
		chains.Solana:  {Address: "S", MetaAddress: "st:sol:m", AccountPublicKey: "aa"},
		chains.Horizen: {Epoch: 2, Address: "0xH", MetaAddress: "st:eth:0xm", AccountPublicKey: "bb"},
	}
	in, err := ReportDataInput("agent", keys, []byte("n✓"))
	if err != nil {
		t.Fatal(err)
	}
	want := "veil/attestation/report-data/v1\nagentId agent\n" +
		"key horizen 2 0xH st:eth:0xm bb\nkey solana 0 S st:sol:m aa\nnonce 6ee29c93\n"
	if string(in) != want {
		t.Fatalf("got\n%s\nwant\n%s", in, want)
	}
	keys[chains.Base] = AttestedKeys{Address: "a b", MetaAddress: "m", AccountPublicKey: "cc"}
	if _, err := ReportDataInput("agent", keys, []byte("n")); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("space in a field: %v", err)
	}
	delete(keys, chains.Base)
	keys["bitcoin"] = AttestedKeys{Address: "a", MetaAddress: "m", AccountPublicKey: "cc"}
	if _, err := ReportDataInput("agent", keys, []byte("n")); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("unknown chain: %v", err)
	}
}
