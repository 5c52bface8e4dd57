//go:build !nodevnet

package evm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
)

// TestStartRefusesMisconfiguredContracts: every configured address is
// checked against the chain when the connector starts, and the error names
// the variable to fix.
func TestStartRefusesMisconfiguredContracts(t *testing.T) {
	d := startDevnet(t, chains.Ethereum)
	good, _ := d.Config(chains.Ethereum)
	eoa := evmtest.NewAgent("somebody").Address
	cases := []struct {
		name    string
		mod     func(*evm.Config)
		wantVar string
		want    string
	}{
		{"sender is an ordinary account", func(c *evm.Config) { c.Sender = eoa }, "VEIL_EVM_ETHEREUM_SENDER", "no contract code"},
		{"sender is another contract", func(c *evm.Config) { c.Sender = good.Names }, "VEIL_EVM_ETHEREUM_SENDER", "not a StealthSender"},
		{"sender wired to another announcer", func(c *evm.Config) { c.Announcer = good.Names }, "VEIL_EVM_ETHEREUM_SENDER", "announces through " + evm.CanonicalAnnouncer.Hex()},
		{"announcer missing", func(c *evm.Config) { c.Announcer = eoa }, "VEIL_EVM_ETHEREUM_ANNOUNCER", "no contract code"},
		{"names is an ordinary account", func(c *evm.Config) { c.Names = eoa }, "VEIL_EVM_ETHEREUM_NAMES", "no contract code"},
		{"token is an ordinary account", func(c *evm.Config) { c.Tokens = []evm.Token{{Symbol: "USDC", Address: eoa, Decimals: 6}} }, "VEIL_EVM_ETHEREUM_TOKENS", "no contract code"},
		{"token decimals differ", func(c *evm.Config) {
			c.Tokens = append([]evm.Token(nil), c.Tokens...)
			c.Tokens[0].Decimals = 18
		}, "VEIL_EVM_ETHEREUM_TOKENS", "has 6 decimals on chain, configured 18"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mod(&cfg)
			c, err := evm.New(context.Background(), cfg, evm.Options{Store: openStore(t, t.TempDir()), Log: quietLog()})
			if err == nil {
				c.Close()
				t.Fatal("connected with a misconfigured contract")
			}
			if !errors.Is(err, evm.ErrMisconfigured) || !strings.Contains(err.Error(), tc.wantVar) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q: want ErrMisconfigured naming %s and saying %q", err, tc.wantVar, tc.want)
			}
		})
	}
	// The good configuration passes.
	c := connect(t, good, openStore(t, t.TempDir()), nil, nil)
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestValueToAddressWithoutCodeIsRefused: a connector that skipped the
// start-up checks still refuses, before signing, a payment through a
// StealthSender or a token that is not a contract; nothing is sent and no
// nonce is used.
func TestValueToAddressWithoutCodeIsRefused(t *testing.T) {
	d := startDevnet(t, chains.Base)
	good, _ := d.Config(chains.Base)
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	eoa := evmtest.NewAgent("typo").Address
	signer := evmtest.NewSigner(alice, bob)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	funder := connect(t, good, openStore(t, t.TempDir()), signer, nil)
	mustMined(t, funder, mustFund(t, funder, alice.Address).TxHash)

	cases := []struct {
		name string
		mod  func(*evm.Config)
		run  func(c *evm.Connector) error
		want string
	}{
		{"native payment, sender is an account", func(c *evm.Config) { c.Sender = eoa }, func(c *evm.Connector) error {
			_, err := c.SendStealth(ctx, alice.Ref(chains.Base), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.01"), To: bob.Meta, IdempotencyKey: "k1"})
			return err
		}, "VEIL_EVM_BASE_SENDER"},
		{"token payment, token is an account", func(c *evm.Config) {
			c.Tokens = []evm.Token{{Symbol: "USDC", Address: eoa, Decimals: 6}}
		}, func(c *evm.Connector) error {
			_, err := c.SendStealth(ctx, alice.Ref(chains.Base), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "USDC"), Amount: amt("1"), To: bob.Meta, IdempotencyKey: "k2"})
			return err
		}, "VEIL_EVM_BASE_TOKENS"},
		{"token withdrawal, token is an account", func(c *evm.Config) {
			c.Tokens = []evm.Token{{Symbol: "USDC", Address: eoa, Decimals: 6}}
		}, func(c *evm.Connector) error {
			_, err := c.Withdraw(ctx, alice.Ref(chains.Base), chains.WithdrawRequest{From: alice.Address.Hex(), To: bob.Address.Hex(), Asset: chainstest.Asset(c, "USDC"), Amount: amt("1"), IdempotencyKey: "k3"})
			return err
		}, "VEIL_EVM_BASE_TOKENS"},
		{"name registration, registry is an account", func(c *evm.Config) { c.Names = eoa }, func(c *evm.Connector) error {
			_, err := c.RegisterName(ctx, alice.Ref(chains.Base), alice.Address.Hex(), "alice", alice.Meta)
			return err
		}, "VEIL_EVM_BASE_NAMES"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mod(&cfg)
			c, err := evm.NewUnchecked(ctx, cfg, evm.Options{Store: openStore(t, t.TempDir()), Signer: signer, Log: quietLog()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			before := wei(t, c, eoa.Hex())
			nonce, err := c.Client().NonceAt(ctx, alice.Address, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = tc.run(c)
			if !errors.Is(err, evm.ErrMisconfigured) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want ErrMisconfigured naming %s", err, tc.want)
			}
			if after := wei(t, c, eoa.Hex()); after.Cmp(before) != 0 {
				t.Fatalf("the account received %s wei", after.Sub(after, before))
			}
			if n, _ := c.Client().PendingNonceAt(ctx, alice.Address); n != nonce {
				t.Fatalf("alice's nonce moved %d → %d", nonce, n)
			}
			if p, _ := c.PendingCount(ctx); p != 0 {
				t.Fatalf("%d transactions recorded", p)
			}
		})
	}
}

func mustFund(t testing.TB, c *evm.Connector, a common.Address) chains.TxResult {
	t.Helper()
	r, err := c.Fund(context.Background(), a.Hex())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFundWithoutFaucet: a network without Veil's faucet says so and names
// the address to fund; it is not reported as unreachable.
func TestFundWithoutFaucet(t *testing.T) {
	d := startDevnet(t, chains.Polygon)
	cfg, _ := d.Config(chains.Polygon)
	cfg.DevnetFaucet = false
	c := connect(t, cfg, openStore(t, t.TempDir()), nil, nil)
	alice := evmtest.NewAgent("alice")
	_, err := c.Fund(context.Background(), alice.Address.Hex())
	if !errors.Is(err, chains.ErrNoFaucet) || errors.Is(err, chains.ErrUnavailable) {
		t.Fatalf("Fund: %v", err)
	}
	for _, want := range []string{"no faucet on this network", "fund " + alice.Address.Hex() + " yourself", "POL"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("Fund: %q does not say %q", err, want)
		}
	}
}
