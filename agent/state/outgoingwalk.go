package state

import (
	"context"

	"github.com/veilhq/veil/agent/tools"
)

// Walk calls fn with the agent's payment records, newest first, until fn
// answers false (payment_history, tools.PaymentWalker).
func (s *Outgoing) Walk(ctx context.Context, fn func(tools.OutgoingPayment) bool) error {
	if err := checkAgentID(s.agentID); err != nil {
		return err
	}
	return s.walk(ctx, "", fn)
}
