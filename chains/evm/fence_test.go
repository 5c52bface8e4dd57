//go:build !nodevnet

package evm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/internal/fakeclock"
	"github.com/veilhq/veil/persistence"
)

// refusingNode forwards JSON-RPC to a real node but answers
// eth_sendRawTransaction, while refusing is set, as a node that wants a
// higher fee does (a rejection: nothing reaches the pool).
func refusingNode(t *testing.T, target string, refusing *atomic.Bool) string {
	return stubbedNode(t, target, "eth_sendRawTransaction", refusing, map[string]any{
		"error": map[string]any{"code": -32000, "message": "transaction underpriced"}})
}

// stubbedNode forwards JSON-RPC to a real node, except single calls of
// method while on is set, which it answers with answer (its "result" or
// "error"). Batches pass through.
func stubbedNode(t *testing.T, target, method string, on *atomic.Bool, answer map[string]any) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var one struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if on.Load() && json.Unmarshal(body, &one) == nil && one.Method == method {
			out := map[string]any{"jsonrpc": "2.0", "id": one.ID}
			for k, v := range answer {
				out[k] = v
			}
			_ = json.NewEncoder(w).Encode(out)
			return
		}
		forwardRPC(w, target, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A cluster member whose activation of an agent went stale (another member
// took the agent over) must never get a payment of it onto the chain,
// whether its fence refuses the payment's intent, or the node refuses the
// broadcast and the fence then refuses the cleanup: the rollback of a
// rejected transaction undoes only this process's own reservation, so it
// is not fenced. Before, the fenced rollback left the rejected transaction
// recorded as pending, and maintenance (the restart pass of any member, or
// a fee bump) sent it later, after its caller had been told it failed: with
// the new owner paying again (the caller's retry without a key), the payee
// was paid twice. issue 25.
func TestStaleOwnersRefusedPaymentIsNeverSentLater(t *testing.T) {
	d := startDevnet(t, chains.Ethereum)
	cfg, _ := d.Config(chains.Ethereum)
	store := openStore(t, t.TempDir())
	t.Cleanup(func() { _ = store.Close() })
	money := persistence.Fencing(store) // what veild gives the connectors
	alice, bob := evmtest.NewAgent("fenced-alice"), evmtest.NewAgent("fenced-bob")
	signer := evmtest.NewSigner(alice, bob)
	ctx := context.Background()

	// The agent's ownership epoch (runtime/cluster's agent_epochs): the
	// stale member's requests carry the version it activated under.
	epoch := func() uint64 {
		rec, err := store.Get(ctx, "agent_epochs", "alice")
		if errors.Is(err, persistence.ErrNotFound) {
			vs, err := store.Apply(ctx, persistence.Put("agent_epochs", "alice", []byte(`{}`), persistence.Absent()))
			if err != nil {
				t.Fatal(err)
			}
			return vs[0]
		}
		if err != nil {
			t.Fatal(err)
		}
		vs, err := store.Apply(ctx, persistence.Put("agent_epochs", "alice", []byte(`{}`), persistence.AtVersion(rec.Version)))
		if err != nil {
			t.Fatal(err)
		}
		return vs[0]
	}
	fenced := func(v uint64) context.Context {
		return persistence.WithFence(ctx, persistence.Fence{Table: "agent_epochs", Key: "alice", Version: v})
	}

	clock := fakeclock.New(time.Now())
	current := connect(t, cfg, money, signer, func(o *evm.Options) { o.Now = clock.Now }) // the new owner's member
	f, err := current.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, current, f.TxHash)

	var refusing atomic.Bool
	var takeoverAt atomic.Value // the failpoint at which another member takes the agent
	scfg := cfg
	scfg.RPCURL = refusingNode(t, cfg.RPCURL, &refusing)
	stale := connect(t, scfg, money, signer, func(o *evm.Options) {
		o.Failpoint = func(p string) error {
			if at, _ := takeoverAt.Load().(string); at == p {
				takeoverAt.Store("")
				epoch()
			}
			return nil
		}
	})
	pay := func(c *evm.Connector, ctx context.Context, key, amount string) (chains.TxResult, error) {
		return c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt(amount), To: bob.Meta, IdempotencyKey: key})
	}
	sent := func() uint64 {
		n, err := current.Client().PendingNonceAt(ctx, alice.Address)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// 1. Refused before it is broadcast: the takeover comes after the
	// signature, before the intent is written; the write is fenced.
	takeoverAt.Store(evm.FailBeforePersist)
	if _, err := pay(stale, fenced(epoch()), "", "0.1"); !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("payment of a stale owner: %v, want persistence.ErrFenced", err)
	}
	if n, err := current.PendingCount(ctx); err != nil || n != 0 {
		t.Fatalf("a fenced payment left %d pending transactions (%v)", n, err)
	}

	// 2. Refused by the node: the takeover comes after the broadcast, so
	// the cleanup of the rejected reservation runs under a moved fence.
	refusing.Store(true)
	takeoverAt.Store(evm.FailAfterBroadcast)
	if _, err := pay(stale, fenced(epoch()), "", "0.2"); err == nil {
		t.Fatal("the node refused the broadcast, but the payment succeeded")
	}
	refusing.Store(false)
	if n, err := current.PendingCount(ctx); err != nil || n != 0 {
		t.Fatalf("the rejected payment of a stale owner is still recorded as pending (%d, %v): maintenance would send it", n, err)
	}

	// The caller was told it failed; it pays again through the new owner,
	// without a key (a new payment, as it asked).
	r, err := pay(current, fenced(epoch()), "", "0.3")
	if err != nil {
		t.Fatal(err)
	}
	// Every member's maintenance: a restart pass (rebroadcasts), then a
	// pass after StuckAfter (fee bumps).
	if _, err := current.MaintainOnce(ctx, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(cfg.StuckAfter + time.Minute)
	if _, err := current.MaintainOnce(ctx, false); err != nil {
		t.Fatal(err)
	}
	mustMined(t, current, r.TxHash)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, err := current.PendingCount(ctx); err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("transactions still pending after maintenance")
		}
		if _, err := current.MaintainOnce(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := sent(); n != 1 {
		t.Fatalf("alice sent %d transactions for one payment the caller was told succeeded and two it was told failed", n)
	}
}
