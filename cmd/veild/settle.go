package main

import (
	"context"
	"errors"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/chains"
)

// settleWait bounds how long a settlement waits for its agent: one fired
// on the caller's own write path finds the agent busy with that very call,
// and goes back to the connector's outbox for its next pass (about a
// second later) instead of holding the call up.
const settleWait = 2 * time.Second

// settleReceiver is the chains.SettlementFunc veild installs once the
// agents run: each settlement goes to the agent whose key signed it, which
// moves the payment record and tells the user once (agent.PaymentSettled,
// docs/payments.md). An error keeps the settlement for the next pass.
func settleReceiver(agents agent.Requester) chains.SettlementFunc {
	return func(ctx context.Context, s chains.Settlement) error {
		if s.AgentID == "" {
			return nil // nothing of an agent's: no record
		}
		ctx, cancel := context.WithTimeout(ctx, settleWait)
		defer cancel()
		_, err := agents.Request(ctx, s.AgentID, &agent.PaymentSettled{Settlement: s})
		if errors.Is(err, agent.ErrNotFound) {
			return nil // the agent is gone, and its records with it
		}
		return err
	}
}
