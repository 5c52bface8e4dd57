package chain_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
)

// gateConn is a connector whose SendStealth waits for the test: the key
// "block" until release is closed, "sign" until its caller's context ends
// (it then answers as a connector that signed and recorded does).
type gateConn struct {
	chains.Connector
	entered chan string
	release chan struct{}
	ran     atomic.Int32
}

func (g *gateConn) Chain() chains.ID { return chains.Base }

func (g *gateConn) SendStealth(ctx context.Context, _ chains.KeyRef, _ string, req chains.SendRequest) (chains.TxResult, error) {
	g.ran.Add(1)
	g.entered <- req.IdempotencyKey
	switch req.IdempotencyKey {
	case "block":
		<-g.release
	case "sign":
		<-ctx.Done()
		return chains.TxResult{TxHash: "0xsigned"}, chains.OutcomeUnknown(chains.Base, req.IdempotencyKey, "0xsigned", ctx.Err())
	}
	return chains.TxResult{TxHash: "0x" + req.IdempotencyKey}, nil
}

// TestWriteAnswersWhatItSigned: a write whose caller's context ends while
// the connector runs it answers the connector's own result (the recorded
// hash, an unknown outcome), never the bare context error; one that had
// not started when its caller gave up never starts (nothing is signed).
func TestWriteAnswersWhatItSigned(t *testing.T) {
	g := &gateConn{entered: make(chan string, 4), release: make(chan struct{})}
	system := actor.NewActorSystem()
	r, err := chain.Start(context.Background(), system, g, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	send := func(ctx context.Context, key string) (chains.TxResult, error) {
		return r.SendStealth(ctx, chains.KeyRef{}, "0xsame", chains.SendRequest{IdempotencyKey: key})
	}

	// Running when its deadline passes: the connector's answer comes back.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	res, err := send(ctx, "sign")
	cancel()
	var ou *chains.OutcomeUnknownError
	if !errors.As(err, &ou) || ou.TxHash != "0xsigned" || res.TxHash != "0xsigned" {
		t.Fatalf("send = %+v, %v; want the connector's unknown outcome with its hash", res, err)
	}
	<-g.entered

	// Queued behind a blocked write of the same address when its caller
	// gives up: abandoned, never run.
	blocked := make(chan error, 1)
	go func() { _, err := send(context.Background(), "block"); blocked <- err }()
	if k := <-g.entered; k != "block" {
		t.Fatalf("entered %q", k)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = send(ctx, "queued")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued send = %v; want its context's error", err)
	}
	close(g.release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	// A later write of the lane runs after the abandoned one was passed.
	if res, err := send(context.Background(), "after"); err != nil || res.TxHash != "0xafter" {
		t.Fatalf("later send = %+v, %v", res, err)
	}
	if k := <-g.entered; k != "after" {
		t.Fatalf("entered %q; the abandoned write ran", k)
	}
	if n := g.ran.Load(); n != 3 {
		t.Fatalf("%d writes ran; want 3 (the abandoned one never)", n)
	}
}
