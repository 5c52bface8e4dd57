// Package enclaveactor runs Veil's enclave actors: one protoactor-go actor
// per chain in front of an enclave.Provider. Everything that needs a key —
// deriving an agent's public keys, signing for a connector, the scanner's
// viewing keys, an attestation, an export — is a message to the chain's
// actor; a Ref holds only the actor's PID, never the provider, so private
// keys stay behind the actor. Private keys leave it only through Export
// (after the caller checked the owner's fresh signature) and ScanKeys (the
// viewing key the in-process scanner needs; see enclave.Provider).
//
// Messages are Go structs local to this node: none crosses cluster
// members (each member runs its own enclave actors, and an agent's
// requests run on the member that hosts the agent).
package enclaveactor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/internal/deadline"
	"github.com/veilhq/veil/internal/futures"
)

// DefaultTimeout bounds a request whose context has no deadline.
const DefaultTimeout = 30 * time.Second

// Errors of the actor layer. Match with errors.Is; the provider's errors
// (enclave.ErrInvalidInput, …) pass through unchanged.
var (
	// ErrWrongChain: a request for a chain this actor does not serve.
	ErrWrongChain = errors.New("enclave actor: key of another chain")
	// ErrTimeout: the actor did not answer before the deadline.
	ErrTimeout = errors.New("enclave actor: no answer in time")
	// ErrStopped: the actor is stopped.
	ErrStopped = errors.New("enclave actor: stopped")
	// ErrInternal: the provider panicked on this request (the actor keeps
	// serving; the panic value is not reported, it might hold key bytes).
	ErrInternal = errors.New("enclave actor: internal error")
)

// Ref is the handle of one chain's enclave actor. It is safe for
// concurrent use and implements enclave.Provider (for its chain) and
// chains.Signer.
type Ref struct {
	system *actor.ActorSystem
	chain  chains.ID
	pid    *actor.PID
}

var (
	_ enclave.Provider = (*Ref)(nil)
	_ chains.Signer    = (*Ref)(nil)
)

// New starts the enclave actor of chain on system, wrapping p. The actor
// serves one request at a time.
func New(system *actor.ActorSystem, chain chains.ID, p enclave.Provider) *Ref {
	a := &enclaveActor{chain: chain, p: p}
	props := actor.PropsFromProducer(func() actor.Actor { return a })
	pid := system.Root.SpawnPrefix(props, "enclave-"+string(chain)+"-")
	return &Ref{system: system, chain: chain, pid: pid}
}

// Chain is the chain the actor serves.
func (r *Ref) Chain() chains.ID { return r.chain }

// PID is the actor's process id.
func (r *Ref) PID() *actor.PID { return r.pid }

// Stop stops the actor after the requests already queued, waiting at most
// until ctx is done.
func (r *Ref) Stop(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- r.system.Root.PoisonFuture(r.pid).Wait() }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, actor.ErrDeadLetter) {
			return fmt.Errorf("enclave actor %s: stop: %w", r.chain, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Ref) checkChain(c chains.ID) error {
	if c != r.chain {
		return fmt.Errorf("%w: the %s enclave actor was asked for %q", ErrWrongChain, r.chain, c)
	}
	return nil
}

// DeriveKeys returns the agent's public keys on the actor's chain.
func (r *Ref) DeriveKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.PublicKeys, error) {
	if err := r.checkChain(chain); err != nil {
		return enclave.PublicKeys{}, err
	}
	return request[enclave.PublicKeys](ctx, r, &deriveKeysMsg{caller: caller{ctx}, agentID: agentID, epoch: epoch})
}

// Sign signs req (enclave.Provider.Sign: a spend or a no-value request)
// with the key req.Key names (the account key, or the one-time stealth key
// when EphemeralPub is set); req.Key.Chain must be the actor's.
func (r *Ref) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	if err := r.checkChain(req.Key.Chain); err != nil {
		return nil, err
	}
	return request[[]byte](ctx, r, &signMsg{caller: caller{ctx}, req: req})
}

// ScanKeys returns the agent's viewing private key and spending public key
// on the actor's chain, for the scanner.
func (r *Ref) ScanKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.ScanKeys, error) {
	if err := r.checkChain(chain); err != nil {
		return enclave.ScanKeys{}, err
	}
	return request[enclave.ScanKeys](ctx, r, &scanKeysMsg{caller: caller{ctx}, agentID: agentID, epoch: epoch})
}

// Export returns the agent's account private key on the actor's chain
// (enclave.Provider.Export). The caller must have checked the owner's
// fresh signature.
func (r *Ref) Export(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (string, error) {
	if err := r.checkChain(chain); err != nil {
		return "", err
	}
	return request[string](ctx, r, &exportMsg{caller: caller{ctx}, agentID: agentID, epoch: epoch})
}

// Attest attests the agent's keys on chainIDs (any chains: the provider
// serves them all; the request runs on this actor).
func (r *Ref) Attest(ctx context.Context, agentID string, chainIDs []chains.ID, nonce []byte) (enclave.Attestation, error) {
	return request[enclave.Attestation](ctx, r, &attestMsg{caller: caller{ctx}, agentID: agentID, chainIDs: chainIDs, nonce: nonce})
}

// Info describes the provider.
func (r *Ref) Info(ctx context.Context) (enclave.Info, error) {
	return request[enclave.Info](ctx, r, &infoMsg{caller: caller{ctx}})
}

// request sends msg and awaits the reply with RequestFuture, bounded by
// ctx's deadline (DefaultTimeout without one) and by ctx's cancellation.
func request[T any](ctx context.Context, r *Ref, msg any) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	timeout, err := deadline.Timeout(ctx, DefaultTimeout)
	if err != nil {
		return zero, err
	}
	fut := r.system.Root.RequestFuture(r.pid, msg, timeout)
	var res any
	if ctx.Done() == nil {
		res, err = futures.Result(fut)
	} else {
		type result struct {
			res any
			err error
		}
		ch := make(chan result, 1)
		go func() { res, err := futures.Result(fut); ch <- result{res, err} }()
		select {
		case got := <-ch:
			res, err = got.res, got.err
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, actor.ErrTimeout):
			if _, ok := ctx.Deadline(); ok {
				// The future's timeout is the deadline's remaining time: it
				// can fire a hair before the context's own timer.
				<-ctx.Done()
				return zero, ctx.Err()
			}
			return zero, fmt.Errorf("%w (%s)", ErrTimeout, r.chain)
		case errors.Is(err, actor.ErrDeadLetter):
			return zero, fmt.Errorf("%w (%s)", ErrStopped, r.chain)
		}
		return zero, fmt.Errorf("enclave actor %s: %w", r.chain, err)
	}
	rep, ok := res.(*reply)
	if !ok {
		return zero, fmt.Errorf("enclave actor %s: unexpected answer %T", r.chain, res)
	}
	if rep.err != nil {
		return zero, rep.err
	}
	v, ok := rep.value.(T)
	if !ok {
		return zero, fmt.Errorf("enclave actor %s: unexpected answer %T", r.chain, rep.value)
	}
	return v, nil
}

// Messages (local to this node). Each carries its caller's context
// (caller): the actor checks it before any key work and passes it on to
// the provider.
type (
	caller struct{ ctx context.Context }

	deriveKeysMsg struct {
		caller
		agentID string
		epoch   uint32
	}
	signMsg struct {
		caller
		req chains.SignRequest
	}
	scanKeysMsg struct {
		caller
		agentID string
		epoch   uint32
	}
	exportMsg struct {
		caller
		agentID string
		epoch   uint32
	}
	attestMsg struct {
		caller
		agentID  string
		chainIDs []chains.ID
		nonce    []byte
	}
	infoMsg struct{ caller }

	reply struct {
		value any
		err   error
	}
)

// callerCtx is the context of a message's caller.
func (c caller) callerCtx() context.Context { return c.ctx }

// enclaveActor owns the provider for one chain.
type enclaveActor struct {
	chain chains.ID
	p     enclave.Provider
}

func (a *enclaveActor) Receive(c actor.Context) {
	m, ok := c.Message().(interface{ callerCtx() context.Context })
	if !ok {
		return // lifecycle messages (Started, Stopping, …)
	}
	ctx := m.callerCtx()
	if c.Sender() == nil {
		return // nobody to answer
	}
	if err := ctx.Err(); err != nil {
		// The caller has given up: do no key work for it.
		c.Respond(&reply{err: err})
		return
	}
	c.Respond(a.handle(ctx, c.Message()))
}

func (a *enclaveActor) handle(ctx context.Context, msg any) (rep *reply) {
	defer func() {
		if recover() != nil {
			rep = &reply{err: ErrInternal}
		}
	}()
	var v any
	var err error
	switch m := msg.(type) {
	case *deriveKeysMsg:
		v, err = a.p.DeriveKeys(ctx, m.agentID, a.chain, m.epoch)
	case *signMsg:
		v, err = a.p.Sign(ctx, m.req)
	case *scanKeysMsg:
		v, err = a.p.ScanKeys(ctx, m.agentID, a.chain, m.epoch)
	case *exportMsg:
		v, err = a.p.Export(ctx, m.agentID, a.chain, m.epoch)
	case *attestMsg:
		v, err = a.p.Attest(ctx, m.agentID, m.chainIDs, m.nonce)
	case *infoMsg:
		v, err = a.p.Info(ctx)
	}
	return &reply{value: v, err: err}
}

// Group is one enclave actor per chain over one provider. It implements
// enclave.Provider and chains.Signer by routing each request to its
// chain's actor (Attest and Info to the first chain's).
type Group struct {
	order []chains.ID
	refs  map[chains.ID]*Ref
}

var (
	_ enclave.Provider = (*Group)(nil)
	_ chains.Signer    = (*Group)(nil)
)

// NewGroup starts an enclave actor for each of chainIDs (every chain of
// chains.Order() when none is given; duplicates ignored).
func NewGroup(system *actor.ActorSystem, p enclave.Provider, chainIDs ...chains.ID) *Group {
	if len(chainIDs) == 0 {
		chainIDs = chains.Order()
	}
	g := &Group{refs: make(map[chains.ID]*Ref, len(chainIDs))}
	for _, c := range chainIDs {
		if _, dup := g.refs[c]; dup {
			continue
		}
		g.order = append(g.order, c)
		g.refs[c] = New(system, c, p)
	}
	return g
}

// Ref returns the actor of chain, or nil.
func (g *Group) Ref(chain chains.ID) *Ref { return g.refs[chain] }

// Chains lists the served chains in the order given to NewGroup.
func (g *Group) Chains() []chains.ID { return append([]chains.ID(nil), g.order...) }

func (g *Group) ref(chain chains.ID) (*Ref, error) {
	if r := g.refs[chain]; r != nil {
		return r, nil
	}
	if _, err := chains.Parse(string(chain)); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: no enclave actor for %s", ErrWrongChain, chain)
}

// DeriveKeys implements enclave.Provider.
func (g *Group) DeriveKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.PublicKeys, error) {
	r, err := g.ref(chain)
	if err != nil {
		return enclave.PublicKeys{}, err
	}
	return r.DeriveKeys(ctx, agentID, chain, epoch)
}

// Sign implements chains.Signer.
func (g *Group) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	r, err := g.ref(req.Key.Chain)
	if err != nil {
		return nil, err
	}
	return r.Sign(ctx, req)
}

// ScanKeys implements enclave.Provider.
func (g *Group) ScanKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.ScanKeys, error) {
	r, err := g.ref(chain)
	if err != nil {
		return enclave.ScanKeys{}, err
	}
	return r.ScanKeys(ctx, agentID, chain, epoch)
}

// Export implements enclave.Provider.
func (g *Group) Export(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (string, error) {
	r, err := g.ref(chain)
	if err != nil {
		return "", err
	}
	return r.Export(ctx, agentID, chain, epoch)
}

// Attest implements enclave.Provider (on the first attested chain's
// actor when it is served, else on the group's first).
func (g *Group) Attest(ctx context.Context, agentID string, chainIDs []chains.ID, nonce []byte) (enclave.Attestation, error) {
	r := g.refs[g.order[0]]
	if len(chainIDs) > 0 && g.refs[chainIDs[0]] != nil {
		r = g.refs[chainIDs[0]]
	}
	return r.Attest(ctx, agentID, chainIDs, nonce)
}

// Info implements enclave.Provider.
func (g *Group) Info(ctx context.Context) (enclave.Info, error) {
	return g.refs[g.order[0]].Info(ctx)
}

// Stop stops every actor of the group.
func (g *Group) Stop(ctx context.Context) error {
	var errs []error
	for _, c := range g.order {
		if err := g.refs[c].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
