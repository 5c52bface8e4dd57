//go:build !nodevnet

package main

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/persistence"
)

// TestGasFundingPassesThePolicy: the transfer that pays a one-time
// address's gas from the agent's account is signed by the real enclave as
// an explicit spend under the agent's policy: a per-payment cap on the
// native asset refuses it (and nothing moves); within the policy the
// tokens are withdrawn.
func TestGasFundingPassesThePolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := devnet.StartEVM(ctx, devnet.EVMOptions{Chains: []chains.ID{chains.Base}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	cfg, _ := d.Config(chains.Base)
	store, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var root [32]byte
	_, _ = rand.Read(root[:])
	prov, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	policies := policy.NewStore(store, time.Now)
	conn, err := evm.New(ctx, cfg, evm.Options{Store: store, Signer: enclave.WithPolicy(prov, policies), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	const agentID = "gas-agent"
	keys, err := prov.DeriveKeys(ctx, agentID, chains.Base, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The agent's account has ETH; an invoice address of its holds only USDC.
	if _, err := d.Net(chains.Base).Fund(ctx, common.HexToAddress(keys.Address)); err != nil {
		t.Fatal(err)
	}
	meta, err := secp256k1.ParseMetaAddress(keys.MetaAddress)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := secp256k1.Generate(meta, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	inv := common.Address(ann.StealthAddress)
	payerKey := chains.KeyRef{AgentID: agentID, Chain: chains.Base}
	// A wallet pays the invoice address 3 USDC by a plain transfer (no
	// stipend comes with it).
	sendUSDC(ctx, t, conn, d, inv)

	ref := chains.KeyRef{AgentID: agentID, Chain: chains.Base, EphemeralPub: ann.EphemeralPub[:]}
	payer := chains.GasPayer{Key: payerKey, Address: keys.Address}
	dest := "0x00000000000000000000000000000000000000d5"

	op, err := policy.SetOp(agentID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.000000001"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Apply(ctx, op); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.WithdrawWithGas(ctx, ref, chains.WithdrawRequest{From: inv.Hex(), To: dest, Asset: chainstest.Asset(conn, "USDC"), All: true, IdempotencyKey: "w-capped"}, payer); !errors.Is(err, enclave.ErrPolicy) {
		t.Fatalf("gas transfer over the cap: %v", err)
	}
	if b, _ := conn.Balance(ctx, inv.Hex()); b.Native != "0" || b.Tokens["USDC"] != "3" {
		t.Fatalf("invoice address after the refusal %+v", b)
	}

	op, _ = policy.SetOp(agentID, policy.Policy{PerTransaction: map[string]string{"ETH": "1"}})
	if _, err := store.Apply(ctx, op); err != nil {
		t.Fatal(err)
	}
	w, err := conn.WithdrawWithGas(ctx, ref, chains.WithdrawRequest{From: inv.Hex(), To: dest, Asset: chainstest.Asset(conn, "USDC"), All: true, IdempotencyKey: "w-ok"}, payer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.WaitMined(ctx, w.TxHash); err != nil {
		t.Fatal(err)
	}
	if b, _ := conn.Balance(ctx, dest); b.Tokens["USDC"] != "3" {
		t.Fatalf("destination %+v", b)
	}
}

// sendUSDC moves 3 USDC from the devnet faucet's drip of a throwaway
// account to to, as a plain ERC-20 transfer (what a wallet paying an
// invoice does).
func sendUSDC(ctx context.Context, t *testing.T, conn *evm.Connector, d *devnet.EVM, to common.Address) {
	t.Helper()
	var root [32]byte
	_, _ = rand.Read(root[:])
	prov, _ := software.New(root)
	k, _ := prov.DeriveKeys(ctx, "wallet", chains.Base, 0)
	if _, err := d.Net(chains.Base).Fund(ctx, common.HexToAddress(k.Address)); err != nil {
		t.Fatal(err)
	}
	w, err := evm.New(ctx, conn.Config(), evm.Options{Store: openTestBolt(t), Signer: prov, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A withdrawal from an account key is a plain transfer.
	r, err := w.Withdraw(ctx, chains.KeyRef{AgentID: "wallet", Chain: chains.Base}, chains.WithdrawRequest{From: k.Address, To: to.Hex(), Asset: chainstest.Asset(w, "USDC"), Amount: amt("3"), IdempotencyKey: "pay-invoice"})
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := w.WaitMined(ctx, r.TxHash); err != nil || rc.Status != 1 {
		t.Fatalf("%v %v", rc, err)
	}
}

func openTestBolt(t *testing.T) persistence.Store {
	t.Helper()
	s, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "w.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// amt is a test amount in whole units, parsed with 18 decimals: the
// connector rescales it exactly to its asset's decimals, or refuses it.
func amt(s string) chains.Amount {
	a, err := chains.ParseAmountOf(s, 18)
	if err != nil {
		panic(err)
	}
	return a
}
