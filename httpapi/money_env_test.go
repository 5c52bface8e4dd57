//go:build !nodevnet

package httpapi_test

import (
	"context"
	"crypto/ecdsa"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/httpapi/console"
	"github.com/veilhq/veil/internal/fakeclock"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// moneyEnv is env with an ethereum devnet whose connector and chain actor
// the test can reach (payers, the scanner), and payment links that point
// at the test server itself.
type moneyEnv struct {
	*env
	conn    *evm.Connector
	ref     *chainactor.Ref
	enclave *software.Provider
	eth     *ethclient.Client
	chainID *big.Int
	cfg     evm.Config
	clock   *fakeclock.Offset // the agents' clock: real time plus an offset the test moves
	// fail is the agents' failpoint hook (nil: none).
	fail atomic.Pointer[func(string) error]
}

// moneyOption changes what newMoneyServer starts.
type moneyOption func(*moneyOptions)

type moneyOptions struct {
	// settlements relays the connector's settlements to the agents, as
	// veild does (withSettlements).
	settlements bool
}

// withSettlements has the server's connector report every payment's
// outcome to the agents (chains.SettlementRelay, as veild's settleReceiver
// does): a payment whose call could only answer pending is confirmed, and
// its payer told, when the chain has it.
func withSettlements(o *moneyOptions) { o.settlements = true }

func newMoneyEnv(t *testing.T, opts ...moneyOption) *moneyEnv {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := devnet.StartEVM(context.Background(), devnet.EVMOptions{Chains: []chains.ID{chains.Ethereum}, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() }) // last: after the server's cleanup
	cfg, _ := d.Config(chains.Ethereum)
	return newMoneyServer(t, cfg, 11, opts...)
}

// newMoneyServer is one Veil server (store, enclave with its own root
// key, agents, API) on the ethereum devnet of cfg; two of them on one
// devnet are two independent Veil servers whose agents can pay each
// other.
func newMoneyServer(t *testing.T, cfg evm.Config, rootByte byte, opts ...moneyOption) *moneyEnv {
	t.Helper()
	var mo moneyOptions
	for _, o := range opts {
		o(&mo)
	}
	settled := &chains.SettlementRelay{}
	ctx := context.Background()
	var root [32]byte
	root[0] = rootByte
	prov, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	var handler http.Handler = http.NotFoundHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	// Transactions link to the console's explorer, as veild's devnets do.
	cfg.ExplorerTx = srv.URL + "/console/explorer/tx/{hash}?chain=ethereum"
	clock := &fakeclock.Offset{}
	// The connector signs through the owner's policy, as veild's does; its
	// daily budgets follow the test's clock.
	signer := enclave.WithPolicy(prov, policy.NewStore(st, clock.Now))
	eo := evm.Options{Store: st, Signer: signer, Log: quiet}
	if mo.settlements {
		eo.OnSettled = settled.Deliver
	}
	conn, err := evm.New(ctx, cfg, eo)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := chainactor.Start(ctx, system, conn, chainactor.Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var models llm.Config
	me := &moneyEnv{}
	host := host.NewHost(system, agent.Loader(agent.Deps{
		Store: st, Log: quiet, Keys: agent.EnclaveKeys(prov), Chains: agent.ChainMap{chains.Ethereum: ref},
		Models:    func(p, key string) (llms.Model, error) { return models.Model(llm.Provider(p), key) },
		PublicURL: srv.URL, Now: clock.Now,
		// The tools reach the test's servers on loopback (the other Veil
		// server, x402 servers): the default clients reach public addresses only.
		HTTP: tools.NewWebClient(tools.WebOptions{AllowPrivate: true}),
		Failpoint: func(name string) error {
			if f := me.fail.Load(); f != nil {
				return (*f)(name)
			}
			return nil
		},
	}), host.HostConfig{PassivateAfter: time.Minute}, quiet, nil)
	if mo.settlements {
		settled.Set(settleTo(host))
	}
	api := httpapi.New(httpapi.Config{Store: st, Agents: wire(host), Logger: quiet, TEE: prov,
		Explorers: map[chains.ID]console.Explorer{chains.Ethereum: console.NewEVM(conn)},
		Networks:  map[chains.ID]console.Network{chains.Ethereum: console.EVMNetwork(chains.Ethereum, cfg.ChainID, true)}})
	handler = api
	key, err := apikey.Bootstrap(ctx, st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	eth, err := ethclient.Dial(cfg.RPCURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		_ = host.Stop(context.Background())
		ref.Stop()
		eth.Close()
		conn.Close()
		system.Shutdown()
		_ = st.Close()
	})
	me.env = &env{t: t, url: srv.URL, key: key, store: st, host: host, api: api, rpc: cfg.RPCURL}
	me.conn, me.ref, me.enclave, me.eth, me.chainID, me.clock = conn, ref, prov, eth, new(big.Int).SetUint64(cfg.ChainID), clock
	me.cfg = cfg
	return me
}

// startScanner runs the chain's background scanner for the test.
func (e *moneyEnv) startScanner(t *testing.T) *scanner.Scanner {
	t.Helper()
	// A failed pass is retried within a second (the default backoff grows
	// to a minute, longer than a test waits), and says why in the test's
	// output: under load in CI a pass that failed a few times in a row left
	// an invoice unsettled past waitFor with nothing to show the cause.
	s := scanner.New(scanner.Options{Store: e.store, Chain: e.ref, Agents: e.host, Keys: agent.EnclaveKeys(e.enclave),
		Interval: 100 * time.Millisecond, MaxBackoff: time.Second,
		Log: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// newScannerOnce is the chain's scanner without its background loop: the
// test runs its passes.
func (e *moneyEnv) newScannerOnce(t *testing.T) *scanner.Scanner {
	t.Helper()
	s := scanner.New(scanner.Options{Store: e.store, Chain: e.ref, Agents: e.host, Keys: agent.EnclaveKeys(e.enclave), Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(s.Stop)
	return s
}

// payer is an outside wallet with devnet funds.
type payer struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

func (e *moneyEnv) newPayer(t *testing.T) payer {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	p := payer{key: k, addr: crypto.PubkeyToAddress(k.PublicKey)}
	res, err := e.conn.Fund(context.Background(), p.addr.Hex())
	if err != nil {
		t.Fatal(err)
	}
	e.waitMined(t, res.TxHash)
	return p
}

// pay sends amount (decimal ETH) from p to the plain address to, as any
// wallet would, and waits until it is mined.
func (e *moneyEnv) pay(t *testing.T, p payer, to, amount string) string {
	t.Helper()
	ctx := context.Background()
	wei, err := chains.ParseAmount(amount, 18)
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := e.eth.PendingNonceAt(ctx, p.addr)
	if err != nil {
		t.Fatal(err)
	}
	tip, err := e.eth.SuggestGasTipCap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head, err := e.eth.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	fee := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	dst := common.HexToAddress(to)
	tx, err := types.SignNewTx(p.key, types.LatestSignerForChainID(e.chainID), &types.DynamicFeeTx{
		ChainID: e.chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: fee, Gas: 21000, To: &dst, Value: wei,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.eth.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	e.waitMined(t, tx.Hash().Hex())
	return tx.Hash().Hex()
}

// invoiceJSON is the spec's Invoice as the API answers it.
type invoiceJSON struct {
	ID          string  `json:"id"`
	AgentName   string  `json:"agentName"`
	Amount      string  `json:"amount"`
	Asset       string  `json:"asset"`
	Memo        string  `json:"memo"`
	Status      string  `json:"status"`
	TxHash      *string `json:"txHash"`
	PaymentLink string  `json:"paymentLink"`
	CreatedAt   string  `json:"createdAt"`
	Chain       string  `json:"chain"`
	PayTo       string  `json:"payTo"`
}

// createInvoice asks the agent in chat for an invoice and returns it.
func (e *moneyEnv) createInvoice(t *testing.T, agentID, message string) invoiceJSON {
	t.Helper()
	r, out := e.chat(t, agentID, e.key, map[string]string{"message": message})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "create_invoice" || out.ToolCalls[0].Status != "success" {
		t.Fatalf("chat %q = %d %s", message, r.status, r.body)
	}
	var inv invoiceJSON
	if err := jsonUnmarshal([]byte(out.ToolCalls[0].Detail), &inv); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Response, inv.ID) {
		t.Fatalf("answer %q does not name invoice %s", out.Response, inv.ID)
	}
	return inv
}

// notes lists an agent's notifications.
func (e *moneyEnv) notes(t *testing.T, agentID string) agent.Inbox {
	t.Helper()
	r := e.do("GET", "/agent/"+agentID+"/notifications", e.key, nil)
	if r.status != 200 {
		t.Fatalf("notifications = %d %s", r.status, r.body)
	}
	var in agent.Inbox
	r.decode(t, &in)
	return in
}

func countType(in agent.Inbox, typ string) int {
	n := 0
	for _, x := range in.Notifications {
		if x.Type == typ {
			n++
		}
	}
	return n
}
