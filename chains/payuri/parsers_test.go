package payuri

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/npmtest"
)

// parsed is what testdata/parsers/parse.mjs prints for one URI.
type parsed struct {
	URI, Error, Format string
	// EIP-681 (eth-url-parser)
	Target, ChainID, Function, Value, Address, Uint256 string
	// Solana Pay (@solana/pay parseURL)
	Recipient, Amount, SplToken, Reference, Label, Message, Memo string
	// SEP-7 (@stellar/typescript-wallet-sdk parseSep7Uri)
	Operation, Destination, AssetCode, AssetIssuer, MemoType string
}

// needNode installs the parsers' locked packages (internal/npmtest):
// without node the test skips, except in CI, where it fails.
func needNode(t *testing.T) string {
	t.Helper()
	return npmtest.Install(t, filepath.Join("testdata", "parsers"))
}

// TestParsersAgree hands the URIs this package builds to each ecosystem's
// own parser and checks that it reads back the address, chain, token and
// amount the invoice asked for.
func TestParsersAgree(t *testing.T) {
	dir := needNode(t)
	tests := []struct {
		name   string
		family chains.Family
		req    Request
		want   parsed
	}{
		{"eip681 native", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "0.05", Decimals: 18, ChainID: 31337},
			parsed{Format: "eip681", Target: evmTo, ChainID: "31337", Value: "50000000000000000"}},
		{"eip681 native beyond 2^53 wei", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "123456.789012345678901234", Decimals: 18, ChainID: 1},
			parsed{Format: "eip681", Target: evmTo, ChainID: "1", Value: "123456789012345678901234"}},
		{"eip681 token", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "25", Decimals: 6, Token: usdcEVM, ChainID: 8453},
			parsed{Format: "eip681", Target: usdcEVM, ChainID: "8453", Function: "transfer", Address: evmTo, Uint256: "25000000"}},
		{"solana pay native", chains.FamilySolana, Request{PayTo: solTo, Amount: "1.5", Decimals: 9, Label: "alice.veil", Message: "logo & hosting"},
			parsed{Format: "solanapay", Recipient: solTo, Amount: "1.5", Label: "alice.veil", Message: "logo & hosting"}},
		{"solana pay with reference", chains.FamilySolana, Request{PayTo: solTo, Amount: "0.25", Decimals: 9, Reference: solRef, Label: "alice.veil", Message: "invoice"},
			parsed{Format: "solanapay", Recipient: solTo, Amount: "0.25", Reference: solRef, Label: "alice.veil", Message: "invoice"}},
		{"solana pay token", chains.FamilySolana, Request{PayTo: solTo, Amount: "0.25", Decimals: 6, Token: solMint, Label: "bob.veil", Message: "50% up front + tip", Memo: "inv 7"},
			parsed{Format: "solanapay", Recipient: solTo, Amount: "0.25", SplToken: solMint, Label: "bob.veil", Message: "50% up front + tip", Memo: "inv 7"}},
		{"sep7 native", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "10.5", Decimals: 7, AssetCode: "XLM"},
			parsed{Format: "sep7", Operation: "pay", Destination: xlmTo, Amount: "10.5"}},
		{"sep7 token", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "0.0000001", Decimals: 7, AssetCode: "USDC", Token: xlmIssuer, Memo: "rent & power"},
			parsed{Format: "sep7", Operation: "pay", Destination: xlmTo, Amount: "0.0000001", AssetCode: "USDC", AssetIssuer: xlmIssuer, Memo: "rent & power", MemoType: "MEMO_TEXT"}},
	}
	var in strings.Builder
	for _, tt := range tests {
		uri, err := For(tt.family, tt.req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		in.WriteString(uri + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "parse.mjs")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node parse.mjs: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	var got []parsed
	for sc.Scan() {
		var p parsed
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("parser output %q: %v", sc.Text(), err)
		}
		got = append(got, p)
	}
	if len(got) != len(tests) {
		t.Fatalf("parsed %d URIs, want %d:\n%s\n%s", len(got), len(tests), out, stderr.String())
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := got[i]
			if g.Error != "" {
				t.Fatalf("%s rejected %s: %s", tt.want.Format, g.URI, g.Error)
			}
			tt.want.URI = g.URI
			if !strings.EqualFold(g.Target, tt.want.Target) || !strings.EqualFold(g.Address, tt.want.Address) {
				t.Fatalf("address: got %+v, want %+v", g, tt.want)
			}
			g.Target, g.Address = tt.want.Target, tt.want.Address
			if g != tt.want {
				t.Fatalf("%s\n got %+v\nwant %+v", g.URI, g, tt.want)
			}
		})
	}
}
