package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	enclaveactor "github.com/veilhq/veil/actors/enclave"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains/relayer"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/dstack"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/internal/buildinfo"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
	"github.com/veilhq/veil/runtime/cluster"
	"github.com/veilhq/veil/runtime/host"
	"github.com/veilhq/veil/runtime/prom"
)

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := newFlagSet("veild serve", stderr)
	cfg.bindFlags(fs)
	log, err := parseServerFlags(fs, args, &cfg)
	if err != nil {
		return err
	}
	if err := checkCluster(cfg); err != nil {
		return err
	}
	if err := armFailpoints(log); err != nil {
		return err
	}

	mets := prom.New(cfg.MetricsLabelCap)
	build := buildinfo.Read(version)
	mets.SetBuildInfo(build.Version, build.Revision, build.GoVersion)
	store, err := openStore(ctx, cfg.Store, cfg.Data, cfg.PostgresDSN, storeOptions{
		observe: mets.Commit, observeApply: mets.LogApply, noLog: !cfg.StoreLog, applyDelay: cfg.StoreApplyDelay,
		plainSync: !cfg.StoreLogAIO,
	})
	if err != nil {
		return err
	}
	setStoreProcs(store, log)
	defer func() {
		if err := store.Close(); err != nil {
			log.Error("close store", slog.Any("err", err))
		}
	}()

	// Online backups (veild backup) through a socket in the data directory.
	stopAdmin := serveAdmin(cfg.Data, store, log)
	defer stopAdmin()

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another veild running? choose another --addr)", cfg.Addr, err)
	}
	defer ln.Close()
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + ln.Addr().String()
	}

	prov, err := openEnclave(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer prov.Close()

	models, err := llm.FromEnv(os.Getenv)
	if err != nil {
		return &usageError{err.Error()}
	}

	// protoactor repeats its cluster provider's errors every second while
	// a member is down: one line per message per 30 s is enough.
	paLog := slog.New(newThrottled(log.Handler(), 30*time.Second, time.Now)).With(slog.String("component", "protoactor"))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return paLog }))
	// A cluster member shuts the system down itself (protoactor's cluster
	// closes it); closing it twice panics.
	stopSystem := system.Shutdown
	defer func() { stopSystem() }()
	// Every payment signature passes the agent's spending policy inside
	// the enclave actor, counted durably before it signs.
	// In a cluster an agent's request carries its activation's ownership
	// epoch as a fence (cluster.FencedLoader); the money's writes (the
	// policy's count before a signature, the connectors' intents before a
	// broadcast) go through a store that checks it in the same transaction,
	// so a stale owner's payment is refused there. Elsewhere a no-op.
	money := persistence.Fencing(store)
	// The relayers' keys derive in the enclave; their own spends pass their
	// own policy (relayer.Set.Authorizer), every other spend the owner's.
	rcfg, err := relayerConfig(cfg)
	if err != nil {
		return err
	}
	relayers, err := relayer.New(ctx, prov, rcfg)
	if err != nil {
		return err
	}
	mets.Registry().MustRegister(relayers.Collector())
	enclaves := enclaveactor.NewGroup(system, enclave.WithPolicy(prov, relayers.Authorizer(policy.NewStore(money, nil).WithApprovals())))
	chainSet, err := startChains(ctx, cfg, system, money, enclaves, relayers, mets, log)
	if err != nil {
		return err
	}
	defer chainSet.close()
	feed := agent.NewFeed()
	// agents reaches the agents wherever they live (the host, or the
	// cluster member once joined).
	var agents httpapi.Agents
	instant := newInstant(store, chainSet.refs, agent.EnclaveKeys(enclaves), func() scanner.Agents { return agents }, log)
	defer instant.Stop()
	webPrivate := cfg.AgentWebReach.allowPrivate(chainSet.realCount())
	log.Info("agents' web requests", "reach", cfg.AgentWebReach.String(), "private_addresses", webPrivate)
	deps := agent.Deps{
		HTTP:      tools.NewWebClient(tools.WebOptions{AllowPrivate: webPrivate}),
		Store:     store,
		Feed:      feed,
		Log:       log,
		Keys:      agent.EnclaveKeys(enclaves),
		Chains:    chainSet.refs,
		Models:    func(p, key string) (llms.Model, error) { return models.Model(llm.Provider(p), key) },
		PublicURL: strings.TrimRight(cfg.PublicURL, "/"),
		Metrics:   mets,
		Failpoint: failpoints.Hook(),
		Sent:      instant.Sent,
	}
	if !cfg.Cluster {
		// The read path (docs/architecture.md): agent and status reads are
		// served from the actors' snapshots. A cluster member reads through
		// the owning member's actor, which checks its ownership.
		deps.Snapshots = agent.NewSnapshots()
	}
	var member *cluster.Member
	host := host.NewHost(system, agentLoader(cfg, deps, func() string { return member.Self() }), host.HostConfig{
		PassivateAfter: cfg.PassivateAfter,
		MaxActive:      cfg.MaxActive,
		MemoryLimit:    uint64(cfg.MemoryLimitMiB) << 20,
		Stale:          staleActivation,
	}, log, mets)

	agents = host
	if cfg.Cluster {
		var rejoin context.CancelCauseFunc
		ctx, rejoin = context.WithCancelCause(ctx)
		defer rejoin(nil)
		if member, err = joinCluster(ctx, cfg, system, host, store, feed, rejoin, mets, log); err != nil {
			return err
		}
		stopSystem = member.Stop
		agents = member
	}
	var placement func() scanner.View
	var topology func() <-chan struct{}
	if member != nil {
		placement, topology = clusterView(member), member.Changed
	}
	stopMoney := startMoneyServices(store, agents, agent.EnclaveKeys(enclaves), chainSet.refs, placement, topology, mets, log, cfg.WebhookAllowPrivate)
	defer stopMoney()
	// The connectors' settlements reach the payment records from now on;
	// those that came before wait in the connectors' outboxes.
	chainSet.settled.Set(settleReceiver(agents))
	defer chainSet.settled.Set(nil)
	var apiAgents httpapi.Agents = agents
	if deps.Snapshots != nil {
		apiAgents = deps.Snapshots.Reads(agents)
	}
	readyz := readiness(cfg, store, chainSet, func(ctx context.Context) error { _, err := enclaves.Info(ctx); return err }, member, time.Now)
	readyz.Add(relayerChecks(relayers)...)
	api := httpapi.New(httpapi.Config{Store: store, Agents: apiAgents, Logger: log, TEE: enclaves, OnRequest: mets.Request, RateLimit: rateLimit(cfg),
		Limits: httpapi.Limits{BodyTimeout: cfg.BodyTimeout, WriteTimeout: cfg.WriteTimeout, ChatWriteTimeout: cfg.ChatWriteTimeout, IdleTimeout: cfg.IdleTimeout},
		Feed:   feed, WebhookAllowPrivate: cfg.WebhookAllowPrivate, MaxStreamsPerKey: cfg.MaxStreamsPerKey, StreamPoll: cfg.StreamPoll, Ready: readyz, Explorers: chainSet.explorers, Networks: chainSet.networks})
	if cfg.MetricsAddr != "" && cfg.MetricsAddr != "off" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listen for metrics on %s: %w (choose another --metrics-addr, or off)", cfg.MetricsAddr, err)
		}
		msrv := &http.Server{Handler: metricsMux(mets, readyz, cfg.Pprof), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
		log.Info("metrics serving", slog.String("addr", mln.Addr().String()))
	}
	// The first start's key is made only now, when everything that can
	// refuse to start (a missing VEIL_RPC_*, a port in use, the enclave)
	// has passed: a key printed by a run that never served is a key spent.
	key, err := apikey.Bootstrap(ctx, store, time.Now())
	if err != nil {
		return err
	}
	if key != "" {
		// stdout, not the log: a key never goes into a log line.
		fmt.Fprintf(stdout, "\nBootstrap API key for account %q (admin scope; shown once; store it now):\n\n    %s\n\n", apikey.BootstrapAccount, key)
	}
	pruneCtx, stopPrune := context.WithCancel(context.Background())
	defer stopPrune()
	go audit.Pruner{Retention: cfg.AuditRetention, Log: log.With(slog.String("component", "audit")), Accounts: func(ctx context.Context) ([]string, error) {
		accs, err := apikey.ListAccounts(ctx, store)
		ids := make([]string, 0, len(accs))
		for _, a := range accs {
			ids = append(ids, a.ID)
		}
		return ids, err
	}}.Run(pruneCtx, store)
	srv := api.HTTPServer() // with the limits on slow and idle clients
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	consoleURL := strings.TrimRight(cfg.PublicURL, "/") + "/console"
	fmt.Fprintf(stdout, "Serving the API on %s; the console is at %s\n", strings.TrimRight(cfg.PublicURL, "/"), consoleURL)
	log.Info("veild serving", slog.String("addr", ln.Addr().String()), slog.String("console", consoleURL), slog.String("data", cfg.Data), slog.String("version", build.String()))

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}

	// Drain: new requests get 503, in-flight ones finish, then the actors
	// stop, and only then (deferred) does the store close.
	grace := cfg.ShutdownGrace
	if errors.Is(context.Cause(ctx), errRejoin) {
		// A member restarting to rejoin is fenced: it runs no agent, and
		// what it drains are requests it forwarded to the others, which
		// finish there whatever happens here. Its restart is a step of
		// the cluster's heal, bounded (docs/cluster.md).
		grace = min(grace, rejoinGrace)
	}
	log.Info("shutting down: draining in-flight requests", slog.Duration("grace", grace))
	api.BeginShutdown()
	if member != nil {
		// Out of the topology first: the others stop routing here while
		// the requests already here finish.
		member.Leave()
	}
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(graceCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("http shutdown incomplete", slog.Any("err", err))
	}
	stopMoney() // the scanners and the reminder deliver to agents: stop them first
	instant.Stop()
	if err := host.Stop(graceCtx); err != nil {
		log.Error("actor shutdown incomplete", slog.Any("err", err))
	}
	log.Info("veild stopped")
	if err := context.Cause(ctx); errors.Is(err, errRejoin) {
		return err
	}
	return nil
}

// enclaveProvider is a provider that releases its resources at shutdown.
type enclaveProvider interface {
	enclave.Provider
	Close() error
}

// openEnclave starts the configured enclave provider. The software root
// comes from VEIL_ENCLAVE_ROOT when set (cluster members must share it; env
// only, never a flag, so it does not show in process listings), else from
// the seal file in the data directory, encrypted when VEIL_SEAL_PASSPHRASE
// or VEIL_SEAL_KEY_FILE is set (seal.go). dstack derives it from the guest
// agent on its Unix socket.
func openEnclave(ctx context.Context, cfg config, log *slog.Logger) (enclaveProvider, error) {
	switch cfg.Enclave {
	case "software":
		pass, err := sealPassphrase(envSealPassphrase, envSealKeyFile)
		if err != nil {
			return nil, err
		}
		defer clear(pass)
		rootHex := os.Getenv("VEIL_ENCLAVE_ROOT")
		p, err := software.OpenWithPassphrase(cfg.Data, rootHex, pass)
		if err != nil {
			return nil, err
		}
		if rootHex == "" && len(pass) == 0 {
			// Said once, at start: a copy of the data directory gives
			// every agent's keys (docs/SECURITY.md).
			log.Warn("enclave root is stored unencrypted: anyone with a copy of the data directory has every agent's keys; set "+envSealPassphrase+" or "+envSealKeyFile+" and run `veild enclave reseal` (docs/enclave.md)",
				slog.String("seal", software.SealPath(cfg.Data)))
		}
		return p, nil
	case "dstack":
		return dstack.Open(ctx, cfg.DstackSocket, dstack.Options{Logger: log})
	default:
		return nil, &usageError{fmt.Sprintf("--enclave %q: want software or dstack", cfg.Enclave)}
	}
}

func apikeyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return &usageError{"usage: veild apikey create --account NAME [--scope read|chat|full|admin] [--name TEXT] [--test] [--data DIR | --store postgres --postgres-dsn DSN]\n(while veild serves, use `veil keys create` or POST /keys instead)"}
	}
	fs := newFlagSet("veild apikey create", stderr)
	data := fs.String("data", "./data", "data directory")
	storeKind := fs.String("store", "bolt", "state store: bolt (the file in --data) or postgres (--postgres-dsn)")
	dsn := fs.String("postgres-dsn", "", "with --store postgres: the connection string")
	account := fs.String("account", "", "account name (created if new)")
	test := fs.Bool("test", false, "issue a veil_test_ key")
	scope := fs.String("scope", "full", "the key's scope: read, chat, full or admin (docs/api.md, Key scopes)")
	name := fs.String("name", "", "what the key is for (shown by veil keys list)")
	rate := fs.Float64("rate-limit", 0, "set this account's per-key rate limit (requests/s); 0 keeps the server default")
	burst := fs.Int("rate-burst", 0, "with --rate-limit: the account's burst")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *account == "" {
		return &usageError{"--account NAME is required"}
	}
	store, err := openStore(ctx, *storeKind, *data, *dsn, storeOptions{})
	if errors.Is(err, persistence.ErrLocked) {
		// The server holds the file: keys are made through it now.
		return fmt.Errorf("%w\nveild is serving on this data directory: create the key through it instead, with an admin key:\n    veil keys create NAME --scope full [--account %s]\n(or POST /keys; docs/api.md, API keys)", err, *account)
	}
	if err != nil {
		return err
	}
	defer store.Close()
	acc, err := apikey.EnsureAccount(ctx, store, *account, time.Now())
	if err != nil {
		return err
	}
	if *rate > 0 {
		if *burst <= 0 {
			*burst = int(2 * *rate)
		}
		if acc, err = apikey.SetRateLimit(ctx, store, acc.ID, &apikey.Limit{PerSecond: *rate, Burst: *burst}); err != nil {
			return err
		}
	}
	sc, err := apikey.ParseScope(*scope)
	if err != nil {
		return &usageError{"--scope: " + err.Error()}
	}
	key, k, err := apikey.Issue(ctx, store, acc, apikey.Options{Name: *name, Scope: sc, Test: *test}, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "API key %s for account %q, scope %s (shown once; store it now):\n", k.ID, acc.Name, k.Scope)
	fmt.Fprintln(stdout, key)
	return nil
}

// metricsMux is the private listener: GET /metrics (Prometheus text
// format) and GET /readyz (for probes that should not use the API port).
// metricsMux serves the private listener: metrics, readiness and, with
// --pprof, Go's profiles. The profiles stay off the API's listener: they
// show stacks and are unauthenticated.
func metricsMux(m *prom.Metrics, readyz http.Handler, profiles bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("GET /readyz", readyz)
	if profiles {
		// One in 10 µs of blocking and one in 10 mutex contentions: enough
		// to find a serialized stage without slowing it beyond recognition.
		runtime.SetBlockProfileRate(10_000)
		runtime.SetMutexProfileFraction(10)
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux
}

func rateLimit(cfg config) httpapi.RateLimit {
	if cfg.RatePerSecond <= 0 || cfg.RateBurst <= 0 {
		return httpapi.RateLimit{PerSecond: -1} // off
	}
	return httpapi.RateLimit{PerSecond: cfg.RatePerSecond, Burst: cfg.RateBurst}
}
