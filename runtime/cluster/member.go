// Package cluster runs Veil as a protoactor-go cluster: members find each
// other through a cluster provider (automanaged seed list or Kubernetes),
// talk over protoactor's gRPC remoting, and every agent lives on exactly one
// member, chosen by rendezvous hashing of its id over the live members. Any
// member accepts any request and forwards it, as a protobuf envelope
// (Codec: actors/msg's, injected by veild), to the agent's member, whose host.Host activates the
// agent as usual: a virtual actor, placed by the cluster.
//
// Why not protoactor's own identity lookup and cluster.Request: disthash
// reads its hash ring while topology updates write it (a data race the race
// detector reports), and cluster.Request resends a request that timed out,
// which for a chat that pays could pay twice. Here a request is sent once;
// only a request that provably was not processed (dead letter, or refused by
// a member that does not own the agent) is sent again. docs/cluster.md.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/labstack/echo"

	"github.com/veilhq/veil/runtime/host"
)

// routerName is the well-known actor of every member that receives agent
// requests from the others.
const routerName = "veil-agents"

// codeNotOwner marks a request refused, unprocessed, by a member that does
// not own the agent in its view of the topology.
const codeNotOwner = "cluster.not-owner"

// codeFenced marks a request refused, unprocessed, by a fenced member.
const codeFenced = "cluster.fenced"

// errNotOwner is what a member answers for an agent it does not own.
var errNotOwner = errors.New("cluster: this member does not own the agent")

// Config configures a member. Zero values take the defaults.
type Config struct {
	// Name is the cluster's name; members of other clusters are ignored.
	Name string
	// Addr is host:port of this member's remoting (gRPC) listener; port 0
	// picks a free one. When the host is an IP, connections to the other
	// members also leave from it.
	Addr string
	// Advertise is host:port the other members dial to reach this
	// member's remoting, when that is not Addr (NAT, a proxy); it is this
	// member's identity in placement. Default: the address Addr bound.
	Advertise string
	// Provider is "automanaged" (Seeds, HealthAddr) or "k8s".
	Provider string
	// Seeds are the health addresses of every member (automanaged), as
	// the members reach them.
	Seeds []string
	// HealthAddr is where this member's health endpoint listens
	// (automanaged); port 0 picks a free one.
	HealthAddr string
	// HealthAdvertise is this member's own entry in Seeds, when the others
	// reach its health endpoint at another address than HealthAddr
	// (default HealthAddr). This member polls itself directly.
	HealthAdvertise string
	// Expected is the number of members the cluster is configured with.
	// A member that sees fewer than a majority of them is fenced: it
	// serves no agent (keep-majority, docs/cluster.md). Default: the number
	// of Seeds (automanaged); with k8s 0 turns the quorum rule off.
	Expected int
	// RefreshEvery is how often the automanaged provider polls the seeds;
	// a killed member leaves the topology within about twice this.
	// Default 1s.
	RefreshEvery time.Duration
	// DefaultTimeout bounds a forwarded request whose context has no
	// deadline. Default 60s.
	DefaultTimeout time.Duration
	// HeartbeatExpiration is protoactor's gossip heartbeat expiry: a
	// member whose gossip this member has not heard for this long is
	// blocked by id for good. Membership itself comes from the provider
	// (a dead member leaves the topology within a poll or two, and one
	// that left is blocked then), so this only has to outlast gossip
	// delayed by load. Default 30s: at 10 s, on 2 cores at load 25-30,
	// gossip timed out long enough to block live members.
	HeartbeatExpiration time.Duration
	// DroppedFor is how long the others must consistently leave this
	// member out (while they answer, without having blocked it) before it
	// restarts to rejoin: longer than a normal join takes to show up in
	// their next poll. Default 3s. A member blocked by id by one that the
	// cluster counts restarts at once.
	DroppedFor time.Duration
	// JoinFor is DroppedFor for a member the others have never counted:
	// joining takes a poll round or two on their side, longer under load.
	// Default 30s.
	JoinFor time.Duration
	// Rejoin is called (once) when this member finds that the others
	// dropped it for good: protoactor blocks a member that left by its
	// actor system id, so a paused or partitioned process that comes back
	// is never admitted again. It must restart the process (a fresh id
	// rejoins); veild exits with ExitRejoin for its supervisor. Nil: the
	// member stays fenced.
	Rejoin func(reason string)

	Host *host.Host
	// Codec is the wire format of the envelopes (msg.NewWire in veild).
	Codec Codec
	Log   *slog.Logger
	// Observe, when set, is called after every request with whether it
	// crossed to another member, for metrics.
	Observe func(remote bool, d time.Duration, err error)
	// OnNotify, when set, is called with an agent's id when another
	// member tells this one (its Notify) that the agent stored a
	// notification: veild wakes this process's notification streams of
	// the agent (agent.Feed's Wake). It must not block.
	OnNotify func(agentID string)
	// OnListen, when set, is called once the remoting and health
	// listeners are bound, before this member talks to any other: what
	// forwards Advertise and HealthAdvertise to them (a proxy in tests)
	// must be in place by the time it returns.
	OnListen func(remote, health string)
}

func (c *Config) defaults() {
	if c.Name == "" {
		c.Name = "veil"
	}
	if c.Provider == "" {
		c.Provider = "automanaged"
	}
	if c.RefreshEvery <= 0 {
		c.RefreshEvery = time.Second
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 60 * time.Second
	}
	if c.HeartbeatExpiration <= 0 {
		c.HeartbeatExpiration = 30 * time.Second
	}
	if c.DroppedFor <= 0 {
		c.DroppedFor = 3 * time.Second
	}
	if c.JoinFor <= 0 {
		c.JoinFor = 30 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.HealthAdvertise == "" {
		c.HealthAdvertise = c.HealthAddr
	}
	if c.Expected == 0 && c.Provider == "automanaged" {
		c.Expected = len(c.Seeds)
	}
}

// Member is this process's membership in the cluster. It implements the
// Request method the HTTP layer, the scanners and the reminder use to reach
// agents.
type Member struct {
	cfg    Config
	system *actor.ActorSystem
	cl     *cluster.Cluster
	self   string // this member's remoting address
	health *http.Server
	// auto is the automanaged provider, stopped with the member: the
	// cluster's non-graceful Shutdown leaves its polling loop running.
	auto *automanaged.AutoManagedProvider

	listen     string // the remoting listener's own address
	healthAddr string // the health listener's own address
	client     *http.Client

	mu       sync.RWMutex
	members  []string                      // live members' addresses, sorted
	ids      map[string]bool               // live members' actor system ids
	inflight map[string]map[*call]struct{} // forwarded requests by member
	addrIDs  map[string]string             // the member id last seen at each address (replacedAddresses)
	answers  *answers                      // the forwarded requests this member took (answers.go)
	// lose, in tests only (export_test.go), makes the router lose a
	// request ("request") or its answer ("answer") as protoactor can; it
	// sees the envelope and its sender, to deliver it again later.
	lose atomic.Pointer[func(what, agentID string, envelope any, sender *actor.PID) bool]
	// dropEndpoint ends protoactor's endpoint for an address
	// (endpoints.go); nil in tests without remoting.
	dropEndpoint func(addr string)
	changed      chan struct{} // closed and replaced on every topology change
	fence        fenceState

	stopping atomic.Bool
	stopOnce sync.Once
	done     chan struct{}    // closed by Stop: ends the watchdog
	kick     chan struct{}    // a poll round now (a stall was noticed)
	clock    func() time.Time // the fencing's clock (nil: time.Now; tests set a fake one)
}

// call is one forwarded request waiting for its answer.
type call struct {
	lost chan struct{} // closed when its member leaves the topology
}

// Start joins the cluster with system (whose remoting it starts) and
// returns once this member sees itself in the topology, bounded by ctx.
func Start(ctx context.Context, system *actor.ActorSystem, cfg Config) (m *Member, err error) {
	cfg.defaults()
	if cfg.Host == nil || cfg.Codec == nil {
		return nil, errors.New("cluster: Host and Codec are required")
	}
	registerErrors(cfg.Codec)
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("cluster address %q: %w (want host:port)", cfg.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("cluster address %q: bad port: %w", cfg.Addr, err)
	}
	m = &Member{cfg: cfg, system: system, inflight: map[string]map[*call]struct{}{}, changed: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1),
		answers: newAnswers(time.Now)}
	m.fence.init()

	provider, err := m.provider()
	if err != nil {
		return nil, err
	}
	m.auto, _ = provider.(*automanaged.AutoManagedProvider)
	var ropts []remote.ConfigOption
	if cfg.Advertise != "" {
		ropts = append(ropts, remote.WithAdvertisedHost(cfg.Advertise))
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		// Connections to the other members leave from the cluster
		// address: on a host with several interfaces the others (and
		// their firewalls) see this member's traffic come from it.
		ropts = append(ropts, remote.WithDialOptions(dialFrom(ip)...))
	}
	before := listenSockets()
	lookup := &noLookup{bound: func() error {
		// Called by protoactor right after its remoting listener bound,
		// before gossip starts.
		m.listen = system.Address()
		if cfg.Advertise != "" {
			if port != 0 {
				m.listen = cfg.Addr
			} else {
				var err error
				if m.listen, err = boundRemoting(host, before); err != nil {
					return err
				}
			}
		}
		cfg.Log.Info("cluster member listening", slog.String("address", system.Address()), slog.String("listen", m.listen), slog.String("health", m.healthAddr))
		if cfg.OnListen != nil {
			cfg.OnListen(m.listen, m.healthAddr)
		}
		return nil
	}}
	ccfg := cluster.Configure(cfg.Name, provider, lookup, remote.Configure(host, port, ropts...),
		cluster.WithHeartbeatExpiration(cfg.HeartbeatExpiration))
	m.cl = cluster.New(system, ccfg)
	system.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			m.onTopology(t)
		}
	})
	m.dropEndpoint = func(addr string) {
		system.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: addr})
	}
	if _, err := system.Root.SpawnNamed(actor.PropsFromFunc(m.receive), routerName); err != nil {
		return nil, fmt.Errorf("cluster: spawn the request router: %w", err)
	}
	if _, err := system.Root.SpawnNamed(actor.PropsFromFunc(m.receiveNotify), notifyName); err != nil {
		return nil, fmt.Errorf("cluster: spawn the notification relay: %w", err)
	}
	// StartMember panics where it could return errors (a port in use).
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("cluster: start member on %s: %v (is the port free? choose another --cluster-addr)", cfg.Addr, r)
			}
		}()
		m.cl.StartMember()
	}()
	if err != nil {
		m.closeHealth()
		return nil, err
	}
	m.mu.Lock()
	m.self = system.Address()
	m.mu.Unlock()
	cfg.Log.Info("cluster member started", slog.String("address", m.self), slog.String("listen", m.listen),
		slog.String("health", m.healthAddr), slog.String("provider", cfg.Provider), slog.String("cluster", cfg.Name),
		slog.Int("expected_members", cfg.Expected), slog.String("system_id", system.ID))
	go m.watch()

	for {
		m.mu.RLock()
		in := m.self != "" && slices.Contains(m.members, m.self)
		ch := m.changed
		m.mu.RUnlock()
		if in {
			return m, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			m.Stop()
			return nil, fmt.Errorf("cluster: this member (%s) did not appear in the topology: %w (check that --cluster-seeds lists this member's --cluster-health-addr)", m.Self(), ctx.Err())
		}
	}
}

// provider builds the membership provider.
func (m *Member) provider() (cluster.ClusterProvider, error) {
	switch m.cfg.Provider {
	case "automanaged":
		if len(m.cfg.Seeds) == 0 || m.cfg.HealthAddr == "" {
			return nil, errors.New("cluster: the automanaged provider needs --cluster-seeds and --cluster-health-addr")
		}
		if !slices.Contains(m.cfg.Seeds, m.cfg.HealthAdvertise) {
			return nil, fmt.Errorf("cluster: this member's health address %s is not in --cluster-seeds %v: the others would not see it (list it, or set --cluster-health-advertise-addr to the seed that reaches it)", m.cfg.HealthAdvertise, m.cfg.Seeds)
		}
		// Our own health server on our own address: the provider's would
		// bind every interface.
		ln, err := net.Listen("tcp", m.cfg.HealthAddr)
		if err != nil {
			return nil, fmt.Errorf("cluster: health endpoint on %s: %w (choose another --cluster-health-addr)", m.cfg.HealthAddr, err)
		}
		m.healthAddr = ln.Addr().String()
		_, hp, _ := net.SplitHostPort(m.healthAddr)
		healthPort, _ := strconv.Atoi(hp)
		e := echo.New()
		e.HideBanner = true
		e.HidePort = true
		e.Listener = ln
		e.GET("/_health", func(c echo.Context) error {
			if m.stopping.Load() || m.Self() == "" {
				return c.NoContent(http.StatusServiceUnavailable)
			}
			h, p, err := m.system.GetHostPort()
			if err != nil {
				return c.NoContent(http.StatusServiceUnavailable)
			}
			asker := c.QueryParam("member")
			return c.JSON(http.StatusOK, healthNode{
				NodeModel:   automanaged.NewNode(m.cfg.Name, m.system.ID, h, p, healthPort, m.cl.GetClusterKinds()),
				Members:     m.memberIDs(),
				BlocksAsker: asker != "" && m.cl.Remote != nil && m.cl.Remote.BlockList().IsBlocked(asker),
			})
		})
		m.health = e.Server
		m.client = &http.Client{Timeout: 2 * time.Second}
		// This member polls itself directly: a partition never hides a
		// member from itself.
		seeds := slices.Clone(m.cfg.Seeds)
		seeds[slices.Index(seeds, m.cfg.HealthAdvertise)] = m.healthAddr
		m.cfg.Seeds = seeds
		return automanaged.NewWithTesting(m.cfg.RefreshEvery, healthPort, e, seeds...), nil
	case "k8s":
		return k8sProvider()
	default:
		return nil, fmt.Errorf("cluster: unknown provider %q: want automanaged or k8s", m.cfg.Provider)
	}
}

// Self is this member's remoting address ("" until it has started).
func (m *Member) Self() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.self
}

// Listen is where this member's remoting listener bound (Advertise is
// what the others dial).
func (m *Member) Listen() string { return m.listen }

// HealthAddr is where this member's health endpoint bound ("" with k8s).
func (m *Member) HealthAddr() string { return m.healthAddr }

// Members lists the live members' addresses as this member sees them.
func (m *Member) Members() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.members)
}

// Changed answers a channel that is closed at the next change of
// Members (the payment scanners re-shard on it).
func (m *Member) Changed() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}

// Owner is the member that hosts the agent with this id.
func (m *Member) Owner(id string) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return owner(m.members, id, m.self)
}

// Place is the member (of members, by address) that owns the agent with
// this id: what every member computes. Tools and tests use it to know
// where an agent lives.
func Place(members []string, id string) string { return owner(members, id, "") }

// owner picks by rendezvous (highest random weight) hashing: every member
// computes the same owner from the same member list, and a change moves only
// the agents of the members that came or went.
func owner(members []string, id, self string) string {
	if len(members) == 0 {
		return self
	}
	var best string
	var bestScore uint64
	for _, addr := range members {
		h := fnv.New64a()
		_, _ = h.Write([]byte(addr))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(id))
		if s := mix(h.Sum64()); best == "" || s > bestScore {
			best, bestScore = addr, s
		}
	}
	return best
}

// mix finalizes an FNV hash (splitmix64) so that similar inputs spread.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// onTopology takes a new member list: requests in flight to members that
// left fail at once (retriable), and agents that now belong elsewhere are
// passivated so that each agent is active on one member.
//
// A member can also leave while its address stays: a new process at the
// same address (a restart quicker than a health poll round) replaces the
// old one in a single topology change. protoactor then terminates the
// remote endpoint of that address for the old member (MemberList's
// TerminateMember), whichever process the endpoint is connected to: the
// writer stops and closes its gRPC connection, and what it sent just
// before, or still holds, is lost without a dead letter (a stopped actor
// drops its mail), including requests to the new process. Requests sent
// to the old process are lost too, and its address never leaves the
// topology. Their futures would wait out their deadlines (20 s in a test
// after a rejoin, 60 s by default), so requests in flight to a restarted
// address fail at once, as for a member that left (host.ErrMemberLost:
// they may or may not have run).
//
// A new process at an address where another one was seen gets a fresh
// endpoint first (endpoints.go), before m.members lets a request reach it.
func (m *Member) onTopology(t *cluster.ClusterTopology) {
	for _, addr := range m.replacedAddresses(t) {
		if m.dropEndpoint != nil {
			m.dropEndpoint(addr)
		}
	}
	next := make([]string, 0, len(t.Members))
	ids := make(map[string]bool, len(t.Members))
	for _, mem := range t.Members {
		next = append(next, mem.Address())
		ids[mem.Id] = true
	}
	slices.Sort(next)
	gone := func(addr string) bool { return !slices.Contains(next, addr) }
	var restarted []string
	for _, mem := range t.Left {
		if addr := mem.Address(); !gone(addr) {
			restarted = append(restarted, addr)
		}
	}
	m.mu.Lock()
	m.ids = ids
	var lost []*call
	for addr, calls := range m.inflight {
		if gone(addr) || slices.Contains(restarted, addr) {
			for c := range calls {
				lost = append(lost, c)
			}
			delete(m.inflight, addr)
		}
	}
	if slices.Equal(next, m.members) {
		m.mu.Unlock()
		for _, c := range lost {
			close(c.lost)
		}
		if len(lost) > 0 {
			m.cfg.Log.Info("cluster member restarted at its address", slog.Any("addresses", restarted), slog.Int("requests_failed_over", len(lost)))
		}
		return
	}
	prev := m.members
	m.members = next
	self := m.self
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()

	for _, c := range lost {
		close(c.lost)
	}
	m.cfg.Log.Info("cluster topology changed", slog.Int("members", len(next)), slog.Any("addresses", next), slog.Int("before", len(prev)), slog.Int("requests_failed_over", len(lost)))
	m.checkQuorum()
	if self != "" {
		m.cfg.Host.PassivateWhere(func(id string) bool { return m.Owner(id) != self })
	}
}

// closeHealth stops the automanaged health endpoint.
func (m *Member) closeHealth() {
	if m.health != nil {
		_ = m.health.Close()
	}
}

// Leave takes this member out of the topology: its health endpoint stops
// answering, so the others stop routing to it. Call it before draining.
func (m *Member) Leave() {
	m.stopping.Store(true)
}

// Stop leaves the cluster and stops remoting. It does not stop the actor
// system's other actors' host; stop the host.Host first.
func (m *Member) Stop() {
	m.stopOnce.Do(func() {
		m.stopping.Store(true)
		close(m.done)
		m.closeHealth()
		if m.auto != nil {
			// Ends its poll loop (after its current sleep), which would
			// otherwise poll the seeds for the life of the process: in a
			// process that hosts several members (tests, benchmarks) it
			// also holds the package-level lock every member's poll takes.
			_ = m.auto.Shutdown(false)
		}
		if m.cl.Remote != nil {
			m.cl.Shutdown(false)
		}
	})
}

// noLookup satisfies protoactor's IdentityLookup: placement is ours
// (owner), so no grain kind is ever looked up through it. Its Setup is the
// one hook between protoactor binding the remoting listener and the member
// starting to gossip: bound runs there (a failure panics, which Start
// turns into its error).
type noLookup struct{ bound func() error }

func (*noLookup) Get(*cluster.ClusterIdentity) *actor.PID        { return nil }
func (*noLookup) RemovePid(*cluster.ClusterIdentity, *actor.PID) {}
func (l *noLookup) Setup(*cluster.Cluster, []string, bool) {
	if err := l.bound(); err != nil {
		panic(err)
	}
}
func (*noLookup) Shutdown() {}
