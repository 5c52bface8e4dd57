package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
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
}

func newEvents() *events {
	return &events{activations: map[string]int{}, passivated: make(chan string, 1024), panicked: make(chan string, 1024)}
}

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
		c := &counter{st: st, id: id, activation: n}
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

func TestPassivationAfterIdleAndReactivation(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: 20 * time.Millisecond})
	f.mustAsk(t, "p", "inc")
	f.mustAsk(t, "p", "dirty") // memory only: must not survive passivation
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

func TestPanicRestartsOnlyThatAgentFromStore(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour})
	f.mustAsk(t, "bad", "inc")
	f.mustAsk(t, "good", "inc")
	f.mustAsk(t, "good", "dirty") // good's memory is 101; a restart would lose it

	_, err := f.ask(t, "bad", "boom")
	if !errors.Is(err, host.ErrActorPanic) {
		t.Fatalf("boom err = %v, want ErrActorPanic", err)
	}
	select {
	case <-f.ev.panicked:
	case <-time.After(5 * time.Second):
		t.Fatal("no panic event")
	}
	// The restarted actor reloaded from the store: the +1000 is gone.
	if got := f.mustAsk(t, "bad", "get"); got != 1 {
		t.Fatalf("bad after restart = %v, want 1", got)
	}
	if got := f.ev.loads("bad"); got != 2 {
		t.Fatalf("bad activations = %d, want 2 (restart reloads)", got)
	}
	// The other agent was untouched: same activation, memory intact.
	if got := f.mustAsk(t, "good", "get"); got != 101 {
		t.Fatalf("good = %v, want 101", got)
	}
	if got := f.mustAsk(t, "good", "activation"); got != 1 {
		t.Fatalf("good activation = %v, want 1", got)
	}
}

// Requests racing with passivation are all answered, in order per caller,
// by exactly one activation at a time: no increment is lost or doubled.
func TestRequestsDuringPassivationAreNotLost(t *testing.T) {
	f := newFixture(t, host.HostConfig{PassivateAfter: time.Hour, Shards: 2})
	const workers, per = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*per)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if _, err := f.ask(t, "race", "inc"); err != nil {
					errs <- err
				}
				if w == 0 && i%5 == 0 {
					f.host.Passivate("race") // stop it mid-stream
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rec, err := f.st.Get(context.Background(), "counters", "race")
	if err != nil {
		t.Fatal(err)
	}
	if got := string(rec.Value); got != strconv.Itoa(workers*per) {
		t.Fatalf("counter = %s, want %d", got, workers*per)
	}
	// Without a passivation in the middle this test would prove nothing.
	if got := f.ev.loads("race"); got < 2 {
		t.Fatalf("activations = %d: the agent never passivated mid-stream", got)
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
