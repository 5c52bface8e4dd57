package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/internal/failpoint"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// ChainKeys are an agent's public identity on one chain.
type ChainKeys struct {
	Address     string
	MetaAddress string
}

// Keys is what the agent needs of the enclave. Private keys stay behind it.
type Keys interface {
	Derive(ctx context.Context, agentID string, chain chains.ID) (ChainKeys, error)
	Export(ctx context.Context, agentID string, chain chains.ID) (string, error)
	Attest(ctx context.Context, agentID string, deployed []chains.ID, nonce string) (enclave.Attestation, error)
	ScanKeys(ctx context.Context, agentID string, chain chains.ID) (enclave.ScanKeys, error)
}

// Deps are the services an agent actor uses.
type Deps struct {
	Store persistence.Store
	Log   *slog.Logger
	// Snapshots, when set, receives the record of every active agent for
	// the read path (snapshot.go). One node only: veild leaves it nil in a
	// cluster.
	Snapshots *Snapshots
	Keys      Keys
	Chains    ChainSet
	// PublicURL is the base of invoice payment links.
	PublicURL string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Models builds a request's model; chat needs it.
	Models Models
	// Tools overrides the offered tools (tests); nil means tools.All().
	Tools []tools.Tool
	// Metrics, when set, records the agent's chats, model and tool calls
	// and payments.
	Metrics Metrics
	// Feed, when set, is told of every notification stored (the
	// notification stream watches it).
	Feed *Feed
	// Sent, when set, is told of each stealth payment this agent sent to
	// another agent of this Veil by name (e.g. "bob.veil") — from a chat
	// tool, a schedule's run or an approved payment — so that the
	// payee is notified as soon as the transaction is confirmed
	// (actors/scanner.Instant). It must not block.
	Sent func(chain chains.ID, payee, txHash string)
	// HTTP, when set, is the tools' web client (pay_invoice's foreign
	// links, fetch_paid); nil: each tool's default (fetch_paid's reaches
	// public addresses only).
	HTTP *http.Client
	// Failpoint, when set, is called at the dangerous steps of a request
	// (FailAfterTools, …; internal/failpoint); an error it returns aborts
	// the request right there, as a crash would. Tests only.
	Failpoint failpoint.Hook

	// toolDefs are the model's definitions of Tools (set by Loader).
	toolDefs []llms.Tool
}

// Metrics is what the agent reports (runtime/prom implements it).
type Metrics interface {
	Chat(agentID string, d time.Duration)
	Tool(agentID, tool, status string)
	Model(agentID, provider string, prompt, completion int)
	Payment(agentID string, chain chains.ID)
}

type nopMetrics struct{}

func (nopMetrics) Chat(string, time.Duration)     {}
func (nopMetrics) Tool(string, string, string)    {}
func (nopMetrics) Model(string, string, int, int) {}
func (nopMetrics) Payment(string, chains.ID)      {}

// Failpoints of the chat loop.
const (
	// FailAfterTools: the tools of a response ran (payments broadcast),
	// nothing of it is stored and the client has no reply.
	FailAfterTools = "chat.after-tools"
)

// Failpoints of the create flow: where a crash or timeout leaves the
// client without an answer. A retry of the same signed request then gets
// the agent (docs/api.md, "Agents").
const (
	// FailBeforeCreateStore: keys derived, funding sent, nothing stored.
	FailBeforeCreateStore = "create.before-store"
	// FailAfterCreateStore: the agent and its used signature are stored,
	// the name registration not sent, the client has no answer.
	FailAfterCreateStore = "create.after-store"
	// FailAfterCreateRegister: the name registration ran, its outcome is
	// not saved, the client has no answer.
	FailAfterCreateRegister = "create.after-register"
)

func (d *Deps) fail(name string) error { return d.Failpoint.Hit(name) }

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now().UTC()
	}
	return time.Now().UTC()
}

// Loader returns the runtime's activation function for agent actors. An
// activation reads the agent record only; conversations and the inbox are
// read when a message needs them.
func Loader(d Deps) host.Loader {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = nopMetrics{}
	}
	// The tools and their definitions are built once per host, not per
	// chat (they were a quarter of a chat's allocations; issue 21). The
	// slices are only read, so every actor shares them.
	if d.Tools == nil {
		d.Tools = tools.All()
	}
	d.toolDefs = toolDefinitions(d.Tools)
	return func(ctx context.Context, id string) (host.Agent, error) {
		// Whatever a previous incarnation published is not trusted: this
		// activation publishes what it loads.
		d.Snapshots.drop(id)
		a := &Actor{deps: &d, id: id}
		rec, err := d.Store.Get(ctx, TableAgents, id)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			// Not created (yet): the actor answers not-found to everything
			// but Create.
		case err != nil:
			return nil, fmt.Errorf("agent %s: load: %w", id, err)
		default:
			if a.rec, err = decodeRecord(rec.Value); err != nil {
				return nil, err
			}
			a.version = rec.Version
			a.publish()
		}
		return a, nil
	}
}

// Actor is one activated agent.
type Actor struct {
	// deps are shared by every actor of the host (Loader's), not copied:
	// a copy was ~200 bytes of each active agent (issue 38 item 4).
	deps    *Deps
	id      string
	rec     *Record
	version uint64
	// resumeAt: when to retry the setup steps left pending next (zero:
	// on this activation's first request; resume.go).
	resumeAt time.Time
	// published is the snapshot this activation published last (nil:
	// none), so that stopping drops its own and no other.
	published *snapshot
	// nextMessageID is the next message id of the block this activation
	// reserved in rec.LastMessageID (0: none reserved yet; messageids.go).
	nextMessageID int64
}

// log is the request's logger (with its request id) when there is one.
func (a *Actor) log(ctx context.Context) *slog.Logger {
	return host.Logger(ctx, a.deps.Log).With(slog.String("agent", a.id))
}

func (r *Record) deployed() []chains.ID {
	out := make([]chains.ID, 0, len(r.Chains))
	for _, c := range r.Chains {
		out = append(out, chains.ID(c))
	}
	return out
}

// saveRecord writes the agent record guarded by its version, alongside any
// other operations, and adopts the new version.
func (a *Actor) saveRecord(ctx context.Context, rec *Record, ops ...persistence.Op) error {
	_, err := a.saveRecordVersions(ctx, rec, ops...)
	return err
}

// saveRecordVersions is saveRecord answering the new version of each op
// (the record's last).
func (a *Actor) saveRecordVersions(ctx context.Context, rec *Record, ops ...persistence.Op) ([]uint64, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	ops = append(ops, persistence.Put(TableAgents, a.id, raw, persistence.AtVersion(a.version)))
	vs, err := a.deps.Store.Apply(ctx, ops...)
	if err != nil {
		return nil, fmt.Errorf("agent %s: save: %w", a.id, err)
	}
	a.rec, a.version = rec, vs[len(vs)-1]
	a.publish()
	return vs, nil
}

// clone copies the record so that a failed write leaves memory as stored.
func (r *Record) clone() *Record {
	c := *r
	c.Chains = append([]string(nil), r.Chains...)
	c.Addresses = cloneMap(r.Addresses)
	c.MetaAddresses = cloneMap(r.MetaAddresses)
	c.Funding = cloneMap(r.Funding)
	c.Registration = cloneMap(r.Registration)
	return &c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
