package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/relayer"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/cluster"
	"github.com/veilhq/veil/runtime/ready"
)

// headReader is what the chain check needs of a connector: every connector
// of chains/evm, chains/stellar and chains/solana has it.
type headReader interface {
	Head(ctx context.Context) (height uint64, at time.Time, err error)
}

// readiness builds the built-in checks of GET /readyz (docs/operations.md):
// the store, each chain's node, the enclave, and (in a cluster) this
// member's place in the topology. Other components add theirs with Add.
func readiness(cfg config, store persistence.Store, set *chainSet, enclaveCheck func(context.Context) error, member *cluster.Member, now func() time.Time) *ready.Checker {
	c := &ready.Checker{Timeout: cfg.ReadyTimeout}
	c.Add(ready.Func("store", func(ctx context.Context) error {
		// Any read that reaches the database: a missing key is an answer.
		_, err := store.Get(ctx, "readyz", "probe")
		if err == nil || errors.Is(err, persistence.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("store (%s) does not answer: %w", cfg.Store, err)
	}))
	c.Add(ready.Func("enclave", func(ctx context.Context) error {
		if err := enclaveCheck(ctx); err != nil {
			return fmt.Errorf("enclave (%s) is not ready: %w", cfg.Enclave, err)
		}
		return nil
	}))
	for _, id := range chains.Order() {
		ref, ok := set.refs[id]
		if !ok {
			continue
		}
		c.Add(chainCheck(id, ref, set.real[id], cfg.ReadyHeadAge, now))
	}
	// Payment scanners that keep failing find no payments (a scanner runs on
	// the member holding its lease; elsewhere this reports nothing).
	c.Add(ready.Func("scanner", func(context.Context) error { return scanHealth.Err(scanNotReadyAfter) }))
	if member != nil {
		c.Add(ready.Func("cluster", func(context.Context) error {
			self, members := member.Self(), member.Members()
			switch {
			case self == "":
				return errors.New("this member has not joined the cluster yet")
			case !slices.Contains(members, self):
				return fmt.Errorf("this member (%s) is not in the topology it sees (%d members): it is joining or leaving", self, len(members))
			}
			if why := member.Fenced(); why != "" {
				return fmt.Errorf("this member serves no agent now (fenced): %s", why)
			}
			return nil
		}))
	}
	return c
}

// chainCheck is "chain/<id>": the chain serves on this node (a chain
// actor's Ping: not degraded, and its genesis is the one recorded), its node
// answers with its head and, on a real network, the head is younger than
// maxAge. Devnets and development nodes (a development chain id, or a node
// that automines) make blocks only when there is a transaction, so their
// head's age says nothing.
func chainCheck(id chains.ID, conn chains.Connector, real bool, maxAge time.Duration, now func() time.Time) ready.Check {
	return ready.Func("chain/"+string(id), func(ctx context.Context) error {
		if p, ok := conn.(pinger); ok {
			if err := p.Ping(ctx); err != nil {
				return err
			}
		}
		node := conn
		if w, ok := conn.(interface{ Connector() chains.Connector }); ok {
			node = w.Connector()
		}
		hr, ok := node.(headReader)
		if !ok {
			return nil // a connector without heads: nothing to check
		}
		height, at, err := hr.Head(ctx)
		if err != nil {
			return fmt.Errorf("%s node does not answer: %w", id, err)
		}
		if !real || maxAge <= 0 || at.IsZero() {
			return nil
		}
		if age := now().Sub(at); age > maxAge {
			if d, ok := node.(devNode); ok && d.Development(ctx) {
				return nil
			}
			return fmt.Errorf("%s head %d is %s old (over --ready-head-age %s): the node is not syncing", id, height, age.Round(time.Second), maxAge)
		}
		return nil
	})
}

// pinger is a chain actor (actors/chain Ref.Ping): the chain's
// *chains.DownError while it is degraded or reset.
type pinger interface {
	Ping(ctx context.Context) error
}

// devNode is a connector that can tell a local development node
// (chains/evm Connector.Development).
type devNode interface {
	Development(ctx context.Context) bool
}

// relayerChecks are the readiness checks "relayer/<chain>", one per
// relayer: a relayer that needs funding (relayer.Set.Low) is a warning, so
// /readyz names it and stays 200, and every chain and every other payment
// still serve.
func relayerChecks(set *relayer.Set) []ready.Check {
	var out []ready.Check
	for _, id := range set.Chains() {
		out = append(out, ready.Func("relayer/"+string(id), func(ctx context.Context) error {
			if why := set.Low(ctx, id); why != "" {
				return ready.Warning(errors.New(why))
			}
			return nil
		}))
	}
	return out
}
