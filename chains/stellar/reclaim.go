package stellar

import (
	"context"
	"errors"
	"fmt"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
)

var _ chains.DestinationReclaimer = (*Connector)(nil)

// errGone: the account to reclaim no longer exists (merged meanwhile).
var errGone = errors.New("stellar: the account is closed")

// ReclaimDestination closes P (address), an invoice's one-time account
// the sponsor activated, when it holds nothing, so the sponsor gets back
// the reserves it locked (1 XLM for the account, 0.5 XLM per trustline):
// one transaction whose source (sequence number, fee) is the sponsor,
//
//	[changeTrust(limit 0) of each trustline, source P], accountMerge(sponsor, source P)
//
// signed by the sponsor (its fee, its own spend) and by P's one-time key
// as an explicit spend of P's agent: everything P holds of XLM (nothing:
// P is empty) to the sponsor. Refused with chains.ErrNotEmpty, nothing
// signed, while P holds XLM, a credit asset or a claimable balance (a late
// payment is the agent's money: withdraw it). A closed P answers an empty
// TxResult; idempotencyKey makes it exactly once.
func (c *Connector) ReclaimDestination(ctx context.Context, key chains.KeyRef, address, idempotencyKey string) (chains.TxResult, error) {
	sp := c.sponsor()
	if sp == nil {
		return chains.TxResult{}, fmt.Errorf("%w: no Stellar sponsor is configured on this server", chains.ErrUnavailable)
	}
	if len(key.EphemeralPub) == 0 {
		return chains.TxResult{}, fmt.Errorf("%w: a reclaim is signed by the one-time key (no ephemeral key given)", chains.ErrInvalidAddress)
	}
	p, err := parseAccount(address)
	if err != nil {
		return chains.TxResult{}, err
	}
	k := intents.KeyOr(idempotencyKey, c.opts.Rand)
	fp := intents.Fingerprint("reclaim", p, sp.Address())
	build := c.reclaimBuilder(p, sp.Address())
	if it, _, err := c.ledger.Prior(ctx, k, fp); err != nil {
		return chains.TxResult{}, err
	} else if it != nil {
		return c.reclaimRun(ctx, k, it, build)
	}
	if _, err := c.reclaimable(ctx, p, sp.Address()); err != nil {
		if errors.Is(err, errGone) {
			return chains.TxResult{}, nil
		}
		return chains.TxResult{}, err
	}
	it := &intent{Op: "reclaim", Fingerprint: fp, Source: sp.Address(), KeyRef: key,
		Params: map[string]string{"account": p, "to": sp.Address(), "key": k},
		Spend:  spendOf(c.NativeAsset().Spend(k, key.AgentID, chains.NewAmount(nil, Decimals), sp.Address()))}
	it.Spend.All = true
	return c.reclaimRun(ctx, k, it, build)
}

func (c *Connector) reclaimRun(ctx context.Context, k string, it *intent, build builder) (chains.TxResult, error) {
	res, err := c.run(ctx, k, it, build)
	if errors.Is(err, errGone) {
		return chains.TxResult{}, nil
	}
	return res, err
}

// reclaimBuilder builds the reclaim's operations with P's state read
// again for every attempt (source P; the transaction's is the sponsor).
func (c *Connector) reclaimBuilder(p, sponsor string) builder {
	return func(ctx context.Context) ([]txnbuild.Operation, txnbuild.Memo, error) {
		acc, err := c.reclaimable(ctx, p, sponsor)
		if err != nil {
			return nil, nil, err
		}
		var ops []txnbuild.Operation
		for _, b := range acc.Balances {
			if b.Type == "native" {
				continue
			}
			ops = append(ops, &txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: txnbuild.CreditAsset{Code: b.Code, Issuer: b.Issuer}}, Limit: "0", SourceAccount: p})
		}
		return append(ops, &txnbuild.AccountMerge{Destination: sponsor, SourceAccount: p}), nil, nil
	}
}

// reclaimable reads P and checks that it may be closed into the sponsor:
// the sponsor sponsors it, and it holds nothing (no XLM, every trustline
// empty, no claimable balance names it). errGone when it does not exist.
func (c *Connector) reclaimable(ctx context.Context, p, sponsor string) (hProtocol.Account, error) {
	acc, found, err := c.account(ctx, p)
	if err != nil {
		return acc, err
	}
	if !found {
		return acc, errGone
	}
	if acc.Sponsor != sponsor {
		return acc, fmt.Errorf("%w: %s is not sponsored by this server's sponsor %s (sponsor %q); it is not reclaimed", chains.ErrInvalidAddress, p, sponsor, acc.Sponsor)
	}
	for _, b := range acc.Balances {
		if stroops(b.Balance).Sign() > 0 {
			what := "XLM"
			if b.Type != "native" {
				what = b.Code
			}
			return acc, fmt.Errorf("%w: %s holds %s %s (the agent's money: withdraw it); it is not closed", chains.ErrNotEmpty, p, b.Balance, what)
		}
	}
	v, err := c.call(ctx, func() (any, error) {
		return c.hc.ClaimableBalances(horizonclient.ClaimableBalanceRequest{Claimant: p, Limit: 1})
	})
	if err != nil {
		return acc, c.Unavailable("claimable balances", err)
	}
	if cbs := v.(hProtocol.ClaimableBalances).Embedded.Records; len(cbs) > 0 {
		return acc, fmt.Errorf("%w: %s can claim %s %s (the agent's money: withdraw it); it is not closed", chains.ErrNotEmpty, p, cbs[0].Amount, cbs[0].Asset)
	}
	return acc, nil
}
