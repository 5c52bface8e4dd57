package evmtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/chains/evm/evmdeploy"
)

// HardhatKey is Hardhat's account #0 (publicly known, funded on every
// Hardhat node): Hardhat deploys Veil's contracts, mints the test tokens
// and funds accounts with it.
const HardhatKey = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// Hardhat is a Hardhat 2 node (chains/evm/testdata/hardhat, from npm) with
// Veil's contracts deployed by evmdeploy, shared by the tests of one test
// binary: StartHardhat starts it once, StopHardhat (from TestMain) ends it.
type Hardhat struct {
	URL      string
	Deployed evmdeploy.Result

	cmd  *exec.Cmd
	eth  *ethclient.Client
	mu   sync.Mutex // the funder's nonces
	acct *evmdeploy.Account
}

var hh struct {
	once sync.Once
	node *Hardhat
	err  error
}

// ErrNoNode reports that node or npm is not installed.
var ErrNoNode = errors.New("node or npm not found")

// StartHardhat returns the test binary's Hardhat node, starting it (and
// running `npm ci` when node_modules is missing) on first use. Without
// node and npm it skips the test, except under CI=true, where it fails:
// CI must run the interop tests.
func StartHardhat(t testing.TB) *Hardhat {
	t.Helper()
	hh.once.Do(func() { hh.node, hh.err = startHardhat() })
	if hh.err != nil {
		if errors.Is(hh.err, ErrNoNode) && os.Getenv("CI") != "true" {
			t.Skipf("Hardhat interop: %v (CI=true makes this a failure)", hh.err)
		}
		t.Fatalf("Hardhat interop: %v", hh.err)
	}
	return hh.node
}

// StopHardhat ends the node if one was started (call it from TestMain).
func StopHardhat() {
	n := hh.node
	if n == nil {
		return
	}
	if n.cmd != nil && n.cmd.Process != nil {
		// npx runs node as a child: end the process group it leads.
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		_ = n.cmd.Wait()
	}
	if n.eth != nil {
		n.eth.Close()
	}
}

// Fund gives addr 10 ETH and 10,000 of the test USDC.
func (n *Hardhat) Fund(t testing.TB, addr common.Address) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := n.acct.Send(ctx, addr, new(big.Int).Mul(big.NewInt(10), big.NewInt(1e18)), nil); err != nil {
		t.Fatal(err)
	}
	mint := bindings.NewTestToken().PackMint(addr, big.NewInt(10_000_000_000))
	if _, err := n.acct.Send(ctx, n.Deployed.Tokens[0].Address, nil, mint); err != nil {
		t.Fatal(err)
	}
}

var (
	hardhatURL = regexp.MustCompile(`Started HTTP and WebSocket JSON-RPC server at (http://[0-9.:]+)`)
	ansi       = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// hardhatDir is chains/evm/testdata/hardhat, found from this file.
func hardhatDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("evmtest: cannot locate the source tree")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata", "hardhat"), nil
}

func startHardhat() (*Hardhat, error) {
	dir, err := hardhatDir()
	if err != nil {
		return nil, err
	}
	for _, bin := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNoNode, bin, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "hardhat")); err != nil {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	// Port 0: the node binds a free port and prints its URL.
	cmd := exec.Command("npx", "--no-install", "hardhat", "node", "--hostname", "127.0.0.1", "--port", "0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &Hardhat{cmd: cmd}
	hh.node = n // StopHardhat ends it whatever happens next
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := hardhatURL.FindStringSubmatch(ansi.ReplaceAllString(sc.Text(), "")); m != nil {
				urlc <- m[1]
				break
			}
		}
		close(urlc)
		_, _ = io.Copy(io.Discard, out) // the node logs every request
	}()
	select {
	case u, ok := <-urlc:
		if !ok {
			return n, fmt.Errorf("hardhat node exited before serving: %s", stderr.String())
		}
		n.URL = u
	case <-ctx.Done():
		return n, fmt.Errorf("hardhat node did not print its URL: %s", stderr.String())
	}
	key, err := crypto.HexToECDSA(HardhatKey)
	if err != nil {
		return n, err
	}
	state := filepath.Join(os.TempDir(), fmt.Sprintf("veil-hardhat-%d.json", os.Getpid()))
	defer os.Remove(state)
	if n.Deployed, err = evmdeploy.Deploy(ctx, evmdeploy.Options{Chain: chains.Ethereum, RPCURL: n.URL, Key: key, ChainID: 31337,
		TestTokens: true, StatePath: state, Poll: 20 * time.Millisecond}); err != nil {
		return n, fmt.Errorf("deploy on hardhat: %w", err)
	}
	if n.eth, err = ethclient.Dial(n.URL); err != nil {
		return n, err
	}
	n.acct = evmdeploy.NewAccount(n.eth, key, big.NewInt(31337))
	n.acct.Poll = 20 * time.Millisecond
	return n, nil
}
