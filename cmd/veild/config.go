package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/persistence"
)

// config is everything `veild serve` reads from flags and VEIL_* env.
// Every flag has an env twin: --data ↔ VEIL_DATA, --passivate-after ↔
// VEIL_PASSIVATE_AFTER. A flag given on the command line wins over env.
type config struct {
	Data            string
	Addr            string
	LogLevel        string
	LogFormat       string
	PassivateAfter  time.Duration
	AuditRetention  time.Duration
	ShutdownGrace   time.Duration
	PublicURL       string
	Enclave         string
	DstackSocket    string
	DevnetBasePort  int
	MetricsAddr     string
	MetricsLabelCap int
	Pprof           bool
	MaxActive       int
	MemoryLimitMiB  int
	RatePerSecond   float64
	RateBurst       int
	// MaxStreamsPerKey caps one API key's open streams (httpapi).
	MaxStreamsPerKey int
	// StreamPoll is the notification streams' fallback read of the store
	// (httpapi.Config.StreamPoll).
	StreamPoll time.Duration

	// Slow and idle HTTP clients (httpapi.Limits; docs/api.md, "Limits").
	BodyTimeout      time.Duration
	WriteTimeout     time.Duration
	ChatWriteTimeout time.Duration
	IdleTimeout      time.Duration
	// WebhookAllowPrivate lets webhooks reach private, loopback and
	// link-local addresses (development and tests only).
	WebhookAllowPrivate bool
	// AgentWebReach is which hosts the agents' web requests may reach
	// (webreach.go).
	AgentWebReach webReach
	ReadyTimeout  time.Duration
	ReadyHeadAge  time.Duration

	// Store selects the backend: bolt (one node) or postgres (cluster).
	Store       string
	PostgresDSN string
	// StoreLog: bbolt commits through its write-ahead log (the default);
	// false is the pre-log path, kept for measuring (issue 38).
	StoreLog bool
	// StoreLogAIO: the log's records are made durable with Linux AIO
	// (the default; persistence.BoltOptions.PlainSync when false).
	StoreLogAIO bool
	// StoreApplyDelay: the least time between two of the bbolt log
	// applier's transactions (persistence.BoltOptions.ApplyDelay); 0: none.
	StoreApplyDelay time.Duration

	// Cluster mode (docs/cluster.md).
	Cluster         bool
	ClusterName     string
	ClusterAddr     string
	ClusterProvider string
	ClusterSeeds    string
	ClusterHealth   string
	// ClusterAdvertise and ClusterHealthAdvertise are where the others
	// reach this member when that is not where it binds (NAT, a proxy).
	ClusterAdvertise       string
	ClusterHealthAdvertise string
	// ClusterSize is the configured member count for the majority rule.
	ClusterSize  int
	ChainsConfig string
	// RequireAllChains: a chain whose node does not answer at start stops
	// the start (else it starts degraded; docs/operations.md).
	RequireAllChains bool

	// Relayers (docs/operations.md, "Relayers"; relayerConfig).
	Relayer           string
	RelayerMinBalance string
	RelayerMaxSpend   string
	RelayerFee        string
	RelayerMinRunway  int
}

func envName(flagName string) string {
	return "VEIL_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// bindFlags declares cfg's flags on fs with env-derived defaults.
func (c *config) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Data, "data", "./data", "data directory (bbolt file, sealed enclave root)")
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address of the API")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&c.PassivateAfter, "passivate-after", 5*time.Minute, "idle time after which an agent actor is passivated")
	fs.DurationVar(&c.AuditRetention, "audit-retention", 90*24*time.Hour, "how long audit records are kept (docs/api.md, Audit trail); a background pruner deletes older ones hourly; 0 keeps them forever")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 30*time.Second, "how long SIGINT/SIGTERM waits for in-flight requests")
	fs.StringVar(&c.Enclave, "enclave", "software", "enclave provider: software (root sealed in the data directory) or dstack")
	fs.StringVar(&c.DstackSocket, "dstack-socket", "", "with --enclave dstack: the guest agent's Unix socket (default /var/run/dstack.sock)")
	fs.IntVar(&c.DevnetBasePort, "devnet-base-port", 18545, "first loopback port of the EVM devnets (horizen, ethereum, polygon, base on consecutive ports); 0 picks free ports")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9464", "listen address of GET /metrics (unauthenticated; keep it private), or off")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go's profiles (/debug/pprof/) on the metrics address, with block and mutex profiling on (costs some speed: for measuring, e.g. scripts/scale-bench.sh PROFILE=1)")
	fs.IntVar(&c.MetricsLabelCap, "metrics-label-cap", 1000, "active agents that get their own metric series; the rest aggregate as agent=\"_other\"")
	fs.IntVar(&c.MaxActive, "max-active", 0, "cap on active agent actors (least recently used passivate first); 0: no cap")
	fs.IntVar(&c.MemoryLimitMiB, "memory-limit-mib", 0, "Go heap size (MiB) above which least recently used agents are passivated; 0: off")
	fs.Float64Var(&c.RatePerSecond, "rate-limit", 50, "requests per second per API key (token bucket refill) for accounts without their own limit; 0 turns limits off")
	fs.IntVar(&c.RateBurst, "rate-burst", 100, "requests an API key may make at once (token bucket size)")
	fs.IntVar(&c.MaxStreamsPerKey, "max-streams-per-key", httpapi.DefaultMaxStreamsPerKey, "streams (the notification stream) one API key may hold open at once; more are a 429 with Retry-After; -1: no cap")
	fs.DurationVar(&c.StreamPoll, "stream-poll", httpapi.DefaultStreamPoll, "how often a notification stream reads the store in case a wake-up was lost (a cluster member's wake-ups reach the others' streams at once)")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", httpapi.DefaultLimits.BodyTimeout, "a request body must arrive within this after its headers (else 408 and the connection closes)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", httpapi.DefaultLimits.WriteTimeout, "an ordinary reply must be written within this")
	fs.DurationVar(&c.ChatWriteTimeout, "chat-write-timeout", httpapi.DefaultLimits.ChatWriteTimeout, "the reply of POST /agent/:id/chat (a hosted model) must be written within this")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", httpapi.DefaultLimits.IdleTimeout, "an idle keep-alive connection is closed after this")
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private", false, "let webhooks reach private, loopback and link-local addresses (development and tests only; docs/webhooks.md)")
	fs.Var(&c.AgentWebReach, "agent-web-reach", "hosts the agents' web requests (pay_invoice's payment links of other servers, fetch_paid) may reach: public, any (loopback and private too), or auto: any while every chain is a devnet, else public")
	fs.DurationVar(&c.ReadyTimeout, "ready-timeout", 5*time.Second, "time limit of each check of GET /readyz")
	fs.DurationVar(&c.ReadyHeadAge, "ready-head-age", 2*time.Minute, "GET /readyz fails when a real network's latest block is older than this (devnets are not checked); 0: not checked")
	fs.StringVar(&c.PublicURL, "public-url", "", "public base URL of this server (default http://<addr>)")
	fs.StringVar(&c.Store, "store", "bolt", "state store: bolt (the file in --data) or postgres (--postgres-dsn; required with --cluster)")
	fs.BoolVar(&c.StoreLog, "store-log", true, "bbolt store: commit through the write-ahead log (default); false commits each group to bbolt itself, the pre-log path, for measuring")
	fs.BoolVar(&c.StoreLogAIO, "store-log-aio", true, "bbolt store with its write-ahead log: sync the log with Linux AIO, the committer parked and its CPU free for requests while the disk works (default); false: fdatasync, and veild runs one GOMAXPROCS more than the CPUs so that the sync's held P is a spare. Where the kernel refuses AIO, fdatasync is used anyway")
	fs.DurationVar(&c.StoreApplyDelay, "store-apply-delay", persistence.DefaultApplyDelay, "bbolt store with its write-ahead log: the least time between two of the applier's bbolt transactions; the writes logged meanwhile share the next one (fewer pages written per write). Every answered write is durable and visible before; 0: no delay")
	fs.StringVar(&c.PostgresDSN, "postgres-dsn", "", "with --store postgres: the connection string, e.g. postgres://veil@db:5432/veil")
	fs.BoolVar(&c.Cluster, "cluster", false, "join a protoactor cluster: agents are placed on members by id (docs/cluster.md)")
	fs.StringVar(&c.ClusterName, "cluster-name", "veil", "with --cluster: the cluster's name; members with another name are ignored")
	fs.StringVar(&c.ClusterAddr, "cluster-addr", "127.0.0.1:0", "with --cluster: host:port of this member's actor remoting (gRPC), reachable by the other members")
	fs.StringVar(&c.ClusterProvider, "cluster-provider", "automanaged", "with --cluster: membership provider: automanaged (--cluster-seeds) or k8s")
	fs.StringVar(&c.ClusterSeeds, "cluster-seeds", "", "with --cluster-provider automanaged: comma-separated host:port health addresses of all members")
	fs.StringVar(&c.ClusterHealth, "cluster-health-addr", "", "with --cluster-provider automanaged: host:port this member's health endpoint binds (must appear in --cluster-seeds, unless --cluster-health-advertise-addr does)")
	fs.StringVar(&c.ClusterAdvertise, "cluster-advertise-addr", "", "with --cluster: host:port the other members dial for this member's remoting, when not --cluster-addr (NAT, proxy); it is the member's identity in placement")
	fs.StringVar(&c.ClusterHealthAdvertise, "cluster-health-advertise-addr", "", "with --cluster-provider automanaged: this member's entry in --cluster-seeds, when the others reach its health endpoint elsewhere than --cluster-health-addr")
	fs.IntVar(&c.ClusterSize, "cluster-size", 0, "with --cluster: how many members the cluster has; one that sees fewer than a majority serves no agent (default: the number of --cluster-seeds; required with k8s)")
	fs.StringVar(&c.ChainsConfig, "chains-config", "", "JSON file of chain connector settings written by `veild devnet` (shared devnets for a cluster); default: start embedded devnets")
	fs.StringVar(&c.Relayer, "relayer", "none", "chains whose relayer pays what one-time addresses need (EVM gas and x402 settlements, the Solana fee, the Stellar sponsor), so that no agent's main account funds them: comma-separated chains, all, or none (docs/operations.md, Relayers)")
	fs.StringVar(&c.RelayerMinBalance, "relayer-min-balance", "", "chain=amount pairs of the native asset under which /readyz warns about a relayer (default 0.01 on EVM chains, 0.05 SOL, 10 XLM)")
	fs.StringVar(&c.RelayerMaxSpend, "relayer-max-spend", "", "chain=amount pairs: the most one relayer signature may pay, in the native asset (default 0.01 on EVM chains, 0.01 SOL, 5 XLM)")
	fs.StringVar(&c.RelayerFee, "relayer-fee", "", "chain:asset=amount pairs: the fee a relayer takes from a token withdrawal it pays for, out of the amount moved (default USDC 0.05 on EVM chains, 0.01 on Solana and Stellar; 0: none)")
	fs.IntVar(&c.RelayerMinRunway, "relayer-min-runway", 0, "relays (at the recent mean cost) under which /readyz warns about a relayer; 0: the default, 20")
	fs.BoolVar(&c.RequireAllChains, "require-all-chains", false, "refuse to start when a chain's node does not answer (default: that chain starts degraded, answers 503 and connects as soon as its node answers)")
}

// newFlagSet is the flag set of the veild command name (usage errors and
// -h on stderr).
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args, then gives every flag not on the command line
// its VEIL_* twin's value (one that does not parse is a usage error).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyEnv(fs); err != nil {
		return &usageError{err.Error()}
	}
	return nil
}

// parseServerFlags is parseFlags for a long-running command (serve,
// devnet), which takes no arguments and logs as cfg's --log-level and
// --log-format say.
func parseServerFlags(fs *flag.FlagSet, args []string, cfg *config) (*slog.Logger, error) {
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, &usageError{fmt.Sprintf("%s takes no arguments, got %q", strings.TrimPrefix(fs.Name(), "veild "), fs.Args())}
	}
	log, err := cfg.logger()
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	return log, nil
}

// applyEnv sets every flag not given on the command line from its VEIL_*
// twin, and reports which env value did not parse.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
		}
	})
	return err
}

func (c *config) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch c.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
	}
}
