package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/internal/faultproxy"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// env is a real server on a loopback listener: bbolt on disk, the actor
// host, the API.
type env struct {
	t     testing.TB
	url   string
	key   string
	store persistence.Store
	bolt  *persistence.Bolt // the store under any counting wrapper
	host  *host.Host
	api   *httpapi.Server
	rpc   string // the ethereum devnet's JSON-RPC URL, with evm
	snaps *agent.Snapshots
	// proxy stands between the connector and the devnet, with evmFaults.
	proxy *faultproxy.HTTP
}

type envOptions struct {
	keys agent.Keys
	tee  httpapi.TEE
	// models configures the model providers (zero: the builtin planner).
	models llm.Config
	// evm runs an ethereum devnet with its chain actor.
	evm bool
	// evmFaults (with evm) puts a faultproxy.HTTP between the connector
	// and the devnet, and relays the connector's settlements to the
	// agents as veild does (cmd/veild settleReceiver).
	evmFaults bool
	// failpoint is the agent actors' failpoint hook.
	failpoint func(string) error
	// rates is the per-key rate limit (zero: off in tests, so that load
	// tests measure the server, not the limiter).
	rates httpapi.RateLimit
	// maxStreams is MaxStreamsPerKey (zero: the default).
	maxStreams int
	// now is the API's clock (nil: time.Now).
	now func() time.Time
	// limits are the API's slow-client limits (zero: the defaults).
	limits httpapi.Limits
	// webhookAllowPrivate lets webhooks target the test's loopback receivers.
	webhookAllowPrivate bool
	// agentNow is the agent actors' clock (nil: time.Now).
	agentNow func() time.Time
	// applies, when set, counts the store's Apply calls (commits).
	applies *atomic.Int64
	// observe is the store's commit hook (BoltOptions.Observe).
	observe func(batches int, commit time.Duration)
	// observeApply is the log applier's hook (BoltOptions.ObserveApply).
	observeApply func(groups int, took time.Duration)
}

// storeLogEnv set to false opens every env's bbolt store without its
// write-ahead log (BoltOptions.NoLog, veild --store-log=false): the
// pre-log path, so that one test binary measures both (docs/BENCHMARKS.md,
// "A write-ahead log in front of bbolt"). Unset or true: the log.
const storeLogEnv = "VEIL_BENCH_STORE_LOG"

// envNoLog reads storeLogEnv.
func envNoLog(t testing.TB) bool {
	v, ok := os.LookupEnv(storeLogEnv)
	if !ok || v == "" {
		return false
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		t.Fatalf("%s=%q: want true or false", storeLogEnv, v)
	}
	return !on
}

// applyDelayEnv, when set, is the applier's delay of every env's bbolt
// store (BoltOptions.ApplyDelay, veild --store-apply-delay; 0: none), so
// that one test binary measures several (docs/BENCHMARKS.md, "The
// applier's delay"). Unset: the store's default.
const applyDelayEnv = "VEIL_BENCH_APPLY_DELAY"

// envApplyDelay reads applyDelayEnv, as a BoltOptions.ApplyDelay.
func envApplyDelay(t testing.TB) time.Duration {
	v := os.Getenv(applyDelayEnv)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		t.Fatalf("%s=%q: want a duration such as 100ms, or 0 for none", applyDelayEnv, v)
	}
	return persistence.ApplyDelaySetting(d)
}

// countedStore counts Apply calls.
type countedStore struct {
	persistence.Store
	n *atomic.Int64
}

func (s *countedStore) Apply(ctx context.Context, ops ...persistence.Op) ([]uint64, error) {
	s.n.Add(1)
	return s.Store.Apply(ctx, ops...)
}

// Watch forwards bbolt's watches, so that the API's key checks run as
// they do in veild (apikey.Cache reads no epoch on bbolt).
func (s *countedStore) Watch(ctx context.Context, table, key string) (func() uint64, error) {
	return s.Store.(persistence.Watcher).Watch(ctx, table, key)
}

func newEnv(t testing.TB, opts envOptions) *env {
	t.Helper()
	dir := t.TempDir()
	bolt, err := persistence.OpenBolt(filepath.Join(dir, "veil.db"), persistence.BoltOptions{
		Observe: opts.observe, ObserveApply: opts.observeApply, NoLog: envNoLog(t), ApplyDelay: envApplyDelay(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	var st persistence.Store = bolt
	if opts.applies != nil {
		st = &countedStore{Store: bolt, n: opts.applies}
	}
	var signer chains.Signer
	if opts.keys == nil {
		var root [32]byte
		root[0] = 7
		prov, err := software.New(root)
		if err != nil {
			t.Fatal(err)
		}
		// As in veild: payment signatures pass the spending policy first.
		guarded := enclave.WithPolicy(prov, policy.NewStore(st, nil).WithApprovals())
		opts.keys = agent.EnclaveKeys(guarded)
		opts.tee = prov
		signer = guarded
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	var chainSet agent.ChainSet = agent.NoChains{}
	rpc := ""
	var proxy *faultproxy.HTTP
	settled := &chains.SettlementRelay{}
	if opts.evm {
		chainSet, rpc, proxy = startEVM(t, system, st, signer, quiet, opts.evmFaults, settled.Deliver)
	}
	feed := agent.NewFeed()
	snaps := agent.NewSnapshots()
	host := host.NewHost(system, agent.Loader(agent.Deps{
		Store: st, Log: quiet, Keys: opts.keys, Chains: chainSet, Feed: feed, Snapshots: snaps,
		Models:    func(p, key string) (llms.Model, error) { return opts.models.Model(llm.Provider(p), key) },
		PublicURL: "http://veil.test",
		Failpoint: opts.failpoint,
		Now:       opts.agentNow,
	}), host.HostConfig{PassivateAfter: time.Minute}, quiet, nil)
	if opts.rates == (httpapi.RateLimit{}) {
		opts.rates = httpapi.RateLimit{PerSecond: -1}
	}
	settled.Set(settleTo(host))
	api := httpapi.New(httpapi.Config{Store: st, Agents: snaps.Reads(wire(host)), Logger: quiet, TEE: opts.tee, RateLimit: opts.rates, MaxStreamsPerKey: opts.maxStreams, Now: opts.now,
		Feed: feed, WebhookAllowPrivate: opts.webhookAllowPrivate, Limits: opts.limits})
	srv := httptest.NewServer(api)
	key, err := apikey.Bootstrap(context.Background(), st, time.Now())
	if err != nil || key == "" {
		t.Fatalf("bootstrap: %q %v", key, err)
	}
	t.Cleanup(func() {
		srv.Close()
		_ = host.Stop(context.Background())
		system.Shutdown()
		_ = st.Close()
	})
	return &env{t: t, url: srv.URL, key: key, store: st, bolt: bolt, host: host, api: api, rpc: rpc, snaps: snaps, proxy: proxy}
}

// newKey issues a key for another account.
func (e *env) newKey(account string) string {
	e.t.Helper()
	acc, err := apikey.EnsureAccount(context.Background(), e.store, account, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	k, err := apikey.Create(context.Background(), e.store, acc, false, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorBody(t *testing.T) (string, int) {
	t.Helper()
	var e struct {
		Message    *string `json:"message"`
		StatusCode *int    `json:"statusCode"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Message == nil || e.StatusCode == nil {
		t.Fatalf("not the spec's error body (status %d): %s", r.status, r.body)
	}
	if *e.StatusCode != r.status {
		t.Fatalf("statusCode %d in body, %d on the wire", *e.StatusCode, r.status)
	}
	return *e.Message, *e.StatusCode
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// do sends a request with the given key ("" for none) and optional JSON body.
func (e *env) do(method, path, key string, body any) response {
	e.t.Helper()
	return e.doHeaders(method, path, key, body)
}

// doHeaders is do with extra headers, given as name, value pairs.
func (e *env) doHeaders(method, path, key string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case []byte:
			rd = bytes.NewReader(b)
		case string:
			rd = bytes.NewReader([]byte(b))
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				e.t.Fatal(err)
			}
			rd = bytes.NewReader(raw)
		}
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// settleTo delivers a connector's settlement to the agent that signed it
// (agent.PaymentSettled), as veild does.
func settleTo(h *host.Host) chains.SettlementFunc {
	return func(ctx context.Context, x chains.Settlement) error {
		if x.AgentID == "" {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := h.Request(ctx, x.AgentID, &agent.PaymentSettled{Settlement: x})
		return err
	}
}

// startEVM runs an in-memory ethereum devnet and its chain actor: the chat
// tools reach a real chain over JSON-RPC.
// With faults, the connector reaches the devnet through a faultproxy (the
// third answer) and reports its settlements to onSettled.
func startEVM(t testing.TB, system *actor.ActorSystem, st persistence.Store, signer chains.Signer, log *slog.Logger,
	faults bool, onSettled chains.SettlementFunc) (agent.ChainSet, string, *faultproxy.HTTP) {
	t.Helper()
	ctx := context.Background()
	d, err := devnet.StartEVM(ctx, devnet.EVMOptions{Chains: []chains.ID{chains.Ethereum}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	cfg, _ := d.Config(chains.Ethereum)
	rpc := cfg.RPCURL
	var proxy *faultproxy.HTTP
	o := evm.Options{Store: st, Signer: signer, Log: log}
	if faults {
		if proxy, err = faultproxy.NewHTTP(cfg.RPCURL); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(proxy.Close)
		cfg.RPCURL = proxy.URL()
		o.OnSettled = onSettled
	}
	conn, err := evm.New(ctx, cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := chainactor.Start(ctx, system, conn, chainactor.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Stop)
	return agent.ChainMap{chains.Ethereum: ref}, rpc, proxy
}

// waitMined waits until the devnet has mined txHash: a payment the chat
// reported is broadcast, and scanning sees it once it is in a block.
func (e *env) waitMined(t *testing.T, txHash string) {
	t.Helper()
	c, err := ethclient.Dial(e.rpc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := c.TransactionReceipt(context.Background(), common.HexToHash(txHash))
		if err == nil {
			if r.Status != 1 {
				t.Fatalf("tx %s reverted", txHash)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tx %s not mined: %v", txHash, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds. The bound only ends a test that
// would otherwise hang: it is generous because CI runs on a loaded machine
// (a fresh-clone run at load 5 once took more than 30 s here).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); sleep50ms() {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting (2 min): %s", what)
}

func sleep50ms() { time.Sleep(50 * time.Millisecond) }
