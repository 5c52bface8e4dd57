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

// reachable refuses, before anything is sent, what cannot reach the
// invoice's fresh address: a Stellar token (the address has no
// trustline), or less than the chain's minimum for a new account.
func reachable(inv PayableInvoice, asset Asset) error {
	amount, ok := new(big.Rat).SetString(inv.Amount)
	if !ok {
		return fmt.Errorf("%w: invoice %s: amount %q", ErrInvoiceNotPayable, inv.ID, clip(inv.Amount, 40))
	}
	switch inv.Chain.Family() {
	case chains.FamilyStellar:
		if asset.Symbol != "XLM" {
			return fmt.Errorf("%w: invoice %s asks for %s on stellar; its one-time address has no %s trustline, so a plain payment cannot reach it; nothing was paid. Ask the payee for an XLM invoice, or pay them with send_payment", ErrInvoiceNotPayable, inv.ID, asset.Symbol, asset.Symbol)
		}
		if amount.Cmp(stellarAccountMinimum) < 0 {
			return fmt.Errorf("%w: invoice %s asks for %s XLM; a payment to its new one-time address must create the account, which takes at least 1 XLM; nothing was paid. Pay them with send_payment", ErrInvoiceNotPayable, inv.ID, inv.Amount)
		}
	case chains.FamilySolana:
		if asset.Symbol == "SOL" && amount.Cmp(solanaRentMinimum) < 0 {
			return fmt.Errorf("%w: invoice %s asks for %s SOL, less than the 0.00089088 SOL a new Solana account must hold; nothing was paid. Pay them with send_payment", ErrInvoiceNotPayable, inv.ID, inv.Amount)
		}
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
