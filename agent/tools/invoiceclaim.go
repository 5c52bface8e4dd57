package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"

	"github.com/veilhq/veil/chains"
)

// Paying an invoice on Stellar and Solana: the payment goes to the
// invoice's one-time address, which does not exist on chain yet; where the
// payee's Veil does not scan plain transfers (Solana) it is told the
// transaction (docs/invoices.md, "Paying on Stellar and Solana").

// Minimums of a payment that creates the one-time account: Stellar's
// createAccount needs the minimum balance (2 base reserves of 0.5 XLM);
// a Solana system account must hold the rent-exempt minimum of an empty
// account (890 880 lamports). Below them the transaction fails.
var (
	stellarAccountMinimum = big.NewRat(1, 1)
	solanaRentMinimum     = big.NewRat(890880, 1_000_000_000)
)

// unreachable says why amount of asset cannot reach a fresh one-time
// address on chain c, naming the minimum ("" when it can): the one rule
// for create_invoice (which refuses to make such an invoice) and
// pay_invoice (which refuses to pay one another server made). prepared
// says the address is activated before the invoice is shown
// (chains.DestinationPreparer: on Stellar the server's sponsor creates the
// account and its trustline, docs/chains-stellar.md).
//
//   - Stellar, not prepared, a token (USDC): the one-time account does not
//     exist and has no trustline, so no payment can reach it
//     (op_no_destination); the operator enables the sponsor.
//   - Stellar, not prepared, XLM below 1 XLM: the payment must create the
//     account, which takes the minimum balance (2 base reserves of 0.5 XLM;
//     below it, createAccount fails op_low_reserve).
//   - Stellar, prepared: the account exists and trusts the asset; any
//     amount of one unit or more is a plain payment.
//   - Solana, SOL below 0.00089088: a new system account must be
//     rent-exempt (890 880 lamports; below, InsufficientFundsForRent). An
//     SPL token has no minimum beyond its smallest unit: the payer creates
//     the address's token account and pays its rent.
//   - EVM: none beyond the asset's smallest unit.
func unreachable(c chains.ID, asset Asset, amount *big.Rat, prepared bool) string {
	switch c.Family() {
	case chains.FamilyStellar:
		if prepared {
			return ""
		}
		if asset.Symbol != "XLM" {
			return fmt.Sprintf("a %s invoice on stellar cannot be paid without a sponsor: its one-time account does not exist and has no %s trustline, so no wallet's payment can reach it (op_no_destination). The operator enables %s invoices on stellar by configuring the server's Stellar sponsor (%s, docs/chains-stellar.md); until then invoice in XLM (at least 1 XLM) on stellar, or in %s on another chain", asset.Symbol, asset.Symbol, asset.Symbol, SponsorSetting, asset.Symbol)
		}
		if amount.Cmp(stellarAccountMinimum) < 0 {
			return fmt.Sprintf("a payment to the invoice's new one-time address on stellar must create the account, which takes at least 1 XLM (the minimum balance: 2 base reserves of 0.5 XLM); with the server's Stellar sponsor configured (%s) any amount can be invoiced", SponsorSetting)
		}
	case chains.FamilySolana:
		if asset.Symbol == "SOL" && amount.Cmp(solanaRentMinimum) < 0 {
			return "a new Solana account must hold at least 0.00089088 SOL (the rent-exempt minimum of 890880 lamports), so a smaller payment to the invoice's new one-time address fails"
		}
	}
	return ""
}

// SponsorSetting names how an operator configures the Stellar sponsor
// (the server-wide relayer), for refusals.
var SponsorSetting = "veild --relayer stellar, docs/operations.md \"Relayers\""

// DestinationPreparer is optionally implemented by ChainOps: chains on
// which an invoice's one-time address is activated before the invoice is
// shown (chains.DestinationPreparer).
type DestinationPreparer interface {
	PreparesDestinations(chain chains.ID) bool
}

func preparesDestinations(env *Env, c chains.ID) bool {
	p, ok := env.Chains.(DestinationPreparer)
	return ok && p.PreparesDestinations(c)
}

// checkInvoiceMinimum refuses an invoice create_invoice would make that no
// payer could pay (unreachable), with the reason and the minimum.
func checkInvoiceMinimum(env *Env, c chains.ID, asset Asset, amount chains.Amount) error {
	v, ok := new(big.Rat).SetString(amount.String())
	if !ok {
		return argErr("amount %q", amount.String())
	}
	if why := unreachable(c, asset, v, preparesDestinations(env, c)); why != "" {
		return argErr("no invoice was created for %s %s on %s: %s", amount.String(), asset.Symbol, c, why)
	}
	return nil
}

// reachable refuses, before anything is sent, what cannot reach the
// invoice's fresh address (unreachable). On Stellar the payee's server may
// have activated the address (its sponsor): the rule is then the
// account's state on chain, which the connector checks before it signs
// (a missing trustline, less than 1 XLM to an account that does not
// exist: refused, nothing signed), so only Solana's rule applies here.
func reachable(inv PayableInvoice, req PaymentRequest) error {
	c := req.Chain()
	if why := unreachable(c, req.Asset(), req.Amount().Rat(), c.Family() == chains.FamilyStellar); why != "" {
		return fmt.Errorf("%w: invoice %s asks for %s %s on %s, and %s; nothing was paid. Pay them with send_payment", ErrInvoiceNotPayable, inv.ID, req.Amount(), req.Asset().Symbol, c, why)
	}
	return nil
}

// claimURL is POST /pay/<id>/paid beside a payment link (no query).
func claimURL(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return strings.TrimRight(link, "/") + "/paid"
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimRight(u.Path, "/") + "/paid"
	u.RawPath = ""
	return u.String()
}

// claimPaid tells the invoice's server (POST <link>/paid) the transaction
// that paid it. The answer must be 200 with the invoice paid.
func claimPaid(ctx context.Context, env *Env, url, txHash string) error {
	body, err := json.Marshal(map[string]string{"txHash": txHash})
	if err != nil {
		return err
	}
	r := webRequest{method: http.MethodPost, url: url, body: body, limit: maxInvoiceJSON,
		header: map[string]string{"Content-Type": "application/json", "Accept": "application/json"}}
	resp, answered, err := r.send(ctx, env.webClient())
	switch {
	case !answered:
		return fmt.Errorf("the server did not answer: %w", err)
	case err != nil:
		return fmt.Errorf("reading its answer: %w", err)
	}
	var ans struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(resp.body, &ans)
	switch {
	case resp.status != http.StatusOK:
		return fmt.Errorf("it answered %d %s", resp.status, clip(ans.Message, 200))
	case ans.Status != "paid":
		return errors.New("it did not answer the invoice paid")
	}
	return nil
}
