//go:build !nodevnet

package chain_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// genesisConn is a connector whose genesis the test sets; it counts the
// sends and the restart passes that reach it.
type genesisConn struct {
	chains.Connector // nil: the methods the tests do not call
	genesis          atomic.Value
	sends, restarts  atomic.Int32
}

func newGenesisConn(g string) *genesisConn {
	c := &genesisConn{}
	c.genesis.Store(g)
	return c
}

func (c *genesisConn) Chain() chains.ID       { return chains.Base }
func (c *genesisConn) TxLink(h string) string { return "https://explorer.test/tx/" + h }
func (c *genesisConn) Genesis(context.Context) (string, error) {
	return c.genesis.Load().(string), nil
}
func (c *genesisConn) Balance(context.Context, string) (chains.Balance, error) {
	return chains.Balance{Native: "1"}, nil
}
func (c *genesisConn) SendStealth(context.Context, chains.KeyRef, string, chains.SendRequest) (chains.TxResult, error) {
	c.sends.Add(1)
	return chains.TxResult{TxHash: "0x01"}, nil
}
func (c *genesisConn) Maintain(_ context.Context, restart bool) error {
	if restart {
		c.restarts.Add(1)
	}
	return nil
}

// states records the states an actor reports (its StateObserver).
type states struct {
	mu  sync.Mutex
	got []string
}

func (s *states) Call(chains.ID, string, time.Duration, error) {}
func (s *states) Maintained(chains.ID, time.Duration, error)   {}
func (s *states) ChainState(_ chains.ID, st string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, st)
}
func (s *states) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.got, ",")
}

func downKind(t *testing.T, err error) chains.DownKind {
	t.Helper()
	var de *chains.DownError
	if !errors.As(err, &de) || !errors.Is(err, chains.ErrUnavailable) || de.Chain != chains.Base {
		t.Fatalf("error %v, want base's *chains.DownError matching ErrUnavailable", err)
	}
	return de.Kind
}

// waitState polls the actor's state (the background loop moves it).
func waitState(t *testing.T, ref *chain.Ref, want chain.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for ref.State() != want {
		if time.Now().After(deadline) {
			t.Fatalf("state %s, want %s; err %v", ref.State(), want, ref.Err())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A chain whose node does not answer at start is degraded: every call
// answers its DownError at once (a Retry-After included), and the
// background loop connects when the node answers, with no restart.
func TestPendingChainServesOnceItsNodeAnswers(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	var up atomic.Bool
	var attempts atomic.Int32
	conn := newGenesisConn("g1")
	connect := func(ctx context.Context) (chains.Connector, error) {
		attempts.Add(1)
		if !up.Load() {
			return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
		}
		return conn, nil
	}
	obs := &states{}
	ref, err := chain.StartPending(system, chains.Base, "", connect, chain.Options{Log: quietLog(), Observer: obs, RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Stop)
	if ref.State() != chain.Degraded {
		t.Fatalf("state %s", ref.State())
	}
	_, err = ref.Balance(context.Background(), "0xabc")
	if downKind(t, err) != chains.DownDegraded {
		t.Fatalf("balance: %v", err)
	}
	var de *chains.DownError
	if errors.As(err, &de); de.RetryAfter < time.Second || !strings.Contains(err.Error(), "chain base") {
		t.Fatalf("degraded error %+v: want the chain named and a Retry-After of at least 1s", de)
	}
	if _, err := ref.SendStealth(context.Background(), chains.KeyRef{}, "0xabc", chains.SendRequest{}); downKind(t, err) != chains.DownDegraded {
		t.Fatalf("send: %v", err)
	}
	if _, ok := ref.Connector().(*genesisConn); ok {
		t.Fatal("a degraded chain's Connector is the real one")
	}
	// Several attempts fail before the node answers.
	for attempts.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	up.Store(true)
	waitState(t, ref, chain.Serving)
	if b, err := ref.Balance(context.Background(), "0xabc"); err != nil || b.Native != "1" {
		t.Fatalf("balance after recovery: %+v %v", b, err)
	}
	if _, err := ref.SendStealth(context.Background(), chains.KeyRef{}, "0xabc", chains.SendRequest{}); err != nil || conn.sends.Load() != 1 {
		t.Fatalf("send after recovery: %v (sends %d)", err, conn.sends.Load())
	}
	if conn.restarts.Load() != 1 {
		t.Fatalf("restart passes %d, want 1 (on connect)", conn.restarts.Load())
	}
	if got := obs.String(); got != "degraded,serving" {
		t.Fatalf("states %q", got)
	}
}

// A chain with no way to connect (an embedded devnet that could not start)
// stays degraded, with the reason given.
func TestPendingChainWithoutConnect(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	ref, err := chain.StartPending(system, chains.Base, "no node is configured", nil, chain.Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ref.Stop)
	_, err = ref.Balance(context.Background(), "0xabc")
	if downKind(t, err) != chains.DownDegraded || !strings.Contains(err.Error(), "no node is configured") {
		t.Fatalf("balance: %v", err)
	}
}

// The genesis is recorded on first contact; when the node later serves
// another chain (reset under the same chain id) nothing is signed or read
// on it, and a restart finds the reset before its restart pass
// rebroadcasts anything; the node back on the recorded chain serves again.
func TestGenesisChangeRefusesTheChain(t *testing.T) {
	ctx := context.Background()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	start := func(conn *genesisConn) (*chain.Ref, *states) {
		t.Helper()
		system := actor.NewActorSystem()
		t.Cleanup(system.Shutdown)
		obs := &states{}
		ref, err := chain.Start(ctx, system, conn, chain.Options{Log: quietLog(), Store: st, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ref.Stop)
		return ref, obs
	}
	conn := newGenesisConn("0x1111")
	ref, _ := start(conn)
	rec, err := st.Get(ctx, chain.TableGenesis, string(chains.Base))
	if err != nil || !strings.Contains(string(rec.Value), `"hash":"0x1111"`) {
		t.Fatalf("genesis record %s %v", rec.Value, err)
	}
	if _, err := ref.SendStealth(ctx, chains.KeyRef{}, "0xabc", chains.SendRequest{}); err != nil {
		t.Fatal(err)
	}

	conn.genesis.Store("0x2222") // the node was reset
	_, err = ref.SendStealth(ctx, chains.KeyRef{}, "0xabc", chains.SendRequest{})
	if downKind(t, err) != chains.DownReset || conn.sends.Load() != 1 {
		t.Fatalf("send on a reset chain: %v (sends %d, want 1)", err, conn.sends.Load())
	}
	if !strings.Contains(err.Error(), "0x2222") || !strings.Contains(err.Error(), "0x1111") {
		t.Fatalf("the refusal does not name both genesis hashes: %v", err)
	}
	if _, err := ref.Balance(ctx, "0xabc"); downKind(t, err) != chains.DownReset {
		t.Fatalf("balance on a reset chain: %v (a new chain's 0 is no balance)", err)
	}
	if err := ref.Ping(ctx); downKind(t, err) != chains.DownReset {
		t.Fatalf("ping: %v", err)
	}

	// A restart on the reset node: reset from the start, no restart pass.
	other := newGenesisConn("0x2222")
	ref2, obs2 := start(other)
	if ref2.State() != chain.Reset || other.restarts.Load() != 0 {
		t.Fatalf("restarted on a reset chain: state %s, restart passes %d", ref2.State(), other.restarts.Load())
	}
	if got := obs2.String(); got != "serving,reset" {
		t.Fatalf("states %q", got)
	}

	// The node comes back with the recorded chain: it serves again.
	conn.genesis.Store("0x1111")
	if err := ref.Ping(ctx); err != nil {
		t.Fatalf("ping on the recorded chain: %v", err)
	}
	if _, err := ref.SendStealth(ctx, chains.KeyRef{}, "0xabc", chains.SendRequest{}); err != nil || conn.sends.Load() != 2 {
		t.Fatalf("send after the node came back: %v (sends %d)", err, conn.sends.Load())
	}
}
