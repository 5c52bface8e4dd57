//go:build !nodevnet

package evmdeploy_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmdeploy"
	"github.com/veilhq/veil/persistence"
)

// TestDeployIsIdempotent: a first run deploys the sender, the registry and
// the test tokens (the devnet has the canonical announcer, which is
// reused), and its configuration passes the connector's start-up checks; a
// second run deploys nothing; a recorded contract that no longer verifies
// is deployed again.
func TestDeployIsIdempotent(t *testing.T) {
	d, err := devnet.StartEVM(context.Background(), devnet.EVMOptions{Chains: []chains.ID{chains.Base}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	net := d.Net(chains.Base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key, _ := crypto.ToECDSA(crypto.Keccak256([]byte("veil deploy test")))
	if _, err := net.Fund(ctx, crypto.PubkeyToAddress(key.PublicKey)); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	var progress strings.Builder
	opts := evmdeploy.Options{Chain: chains.Base, RPCURL: net.RPCURL(), Key: key, TestTokens: true, StatePath: state, Progress: &progress, Poll: 20 * time.Millisecond}

	first, err := evmdeploy.Deploy(ctx, opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if first.Announcer != evm.CanonicalAnnouncer || strings.Join(first.Deployed, ",") != "StealthSender,VeilNames,TestToken USDC,TestToken ZEN" ||
		strings.Join(first.Reused, ",") != "ERC5564Announcer" || len(first.Tokens) != 2 || first.FromBlock == 0 {
		t.Fatalf("first run %+v", first)
	}
	env := first.Env()
	for _, want := range []string{"VEIL_RPC_BASE=" + net.RPCURL(), "VEIL_EVM_BASE_CHAIN_ID=84532", "VEIL_EVM_BASE_SENDER=" + first.Sender.Hex(),
		"VEIL_EVM_BASE_NAMES=" + first.Names.Hex(), "VEIL_EVM_BASE_TOKENS=USDC=" + first.Tokens[0].Address.Hex() + ":6,ZEN=", "VEIL_EVM_BASE_FROM_BLOCK="} {
		if !strings.Contains(env, want) {
			t.Fatalf("env block lacks %q:\n%s", want, env)
		}
	}
	// The printed block is what veild reads, and it connects.
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vars[k] = v
	}
	cfg, ok, err := evm.ConfigFromLookup(chains.Base, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	store, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := evm.New(ctx, cfg, evm.Options{Store: store, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("connecting with the printed configuration: %v", err)
	}
	c.Close()

	second, err := evmdeploy.Deploy(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Deployed) != 0 || second.Sender != first.Sender || second.Names != first.Names || second.FromBlock != first.FromBlock || second.Env() != env {
		t.Fatalf("second run %+v", second)
	}

	// A recorded sender that is not one any more (the state names an
	// account) is deployed anew; the rest is reused.
	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	st["networks"]["base/84532"]["StealthSender"]["address"], _ = json.Marshal(common.HexToAddress("0x00000000000000000000000000000000000000b0"))
	raw, _ = json.Marshal(st)
	if err := os.WriteFile(state, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	third, err := evmdeploy.Deploy(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(third.Deployed, ",") != "StealthSender" || third.Sender == first.Sender || third.Names != first.Names {
		t.Fatalf("third run %+v", third)
	}
}
