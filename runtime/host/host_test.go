package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// counter is a test agent whose state is a number persisted in the store.
// "inc" persists +1; "dirty" changes memory without persisting; "boom"
// changes memory and panics; "get" reads memory; "activation" tells which
// activation of this agent answers.
type counter struct {
	st         persistence.Store
	id         string
	n          int
	version    uint64
	activation int
	ev         *events
}

func (c *counter) Receive(ctx context.Context, msg any) (any, error) {
	switch msg {
	case "inc":
		next := c.n + 1
		vs, err := c.st.Apply(ctx, persistence.Put("counters", c.id, []byte(strconv.Itoa(next)), expect(c.version)))
		if err != nil {
			return nil, err
		}
		c.n, c.version = next, vs[0]
		return c.n, nil
	case "dirty":
		c.n += 100
		return c.n, nil
	case "boom":
		c.n += 1000
		panic("boom")
	case "get":
		return c.n, nil
	case "activation":
		return c.activation, nil
	case "wait":
		// In flight until the test releases it.
		c.ev.entered <- c.id
		<-c.ev.release
		return c.n, nil
	}
	return nil, fmt.Errorf("unknown message %v", msg)
}

func expect(v uint64) persistence.Expect {
	if v == 0 {
		return persistence.Absent()
	}
	return persistence.AtVersion(v)
}

var errMissing = errors.New("no such agent")

// events records lifecycle callbacks so tests wait on events, not on time.
type events struct {
	mu          sync.Mutex
	activations map[string]int
	passivated  chan string
	panicked    chan string
	// entered and release drive the "wait" message.
	entered, release chan string
	// freed receives the id of every agent the GC collected.
	freed chan string
}

func newEvents() *events {
	return &events{activations: map[string]int{}, passivated: make(chan string, 1024), panicked: make(chan string, 1024),
		entered: make(chan string, 16), release: make(chan string), freed: make(chan string, 1024)}
}

// fakeClock is a host.Clock the test moves by hand; its tickers tick only
// when the test calls tick.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) host.Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time)
	c.tickers = append(c.tickers, ch)
	return fakeTicker(ch)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// tick fires every ticker once (blocking until each is received).
func (c *fakeClock) tick() {
	c.mu.Lock()
	ts, now := append([]chan time.Time(nil), c.tickers...), c.now
	c.mu.Unlock()
	for _, ch := range ts {
		ch <- now
	}
}

type fakeTicker chan time.Time

func (t fakeTicker) C() <-chan time.Time { return t }
func (t fakeTicker) Stop()               {}

func (e *events) Activated(id string, _ time.Duration)  {}
func (e *events) Passivated(id string)                  { e.passivated <- id }
func (e *events) Panicked(id string)                    { e.panicked <- id }
func (e *events) Handled(string, string, time.Duration) {}
func (e *events) InFlight(int)                          {}

func (e *events) loads(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.activations[id]
}

type fixture struct {
	st   persistence.Store
	host *host.Host
	ev   *events
}

func newFixture(t *testing.T, cfg host.HostConfig) *fixture {
	t.Helper()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	load := func(ctx context.Context, id string) (host.Agent, error) {
		if id == "missing" {
			return nil, errMissing
		}
		ev.mu.Lock()
		ev.activations[id]++
		n := ev.activations[id]
		ev.mu.Unlock()
		c := &counter{st: st, id: id, activation: n, ev: ev}
		runtime.SetFinalizer(c, func(c *counter) { ev.freed <- c.id })
		rec, err := st.Get(ctx, "counters", id)
		if err == nil {
			c.n, _ = strconv.Atoi(string(rec.Value))
			c.version = rec.Version
		} else if !errors.Is(err, persistence.ErrNotFound) {
			return nil, err
		}
		return c, nil
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	host := host.NewHost(system, load, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), ev)
	t.Cleanup(func() {
		_ = host.Stop(context.Background())
		system.Shutdown()
		_ = st.Close()
	})
	return &fixture{st: st, host: host, ev: ev}
}

func (f *fixture) ask(t *testing.T, id string, msg any) (any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return f.host.Request(ctx, id, msg)
}

func (f *fixture) mustAsk(t *testing.T, id string, msg any) any {
	t.Helper()
	v, err := f.ask(t, id, msg)
	if err != nil {
		t.Fatalf("ask %s %v: %v", id, msg, err)
	}
	return v
}

func TestActivationOnFirstMessageLoadsFromStore(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour})
	// State written before the actor ever existed is what it starts from.
	if _, err := f.st.Apply(context.Background(), persistence.Put("counters", "a", []byte("41"), persistence.Absent())); err != nil {
		t.Fatal(err)
	}
	if f.host.Active() != 0 {
		t.Fatalf("active before any message = %d", f.host.Active())
	}
	if got := f.mustAsk(t, "a", "inc"); got != 42 {
		t.Fatalf("inc = %v, want 42", got)
	}
	if got := f.mustAsk(t, "a", "inc"); got != 43 {
		t.Fatalf("inc = %v, want 43", got)
	}
	if got := f.ev.loads("a"); got != 1 {
		t.Fatalf("activations = %d, want 1", got)
	}
	if f.host.Active() != 1 {
		t.Fatalf("active = %d, want 1", f.host.Active())
	}
}

func TestLoadErrorIsReturnedAndDropped(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour})
	_, err := f.ask(t, "missing", "get")
	if !errors.Is(err, errMissing) {
		t.Fatalf("err = %v, want errMissing", err)
	}
	select {
	case id := <-f.ev.passivated:
		if id != "missing" {
			t.Fatalf("passivated %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("failed activation was not dropped")
	}
	if f.host.Active() != 0 {
		t.Fatalf("active = %d, want 0", f.host.Active())
	}
}

// The host's ticker passivates an idle agent (no receive timeout per
// actor); its next message reactivates it from its record.
func TestPassivationAfterIdleAndReactivation(t *testing.T) {
	clock := newFakeClock()
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Minute, Clock: clock})
	f.mustAsk(t, "p", "inc")
	f.mustAsk(t, "p", "dirty") // memory only: must not survive passivation
	clock.advance(time.Minute)
	clock.tick()
	select {
	case id := <-f.ev.passivated:
		if id != "p" {
			t.Fatalf("passivated %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent was not passivated")
	}
	if f.host.Active() != 0 {
		t.Fatalf("active after passivation = %d", f.host.Active())
	}
	if got := f.mustAsk(t, "p", "get"); got != 1 {
		t.Fatalf("after reactivation get = %v, want 1 (the stored state)", got)
	}
	if got := f.ev.loads("p"); got != 2 {
		t.Fatalf("activations = %d, want 2", got)
	}
}

// The sweep passivates exactly the agents idle for PassivateAfter: not one
// used since, and every message counts as use.
func TestSweepPassivatesOnlyIdleAgents(t *testing.T) {
	clock := newFakeClock()
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour, Clock: clock, Shards: 3})
	for _, id := range []string{"old1", "old2", "fresh"} {
		f.mustAsk(t, id, "inc")
	}
	clock.advance(40 * time.Minute)
	f.mustAsk(t, "fresh", "get") // used again: its idle time starts over
	if n := f.host.SweepIdle(); n != 0 {
		t.Fatalf("sweep after 40 minutes passivated %d, want 0", n)
	}
	clock.advance(20 * time.Minute)
	if n := f.host.SweepIdle(); n != 2 {
		t.Fatalf("sweep after an hour passivated %d, want 2 (old1, old2)", n)
	}
	got := map[string]bool{<-f.ev.passivated: true, <-f.ev.passivated: true}
	if !got["old1"] || !got["old2"] {
		t.Fatalf("passivated %v, want old1 and old2", got)
	}
	if f.host.Active() != 1 {
		t.Fatalf("active = %d, want 1 (fresh)", f.host.Active())
	}
	if got := f.ev.loads("fresh"); got != 1 {
		t.Fatalf("fresh was reloaded (%d activations)", got)
	}
	clock.advance(40 * time.Minute)
	if n := f.host.SweepIdle(); n != 1 {
		t.Fatalf("sweep after fresh's hour passivated %d, want 1", n)
	}
	if id := <-f.ev.passivated; id != "fresh" {
		t.Fatalf("passivated %s, want fresh", id)
	}
	// Each comes back from its record on its next message.
	for _, id := range []string{"old1", "old2", "fresh"} {
		if got := f.mustAsk(t, id, "inc"); got != 2 {
			t.Fatalf("%s after reactivation: %v, want 2", id, got)
		}
	}
}

// An agent with a message in flight for longer than PassivateAfter is not
// passivated under it; its idle time starts when it answers.
func TestSweepSparesAgentWithMessageInFlight(t *testing.T) {
	clock := newFakeClock()
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Minute, Clock: clock, Shards: 1})
	f.mustAsk(t, "busy", "inc")
	answered := make(chan error, 1)
	go func() {
		_, err := f.ask(t, "busy", "wait")
		answered <- err
	}()
	<-f.ev.entered
	// A second message queued behind the one in flight.
	queued := make(chan any, 1)
	go func() { v, _ := f.ask(t, "busy", "inc"); queued <- v }()
	clock.advance(time.Hour)
	if n := f.host.SweepIdle(); n != 0 {
		t.Fatalf("sweep passivated %d agents with a message in flight", n)
	}
	f.ev.release <- "busy"
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if v := <-queued; v != 2 {
		t.Fatalf("queued inc = %v, want 2", v)
	}
	// Just answered: not idle yet.
	if n := f.host.SweepIdle(); n != 0 {
		t.Fatalf("sweep passivated %d agents that just answered", n)
	}
	clock.advance(time.Minute)
	if n := f.host.SweepIdle(); n != 1 {
		t.Fatalf("sweep a minute after the answer passivated %d, want 1", n)
	}
	if got := f.mustAsk(t, "busy", "get"); got != 2 {
		t.Fatalf("after reactivation get = %v, want 2", got)
	}
	if got := f.ev.loads("busy"); got != 2 {
		t.Fatalf("activations = %d, want 2", got)
	}
}

// Requests racing with idle sweeps are all answered by one activation at
// a time: no increment is lost or doubled. After each round of requests
// the sweep passivates the agent, and the next round's first requests meet
// its actor while it stops; one worker sweeps in the middle of each round.
func TestRequestsDuringSweepsAreNotLost(t *testing.T) {
	clock := newFakeClock()
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Minute, Clock: clock, Shards: 2})
	const rounds, workers, per = 5, 8, 10
	errs := make(chan error, rounds*workers*per)
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < per; i++ {
					if _, err := f.ask(t, "race", "inc"); err != nil {
						errs <- err
					}
					if w == 0 && i == per/2 {
						clock.advance(time.Minute)
						f.host.SweepIdle()
					}
				}
			}(w)
		}
		wg.Wait()
		clock.advance(time.Minute)
		if n := f.host.SweepIdle(); n != 1 {
			t.Fatalf("round %d: the sweep after it passivated %d, want 1", r, n)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rec, err := f.st.Get(context.Background(), "counters", "race")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(rec.Value); got != strconv.Itoa(rounds*workers*per) {
		t.Fatalf("counter = %s, want %d", got, rounds*workers*per)
	}
	if got := f.ev.loads("race"); got < rounds {
		t.Fatalf("activations = %d, want at least %d (one a round)", got, rounds)
	}
}

func TestStopRefusesNewRequests(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour})
	f.mustAsk(t, "s", "inc")
	if err := f.host.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ask(t, "s", "get"); !errors.Is(err, host.ErrStopping) {
		t.Fatalf("after stop err = %v, want ErrStopping", err)
	}
}

func TestMaxActiveEvictsLeastRecentlyUsed(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour, Shards: 1, MaxActive: 2})
	f.mustAsk(t, "a", "inc")
	f.mustAsk(t, "b", "inc")
	f.mustAsk(t, "a", "get") // a is now the most recently used
	f.mustAsk(t, "c", "inc") // over the cap: b goes, not a
	select {
	case id := <-f.ev.passivated:
		if id != "b" {
			t.Fatalf("passivated %q, want b (least recently used)", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing passivated over the cap")
	}
	if got := f.ev.loads("a"); got != 1 {
		t.Fatalf("a was reloaded (%d activations)", got)
	}
	// b comes back from the store on its next message.
	if got := f.mustAsk(t, "b", "get"); got != 1 {
		t.Fatalf("b after eviction = %v", got)
	}
}

func TestShedPassivatesATenth(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour, Shards: 1})
	for i := 0; i < 20; i++ {
		f.mustAsk(t, fmt.Sprintf("s%02d", i), "get")
	}
	f.host.Shed()
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case id := <-f.ev.passivated:
			got[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("shed passivated %v, want 2", got)
		}
	}
	// The oldest two went.
	if !got["s00"] || !got["s01"] {
		t.Fatalf("shed passivated %v, want s00 and s01", got)
	}
}

func TestPassivateWherePassivatesOnlyTheChosen(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour, Shards: 4})
	for i := 0; i < 10; i++ {
		f.mustAsk(t, fmt.Sprintf("p%02d", i), "get")
	}
	// Odd ids move to another member.
	f.host.PassivateWhere(func(id string) bool { return (id[2]-'0')%2 == 1 })
	got := map[string]bool{}
	for len(got) < 5 {
		select {
		case id := <-f.ev.passivated:
			got[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("passivated %v, want the five odd ids", got)
		}
	}
	for id := range got {
		if (id[2]-'0')%2 != 1 {
			t.Fatalf("passivated %s, which was to stay", id)
		}
	}
	if n := f.host.Active(); n != 5 {
		t.Fatalf("active = %d after passivating 5 of 10, want 5", n)
	}
}

// A version conflict that reaches the host (another writer moved the
// agent's state on under its activation) is host.ErrStale, retriable,
// and the stale activation is passivated at once: the next request loads
// the current state instead of failing again.
func TestStaleActivationIsPassivatedAndRetriable(t *testing.T) {
	f := newFixture(t, host.HostConfig{Stale: func(err error) bool { return errors.Is(err, persistence.ErrConflict) }})
	f.mustAsk(t, "s", "inc")
	// Someone else (another member's activation) writes the agent.
	if _, err := f.st.Apply(context.Background(), persistence.Put("counters", "s", []byte("7"), persistence.AtVersion(1))); err != nil {
		t.Fatal(err)
	}
	_, err := f.ask(t, "s", "inc")
	if !errors.Is(err, host.ErrStale) {
		t.Fatalf("write on stale state: %v, want host.ErrStale", err)
	}
	select {
	case id := <-f.ev.passivated:
		if id != "s" {
			t.Fatalf("passivated %s, want s", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stale activation was not passivated")
	}
	if v := f.mustAsk(t, "s", "inc"); v != 8 {
		t.Fatalf("after reactivation: %v, want 8 (7 from the store, +1)", v)
	}
}

// An agent actor is named after its agent: ids with a slash or that look
// like a directory's name activate, passivate and come back.
func TestOddIDsActivatePassivateAndReactivate(t *testing.T) {
	clock := newFakeClock()
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Minute, Clock: clock, Shards: 2})
	ids := []string{"a/b", "agents-0", "agents-1/x", "agents-0/"}
	for _, id := range ids {
		if got := f.mustAsk(t, id, "inc"); got != 1 {
			t.Fatalf("%q: inc = %v", id, got)
		}
	}
	if n := f.host.Active(); n != len(ids) {
		t.Fatalf("active = %d, want %d", n, len(ids))
	}
	clock.advance(time.Minute)
	if n := f.host.SweepIdle(); n != len(ids) {
		t.Fatalf("sweep passivated %d, want %d", n, len(ids))
	}
	got := map[string]bool{}
	for len(got) < len(ids) {
		got[<-f.ev.passivated] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Fatalf("passivated %v, not %q", got, id)
		}
		if v := f.mustAsk(t, id, "inc"); v != 2 {
			t.Fatalf("%q after reactivation: inc = %v, want 2", id, v)
		}
		if n := f.ev.loads(id); n != 2 {
			t.Fatalf("%q: %d activations, want 2", id, n)
		}
	}
}

// A passivated agent's memory is free once its actor stopped, though
// protoactor keeps the stopped actor reachable for a while (the
// directory's set of children keeps a removed PID in its array's unused
// tail, and the PID caches its process).
func TestPassivatedAgentIsCollected(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour, Shards: 1})
	for _, id := range []string{"a", "b", "c"} {
		f.mustAsk(t, id, "inc")
	}
	f.host.Passivate("c") // the last child: its slot stays in the array's tail
	if id := <-f.ev.passivated; id != "c" {
		t.Fatalf("passivated %s, want c", id)
	}
	for i := 0; i < 50; i++ {
		runtime.GC()
		select {
		case id := <-f.ev.freed:
			if id != "c" {
				t.Fatalf("collected %s, which is active", id)
			}
			return
		case <-time.After(100 * time.Millisecond): // finalizers run after the GC
		}
	}
	t.Fatal("the passivated agent was not collected after 50 GCs")
}
