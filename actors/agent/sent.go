package agent

import (
	"context"
	"strings"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// sendStealth makes a stealth payment from this agent's account to
// payee (the label the owner and the agent see: "bob.veil", or a
// shortened meta-address), whichever path pays it (src): a chat tool, a
// schedule's run or an approved payment. It is recorded (paying) before
// it is signed. A payment to another agent of this Veil, by name, is told
// to Deps.Sent, so the payee is notified as soon as it is confirmed rather
// than at the next scan.
func (a *Actor) sendStealth(ctx context.Context, req chains.SendRequest, payee string, src tools.PaymentSource) (chains.TxResult, error) {
	conn, err := a.deps.Chains.Chain(req.Chain)
	if err != nil {
		return chains.TxResult{}, err
	}
	from := chains.KeyRef{AgentID: a.id, Chain: req.Chain, Epoch: keyEpoch}
	rec := tools.OutgoingPayment{Kind: tools.KindSendPayment, Source: src, Chain: req.Chain, Asset: assetOr(req.Chain, req.Asset), Amount: req.Amount,
		Recipient: tools.PaymentRecipient{Name: payee, Address: req.To}, IdempotencyKey: req.IdempotencyKey}
	// The connector signs the payment as a spend (asset, amount, meta,
	// key); the enclave checks it against the agent's policy.
	res, err := a.paying(ctx, rec, func(ctx context.Context) (chains.TxResult, error) {
		return conn.SendStealth(ctx, from, a.rec.Addresses[string(req.Chain)], req)
	})
	if err == nil && a.deps.Sent != nil && strings.HasSuffix(payee, chains.NameSuffix) {
		a.deps.Sent(req.Chain, payee, res.TxHash)
	}
	return res, err
}
