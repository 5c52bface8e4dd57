//go:build !nodevnet

package devnet

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
)

func TestEVMDevnetsServeAndFund(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	d, err := StartEVM(ctx, EVMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	t.Logf("4 EVM devnets up in %v", time.Since(start))
	if got := d.Chains(); len(got) != 4 {
		t.Fatalf("chains %v", got)
	}
	who := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	for _, id := range d.Chains() {
		cfg, ok := d.Config(id)
		if !ok {
			t.Fatal(id)
		}
		c, err := ethclient.DialContext(ctx, cfg.RPCURL)
		if err != nil {
			t.Fatal(err)
		}
		cid, err := c.ChainID(ctx)
		if err != nil || cid.Uint64() != evm.TestnetChainID(id) {
			t.Fatalf("%s: chain id %v %v", id, cid, err)
		}
		for name, a := range d.Net(id).Contracts() {
			code, err := c.CodeAt(ctx, a, nil)
			if err != nil || len(code) == 0 {
				t.Fatalf("%s: %s at %s has no code (%v)", id, name, a.Hex(), err)
			}
		}
		wantTokens := 2
		if id == chains.Horizen {
			wantTokens = 1 // ZEN is horizen's native asset, not a token there
		}
		if len(cfg.Tokens) != wantTokens {
			t.Fatalf("%s: tokens %+v", id, cfg.Tokens)
		}
		if _, err := d.Net(id).Fund(ctx, who); err != nil {
			t.Fatalf("%s: fund: %v", id, err)
		}
		bal, err := c.BalanceAt(ctx, who, nil)
		want, _ := chains.ParseAmount(FaucetNative, 18)
		if err != nil || bal.Cmp(want) != 0 {
			t.Fatalf("%s: balance %v %v", id, bal, err)
		}
		c.Close()
	}
}

func TestEVMDevnetPersistsAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	opts := EVMOptions{Dir: dir, Chains: []chains.ID{chains.Base}}
	d, err := StartEVM(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	who := common.HexToAddress("0x00000000000000000000000000000000000000bb")
	h, err := d.Net(chains.Base).Fund(ctx, who)
	if err != nil {
		t.Fatal(err)
	}
	head := d.Net(chains.Base).Head()
	cfg1, _ := d.Config(chains.Base)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = StartEVM(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n := d.Net(chains.Base)
	if n.Head() != head {
		t.Fatalf("head after restart %d, before %d", n.Head(), head)
	}
	cfg2, _ := d.Config(chains.Base)
	if cfg1.Sender != cfg2.Sender || cfg1.Names != cfg2.Names || cfg1.Tokens[0] != cfg2.Tokens[0] {
		t.Fatalf("contract addresses moved: %+v vs %+v", cfg1, cfg2)
	}
	c, err := ethclient.DialContext(ctx, cfg2.RPCURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bal, err := c.BalanceAt(ctx, who, nil)
	if err != nil || bal.Sign() == 0 {
		t.Fatalf("balance after restart %v %v", bal, err)
	}
	if r, err := c.TransactionReceipt(ctx, h); err != nil || r.Status != 1 {
		t.Fatalf("receipt of %s after restart: %v", h.Hex(), err)
	}
	// The chain keeps going after a restart.
	if _, err := n.Fund(ctx, who); err != nil {
		t.Fatal(err)
	}
	bal2, _ := c.BalanceAt(ctx, who, nil)
	if bal2.Cmp(new(big.Int).Mul(bal, big.NewInt(2))) != 0 {
		t.Fatalf("second drip: %v then %v", bal, bal2)
	}
}

const killDirEnv = "VEIL_DEVNET_KILL_DIR"

// TestKillChild runs a persistent devnet, funds addresses and reports each
// mined drip on stdout until the parent kills it.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		t.Skip("child of TestEVMDevnetSurvivesSIGKILL")
	}
	ctx := context.Background()
	d, err := StartEVM(ctx, EVMOptions{Dir: dir, Chains: []chains.ID{chains.Ethereum}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		h, err := d.Net(chains.Ethereum).Fund(ctx, common.BigToAddress(big.NewInt(int64(1000+i))))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("mined %s\n", h.Hex())
	}
}

// A killed process loses no block a client saw: every drip the child
// reported as mined is on the chain after a restart on its directory.
func TestEVMDevnetSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []common.Hash
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(seen) < 25 {
		if h, ok := strings.CutPrefix(sc.Text(), "mined "); ok {
			seen = append(seen, common.HexToHash(h))
		}
	}
	_ = cmd.Process.Kill() // SIGKILL
	_ = cmd.Wait()
	if len(seen) < 25 {
		t.Fatalf("child reported %d drips", len(seen))
	}
	ctx := context.Background()
	d, err := StartEVM(ctx, EVMOptions{Dir: dir, Chains: []chains.ID{chains.Ethereum}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, _ := d.Config(chains.Ethereum)
	c, err := ethclient.DialContext(ctx, cfg.RPCURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, h := range seen {
		if r, err := c.TransactionReceipt(ctx, h); err != nil || r.Status != 1 {
			t.Fatalf("drip %s reported mined before the kill is gone: %v", h.Hex(), err)
		}
	}
	// And the chain goes on from there.
	if _, err := d.Net(chains.Ethereum).Fund(ctx, common.HexToAddress("0x01")); err != nil {
		t.Fatal(err)
	}
}
