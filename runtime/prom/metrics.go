// Package prom is Veil's Prometheus instrumentation: one registry per
// process (never the global one), fed by the observers of the runtime, the
// agent actors, the chain actors, the store and the HTTP layer, and served
// in the text format on its own listener.
//
// Per-agent series carry the label agent=<agent id> only while the agent's
// actor is active, and only for the first LabelCap active agents; the
// others aggregate under agent="_other". A passivated agent's series are
// deleted, so cardinality is bounded by the cap, not by the number of
// agents stored. No name, key or address is ever a label value.
package prom

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/veilhq/veil/chains"
)

// OtherAgents is the agent label of agents beyond the cap.
const OtherAgents = "_other"

// DefaultLabelCap bounds the agents that get their own series.
const DefaultLabelCap = 1000

// Metrics holds every collector. All methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	cap int

	mu       sync.Mutex
	labelled map[string]struct{}

	agentMessages *prometheus.CounterVec
	chatLatency   *prometheus.HistogramVec
	toolCalls     *prometheus.CounterVec
	modelCalls    *prometheus.CounterVec
	modelTokens   *prometheus.CounterVec
	payments      *prometheus.CounterVec

	activeActors  prometheus.Gauge
	activations   prometheus.Counter
	activationDur prometheus.Histogram
	passivations  prometheus.Counter
	panics        prometheus.Counter
	inflight      prometheus.Gauge

	commitLatency prometheus.Histogram
	commitBatch   prometheus.Histogram
	applyLatency  prometheus.Histogram
	applyGroups   prometheus.Histogram

	httpRequests *prometheus.CounterVec
	httpLatency  *prometheus.HistogramVec

	chainCalls       *prometheus.HistogramVec
	chainErrors      *prometheus.CounterVec
	chainMaintenance *prometheus.HistogramVec
	chainState       *prometheus.GaugeVec
	scanned          *prometheus.CounterVec
	scanLag          *prometheus.GaugeVec
	scanPairs        *prometheus.CounterVec
	scanPass         *prometheus.HistogramVec
	scanFailures     *prometheus.CounterVec
	scanFailing      *prometheus.GaugeVec

	clusterRequests *prometheus.HistogramVec
	clusterErrors   *prometheus.CounterVec

	webhooks webhookMetrics

	buildInfo *prometheus.GaugeVec
}

// latency buckets from 100µs to ~100s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 16)

// New builds the collectors on a fresh registry. labelCap <= 0 means
// DefaultLabelCap.
func New(labelCap int) *Metrics {
	if labelCap <= 0 {
		labelCap = DefaultLabelCap
	}
	m := &Metrics{reg: prometheus.NewRegistry(), cap: labelCap, labelled: map[string]struct{}{}}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.agentMessages = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_agent_messages_total", Help: "Messages handled by agent actors, by message kind."}, []string{"agent", "kind"})
	m.chatLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_agent_chat_seconds", Help: "Chat request latency inside the agent actor (model calls and tools).", Buckets: latencyBuckets}, []string{"agent"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_agent_tool_calls_total", Help: "Tool calls, by tool and status."}, []string{"agent", "tool", "status"})
	m.modelCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_agent_model_calls_total", Help: "Model calls, by provider."}, []string{"agent", "provider"})
	m.modelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_agent_model_tokens_total", Help: "Model tokens, by direction (prompt, completion)."}, []string{"agent", "direction"})
	m.payments = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_agent_payments_total", Help: "Payments sent by agents, by chain."}, []string{"agent", "chain"})
	for _, c := range []prometheus.Collector{m.agentMessages, m.chatLatency, m.toolCalls, m.modelCalls, m.modelTokens, m.payments} {
		f(c)
	}

	m.activeActors = prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_runtime_active_agents", Help: "Agent actors active now."})
	m.activations = prometheus.NewCounter(prometheus.CounterOpts{Name: "veil_runtime_activations_total", Help: "Agent actor activations."})
	m.activationDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_runtime_activation_seconds", Help: "Time to load an agent from the store on activation.", Buckets: latencyBuckets})
	m.passivations = prometheus.NewCounter(prometheus.CounterOpts{Name: "veil_runtime_passivations_total", Help: "Agent actor passivations."})
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "veil_runtime_agent_panics_total", Help: "Agent handler panics (the actor restarted from the store)."})
	m.inflight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "veil_runtime_requests_in_flight", Help: "Requests waiting for or being handled by agent actors (their mailboxes' depth, summed)."})
	m.commitLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_store_commit_seconds", Help: "Store group-commit latency (one fsync).", Buckets: latencyBuckets})
	m.commitBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_store_commit_batches", Help: "Write batches per group commit.", Buckets: prometheus.ExponentialBuckets(1, 2, 11)})
	m.applyLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_store_apply_seconds", Help: "bbolt store with its write-ahead log: time of one applier transaction, which writes logged groups into the data file (fsync included).", Buckets: latencyBuckets})
	m.applyGroups = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "veil_store_apply_groups", Help: "bbolt store with its write-ahead log: logged groups (group commits) per applier transaction.", Buckets: prometheus.ExponentialBuckets(1, 2, 14)})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_http_requests_total", Help: "HTTP requests, by route pattern, method and status."}, []string{"route", "method", "status"})
	m.httpLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_http_request_seconds", Help: "HTTP request latency by route pattern, method (known methods, else OTHER) and status code (common codes exactly, others as their class).", Buckets: latencyBuckets}, []string{"route", "method", "code"})
	m.chainCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_chain_call_seconds", Help: "Chain actor calls (RPC included), by chain and operation.", Buckets: latencyBuckets}, []string{"chain", "op"})
	m.chainErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_chain_call_errors_total", Help: "Failed chain actor calls, by chain and operation."}, []string{"chain", "op"})
	m.chainMaintenance = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_chain_maintenance_seconds", Help: "Chain actor maintenance passes (rebroadcast, fee bumps).", Buckets: latencyBuckets}, []string{"chain"})
	m.chainState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "veil_chain_state", Help: "1 for each chain's state on this node: serving, degraded (its node did not answer at start; retrying) or reset (its genesis changed: nothing is signed or read on it)."}, []string{"chain", "state"})
	f(m.chainState)
	m.scanned = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_chain_announcements_scanned_total", Help: "Stealth announcements scanned, by chain."}, []string{"chain"})
	m.scanLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "veil_chain_scan_lag_seconds", Help: "Age of the newest announcement a scanner has processed, by chain."}, []string{"chain"})
	m.scanPairs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_chain_scan_pairs_total", Help: "(announcement, agent) pairs the background scanner checked, by chain."}, []string{"chain"})
	m.scanPass = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_chain_scan_pass_seconds", Help: "Background scanner pass duration, by chain.", Buckets: latencyBuckets}, []string{"chain"})
	f(m.scanPairs)
	f(m.scanPass)
	m.scanFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_chain_scan_failures_total", Help: "Background scanner passes that failed (and are retried with backoff), by chain."}, []string{"chain"})
	m.scanFailing = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "veil_chain_scan_failing_passes", Help: "Consecutive failed background scanner passes, by chain (0: the last pass succeeded)."}, []string{"chain"})
	f(m.scanFailures)
	f(m.scanFailing)
	m.clusterRequests = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "veil_cluster_request_seconds", Help: "Agent requests by where the agent lived: local (this member) or remote (forwarded to its member).", Buckets: latencyBuckets}, []string{"placement"})
	m.clusterErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "veil_cluster_request_errors_total", Help: "Agent requests that failed, by placement (local or remote)."}, []string{"placement"})
	f(m.clusterRequests)
	f(m.clusterErrors)
	m.buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "veil_build_info", Help: "Always 1; the labels say which build runs (version, VCS revision, Go version)."}, []string{"version", "revision", "goversion"})
	f(m.buildInfo)
	for _, c := range []prometheus.Collector{m.activeActors, m.activations, m.activationDur, m.passivations, m.panics, m.inflight,
		m.commitLatency, m.commitBatch, m.applyLatency, m.applyGroups, m.httpRequests, m.httpLatency, m.chainCalls, m.chainErrors, m.chainMaintenance, m.scanned, m.scanLag} {
		f(c)
	}
	m.registerWebhooks()
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry (for extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// label is the agent label value of id: its id while it is labelled, else
// OtherAgents.
func (m *Metrics) label(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.labelled[id]; ok {
		return id
	}
	return OtherAgents
}

// Activated implements runtime.Observer.
func (m *Metrics) Activated(id string, load time.Duration) {
	m.mu.Lock()
	if len(m.labelled) < m.cap {
		m.labelled[id] = struct{}{}
	}
	m.mu.Unlock()
	m.activeActors.Inc()
	m.activations.Inc()
	m.activationDur.Observe(load.Seconds())
}

// Passivated implements runtime.Observer: the agent's series go away.
func (m *Metrics) Passivated(id string) {
	m.mu.Lock()
	_, was := m.labelled[id]
	delete(m.labelled, id)
	m.mu.Unlock()
	m.activeActors.Dec()
	m.passivations.Inc()
	if was {
		l := prometheus.Labels{"agent": id}
		for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
			m.agentMessages, m.chatLatency, m.toolCalls, m.modelCalls, m.modelTokens, m.payments,
		} {
			v.DeletePartialMatch(l)
		}
	}
}

// Panicked implements runtime.Observer.
func (m *Metrics) Panicked(string) { m.panics.Inc() }

// Handled implements runtime.Observer.
func (m *Metrics) Handled(id, kind string, _ time.Duration) {
	m.agentMessages.WithLabelValues(m.label(id), kind).Inc()
}

// InFlight implements runtime.Observer.
func (m *Metrics) InFlight(delta int) { m.inflight.Add(float64(delta)) }

// Chat records one chat request of an agent.
func (m *Metrics) Chat(id string, d time.Duration) {
	m.chatLatency.WithLabelValues(m.label(id)).Observe(d.Seconds())
}

// Tool records one tool call.
func (m *Metrics) Tool(id, tool, status string) {
	m.toolCalls.WithLabelValues(m.label(id), tool, status).Inc()
}

// Model records one model call and its token usage.
func (m *Metrics) Model(id, provider string, prompt, completion int) {
	a := m.label(id)
	m.modelCalls.WithLabelValues(a, provider).Inc()
	m.modelTokens.WithLabelValues(a, "prompt").Add(float64(prompt))
	m.modelTokens.WithLabelValues(a, "completion").Add(float64(completion))
}

// Payment records one payment an agent sent.
func (m *Metrics) Payment(id string, chain chains.ID) {
	m.payments.WithLabelValues(m.label(id), string(chain)).Inc()
}

// Commit is the store's group-commit observer.
func (m *Metrics) Commit(batches int, d time.Duration) {
	m.commitBatch.Observe(float64(batches))
	m.commitLatency.Observe(d.Seconds())
}

// LogApply is the observer of the bbolt store's log applier
// (persistence.BoltOptions.ObserveApply): groups written into the data
// file by one transaction, and its time.
func (m *Metrics) LogApply(groups int, d time.Duration) {
	m.applyGroups.Observe(float64(groups))
	m.applyLatency.Observe(d.Seconds())
}

// SetBuildInfo sets veil_build_info{version, revision, goversion} to 1
// (once per process).
func (m *Metrics) SetBuildInfo(version, revision, goVersion string) {
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version, revision, goVersion).Set(1)
}

// Request is the HTTP layer's observer. Unmatched routes share one label;
// method and status are bounded (MethodLabel, CodeLabel) so that a client
// sending odd methods cannot grow the series.
func (m *Metrics) Request(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	method, code := MethodLabel(method), CodeLabel(status)
	m.httpRequests.WithLabelValues(route, method, code).Inc()
	m.httpLatency.WithLabelValues(route, method, code).Observe(d.Seconds())
}

// MethodLabel is method when it is a standard HTTP method, else "OTHER".
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// exactCodes are the status codes the API answers on purpose; they are
// labelled as themselves, every other code as its class ("2xx" … "5xx").
var exactCodes = map[int]bool{
	200: true, 201: true, 202: true, 204: true, 301: true, 302: true, 304: true,
	400: true, 401: true, 403: true, 404: true, 405: true, 408: true, 409: true, 410: true,
	413: true, 415: true, 422: true, 429: true,
	500: true, 501: true, 502: true, 503: true, 504: true,
}

// CodeLabel is the status code when it is one of the fixed set, else its
// class ("4xx"); out-of-range codes are "other".
func CodeLabel(status int) string {
	switch {
	case exactCodes[status]:
		return strconv.Itoa(status)
	case status >= 100 && status < 600:
		return strconv.Itoa(status/100) + "xx"
	}
	return "other"
}

// ClusterRequest observes one agent request routed by a cluster member.
func (m *Metrics) ClusterRequest(remote bool, d time.Duration, err error) {
	placement := "local"
	if remote {
		placement = "remote"
	}
	m.clusterRequests.WithLabelValues(placement).Observe(d.Seconds())
	if err != nil {
		m.clusterErrors.WithLabelValues(placement).Inc()
	}
}

// Call implements the chain actor's observer.
func (m *Metrics) Call(chain chains.ID, op string, took time.Duration, err error) {
	m.chainCalls.WithLabelValues(string(chain), op).Observe(took.Seconds())
	if err != nil {
		m.chainErrors.WithLabelValues(string(chain), op).Inc()
	}
}

// Maintained implements the chain actor's observer.
func (m *Metrics) Maintained(chain chains.ID, took time.Duration, _ error) {
	m.chainMaintenance.WithLabelValues(string(chain)).Observe(took.Seconds())
}

// ChainState implements the chain actor's state observer: the chain's
// one series is its state now.
func (m *Metrics) ChainState(chain chains.ID, state string) {
	m.chainState.DeletePartialMatch(prometheus.Labels{"chain": string(chain)})
	m.chainState.WithLabelValues(string(chain), state).Set(1)
}

// ScanPass records one background scanner pass: announcements read and
// (announcement, agent) pairs checked.
func (m *Metrics) ScanPass(chain chains.ID, announcements, pairs int, took time.Duration) {
	m.scanned.WithLabelValues(string(chain)).Add(float64(announcements))
	m.scanPairs.WithLabelValues(string(chain)).Add(float64(pairs))
	m.scanPass.WithLabelValues(string(chain)).Observe(took.Seconds())
}

// ScanFailed records a failed background scanner pass, the n-th in a row.
func (m *Metrics) ScanFailed(chain chains.ID, n int) {
	m.scanFailures.WithLabelValues(string(chain)).Inc()
	m.scanFailing.WithLabelValues(string(chain)).Set(float64(n))
}

// ScanOK records that a chain's scanner pass succeeded.
func (m *Metrics) ScanOK(chain chains.ID) {
	m.scanFailing.WithLabelValues(string(chain)).Set(0)
}

// Scanned records announcements a scanner processed, and the time of the
// newest one (zero when unknown).
func (m *Metrics) Scanned(chain chains.ID, n int, newest time.Time) {
	m.scanned.WithLabelValues(string(chain)).Add(float64(n))
	if !newest.IsZero() {
		m.scanLag.WithLabelValues(string(chain)).Set(time.Since(newest).Seconds())
	}
}
