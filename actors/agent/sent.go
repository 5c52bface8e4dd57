package agent

import (
	"context"
	"strings"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// sendStealth makes the stealth payment pr (as its tool read it, or as
// a schedule or an approval kept it: tools.StoredPayment) from this
// agent's account, whichever path pays it (pr.Source): a chat tool, a
// schedule's run or an approved payment. Its recipient's name is the
// label the owner and the agent see ("bob.veil", or a shortened
// meta-address). It is recorded (paying, pr.Record) before it is signed
// as exactly pr.SendRequest. A payment to another agent of this Veil, by
// name, is told to Deps.Sent, so the payee is notified as soon as it is
// confirmed rather than at the next scan.
func (a *Actor) sendStealth(ctx context.Context, pr tools.PaymentRequest) (chains.TxResult, error) {
	req, err := pr.SendRequest()
	if err != nil {
		return chains.TxResult{}, err
	}
	conn, err := a.deps.Chains.Chain(req.Chain)
	if err != nil {
		return chains.TxResult{}, err
	}
	from := chains.KeyRef{AgentID: a.id, Chain: req.Chain, Epoch: keyEpoch}
	// The connector signs the payment as a spend (asset, amount, meta,
	// key); the enclave checks it against the agent's policy.
	res, err := a.paying(ctx, pr.Record(), func(ctx context.Context) (chains.TxResult, error) {
		return conn.SendStealth(ctx, from, a.rec.Addresses[string(req.Chain)], req)
	})
	if payee := pr.Recipient().Name; err == nil && a.deps.Sent != nil && strings.HasSuffix(payee, chains.NameSuffix) {
		a.deps.Sent(req.Chain, payee, res.TxHash)
	}
	return res, err
}
