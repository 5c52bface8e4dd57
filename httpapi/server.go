// Package httpapi is Veil's REST API: the chi router, bearer-key
// authentication, the spec's error format for every failure, and the
// handlers that turn requests into messages to actors.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/httpapi/console"
	"github.com/veilhq/veil/persistence"
)

// DefaultMaxBody is the request body cap DESIGN.md sets.
const DefaultMaxBody = 64 << 10

// Config is what the API needs from the rest of the process.
type Config struct {
	Store  persistence.Store
	Agents Agents
	// TEE answers /tee/info; nil makes it a 503.
	TEE    TEE
	Logger *slog.Logger
	// MaxBody caps request bodies; 0 means DefaultMaxBody.
	MaxBody int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// RateLimit is the per-key limit of accounts that set none; the zero
	// value means the default (50/s, burst 100). Negative PerSecond: off.
	RateLimit RateLimit
	// OnRequest, when set, is called after every request (for metrics).
	OnRequest func(method, route string, status int, d time.Duration)
	// Feed wakes notification streams when this process stores a
	// notification; nil: streams only poll.
	Feed *agent.Feed
	// StreamPoll is how often a notification stream reads the store
	// without a wake-up of the Feed (a lost one); 0 means
	// DefaultStreamPoll.
	StreamPoll time.Duration
	// MaxStreamsPerKey caps the streams one API key holds open at once
	// (429 above it); 0 means DefaultMaxStreamsPerKey, negative no cap.
	MaxStreamsPerKey int
	// WebhookAllowPrivate accepts webhook URLs naming private, loopback or
	// link-local addresses (development and tests; docs/webhooks.md).
	WebhookAllowPrivate bool
	// Ready answers GET /readyz (runtime/ready.Checker in veild); nil
	// makes it 200 {"status":"ready"} (nothing to check).
	Ready http.Handler
	// Limits bound slow and idle clients (zero fields: DefaultLimits);
	// HTTPServer applies them.
	Limits Limits
	// Explorers are the devnet chains the console's explorer reads
	// (httpapi/console); nil: the explorer knows no chain.
	Explorers map[chains.ID]console.Explorer
	// Networks are the networks the chains run on (console.EVMNetwork…),
	// for the devnet banner of the console and the pay page; nil: the
	// chains with an explorer are embedded devnets, the others unmarked.
	Networks map[chains.ID]console.Network
}

// Agents delivers a message to an agent actor and returns its answer:
// host.Host on one node, runtime/cluster.Member in a cluster.
type Agents interface {
	Request(ctx context.Context, id string, msg any) (any, error)
}

// TEE is what /tee/info needs of the enclave.
type TEE interface {
	Info(ctx context.Context) (enclave.Info, error)
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	store     persistence.Store
	keys      *apikey.Cache // the bearer keys (authenticate), checked against the store's epoch per request
	agents    Agents
	tee       TEE
	log       *slog.Logger
	maxBody   int64
	now       func() time.Time
	onRequest func(method, route string, status int, d time.Duration)
	ready     http.Handler
	draining  atomic.Bool
	router    chi.Router
	rates     RateLimit
	limits    *limiter
	bounds    Limits // slow and idle clients (limits.go)
	streams   *streamSlots

	console *console.Console

	feed                *agent.Feed
	streamPoll          time.Duration
	webhookAllowPrivate bool
	// closing ends the long-lived notification streams at shutdown.
	closing     chan struct{}
	closingOnce sync.Once
}

// New builds the API's router.
func New(cfg Config) *Server {
	s := &Server{
		store:     cfg.Store,
		keys:      apikey.NewCache(),
		agents:    cfg.Agents,
		tee:       cfg.TEE,
		log:       cfg.Logger,
		maxBody:   cfg.MaxBody,
		now:       cfg.Now,
		onRequest: cfg.OnRequest,
		ready:     cfg.Ready,

		feed:                cfg.Feed,
		streamPoll:          cfg.StreamPoll,
		webhookAllowPrivate: cfg.WebhookAllowPrivate,
		closing:             make(chan struct{}),
	}
	if s.streamPoll <= 0 {
		s.streamPoll = DefaultStreamPoll
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.rates = cfg.RateLimit
	if s.rates == (RateLimit{}) {
		s.rates = defaultRateLimit
	}
	s.limits = newLimiter(s.now)
	s.streams = &streamSlots{max: cfg.MaxStreamsPerKey, open: map[string]int{}}
	if cfg.MaxStreamsPerKey == 0 {
		s.streams.max = DefaultMaxStreamsPerKey
	}
	s.bounds = cfg.Limits.withDefaults()
	s.console = console.New(console.Options{Explorers: cfg.Explorers, Networks: cfg.Networks, Logger: s.log})
	s.router = s.routes()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// BeginShutdown makes every later request a 503 in the error format, while
// requests already running finish.
func (s *Server) BeginShutdown() {
	s.draining.Store(true)
	s.closingOnce.Do(func() { close(s.closing) })
}

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.observe, s.drain, s.bodyDeadline, s.limitBody)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed on "+r.URL.Path)
	})
	r.Get("/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	// /health is liveness (the process answers); /readyz is readiness
	// (the store, the chains' nodes, the enclave, the cluster), for load
	// balancers. Both public.
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.ready == nil {
			writeJSON(w, http.StatusOK, map[string]any{"ready": true, "status": "ready", "checks": []any{}, "failing": []any{}})
			return
		}
		s.ready.ServeHTTP(w, r)
	})
	// The API's own description is public, like /health.
	r.Get("/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI())
	})
	s.payRoutes(r)  // the pay page: public, no API key
	s.x402Routes(r) // the invoices' x402 resource: public (docs/x402.md)
	// The console's page, assets and devnet explorer: public (the page
	// signs in with an API key and calls the API like any client).
	s.console.Routes(r)
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, s.rateLimit)
		s.agentRoutes(r)
		s.listRoutes(r) // lists.go: invoices (and payments), paged
		s.consoleRoutes(r)
		s.ownerRoutes(r)
		s.mcpRoutes(r)
		s.keyRoutes(r) // keys and the audit trail (keys.go, audit.go)
	})
	return r
}

func jsonDecoder(r io.Reader) *json.Decoder {
	return json.NewDecoder(r)
}

// jsonErrorText explains a decode error without echoing the body.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "syntax error at byte " + strconv.FormatInt(se.Offset, 10)
	case errors.As(err, &te):
		if te.Field != "" {
			return "field " + te.Field + " must be " + jsonKind(te.Type.Kind().String())
		}
		return "expected a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	default:
		return "malformed JSON"
	}
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	default:
		return "a number"
	}
}
