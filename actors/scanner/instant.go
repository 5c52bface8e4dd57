package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// Chains finds a chain's actor (agent.ChainMap).
type Chains interface {
	Chain(id chains.ID) (*chainactor.Ref, error)
}

// InstantOptions configure an Instant. Store, Chains, Agents and Keys are
// required.
type InstantOptions struct {
	Store  persistence.Store
	Chains Chains
	Agents Agents
	Keys   Keys
	Log    *slog.Logger
	// Wait bounds how long a payment's transaction is watched until it is
	// confirmed (default 2 min); after that the scan delivers it.
	Wait time.Duration
	// Poll is the wait between two looks at the transaction (default
	// 250 ms).
	Poll time.Duration
}

// Instant delivers a stealth payment one agent of this Veil sent to
// another (by name) to the payee as soon as its transaction is confirmed,
// instead of at the scan of the payee's shard. It reads the transaction's
// announcements from the chain (chains.AnnouncementReader: exactly what the
// scan reads), keeps those the payee's viewing key matches — it trusts
// nothing the payer said but the transaction — and sends them to the payee
// as agent.DeliverPayments, the scanner's own message. The agent records a
// payment and raises payment_received once, so the scan that finds the
// payment later notifies nothing. Chains without an AnnouncementReader, and
// payments that fail here, are left to the scan.
type Instant struct {
	opts   InstantOptions
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewInstant starts an Instant; Stop ends the deliveries under way.
func NewInstant(opts InstantOptions) *Instant {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Wait <= 0 {
		opts.Wait = 2 * time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Instant{opts: opts, ctx: ctx, cancel: cancel}
}

// Sent is the payer's hook (agent.Deps.Sent): txHash paid the agent named
// payee on chain. It returns at once; the delivery runs on its own, so the
// payer's actor never waits for the payee's.
func (n *Instant) Sent(chain chains.ID, payee, txHash string) {
	if n.ctx.Err() != nil {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(n.ctx, n.opts.Wait)
		defer cancel()
		if _, err := n.Deliver(ctx, chain, payee, txHash); err != nil && n.ctx.Err() == nil {
			n.opts.Log.Info("instant notify: left to the scan", "chain", chain, "payee", payee, "tx", txHash, "err", err)
		}
	}()
}

// Deliver does what Sent starts and waits for it: it waits (within ctx)
// for the transaction to be confirmed, then delivers to the payee the
// payments of the transaction its key matches. It answers the payee's
// report (nil when the chain cannot list a transaction's announcements).
func (n *Instant) Deliver(ctx context.Context, chain chains.ID, payee, txHash string) (*agent.DeliverReport, error) {
	name, err := chains.ParseName(payee)
	if err != nil {
		return nil, err
	}
	id, err := agent.Directory{Store: n.opts.Store}.IDByName(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("payee %s: %w", payee, err)
	}
	ref, err := n.opts.Chains.Chain(chain)
	if err != nil {
		return nil, err
	}
	reader, ok := ref.Connector().(chains.AnnouncementReader)
	if !ok {
		return nil, nil
	}
	var anns []chains.Announcement
	for {
		anns, err = reader.AnnouncementsIn(ctx, txHash)
		if err == nil {
			break
		}
		if !errors.Is(err, chains.ErrNotFound) && !errors.Is(err, chains.ErrUnavailable) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("transaction %s not confirmed yet: %w", txHash, errors.Join(err, ctx.Err()))
		case <-time.After(n.opts.Poll):
		}
	}
	keys := keySet{chain: chain, known: map[string]bool{}}
	defer keys.zero()
	if err := keys.add(ctx, n.opts.Keys, id); err != nil {
		return nil, err
	}
	if err := keys.build(); err != nil {
		return nil, err
	}
	var pays []agent.Incoming
	for _, m := range keys.match(anns) {
		a := anns[m.Announcement]
		pays = append(pays, agent.Incoming{StealthAddress: a.StealthAddress, EphemeralPubKey: a.EphemeralPubKey, Asset: a.Asset, Amount: a.Amount, TxHash: a.TxHash})
	}
	if len(pays) == 0 {
		return nil, fmt.Errorf("transaction %s pays %s nothing its key finds", txHash, payee)
	}
	v, err := n.opts.Agents.Request(ctx, id, &agent.DeliverPayments{Chain: chain, Payments: pays})
	if err != nil {
		return nil, err
	}
	rep, _ := v.(*agent.DeliverReport)
	return rep, nil
}

// Stop cancels the deliveries under way (the scan finds their payments)
// and waits for them to end.
func (n *Instant) Stop() {
	n.cancel()
	n.wg.Wait()
}
