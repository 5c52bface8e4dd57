package main

import (
	"context"
	"fmt"

	"github.com/veilhq/veil/client"
)

func init() {
	register(&command{
		path:     "invoice show",
		args:     "INVOICE",
		summary:  "show an invoice: amount, memo, status, pay link",
		detail:   "Invoices are created by an agent's create_invoice tool in chat; its answer shows the id and pay link.",
		examples: []string{"veil invoice show 7d1e…", "veil invoice show 7d1e… --json | jq -r .status"},
		run: func(a *app, args []string) error {
			return a.withInvoice("invoice show", args, func(ctx context.Context, c *client.Client, id string) error {
				inv, err := c.GetInvoice(ctx, id)
				if err != nil {
					return err
				}
				return a.printInvoice(inv)
			})
		},
	})
	var tx string
	register(&command{
		path:    "invoice paid",
		args:    "INVOICE [--tx HASH]",
		summary: "mark an invoice paid once its payment is on chain",
		detail: `The server checks the payment on chain (the invoice's address, asset and amount) before the
invoice turns paid; --tx names the transaction. Repeating it is harmless.`,
		examples: []string{"veil invoice paid 7d1e… --tx 0x5be2…", "veil invoice paid 7d1e… --json"},
		flags:    stringFlag(&tx, "tx", "", "", "hash of the paying `transaction`"),
		run: func(a *app, args []string) error {
			return a.withInvoice("invoice paid", args, func(ctx context.Context, c *client.Client, id string) error {
				inv, err := c.MarkInvoicePaid(ctx, id, tx)
				if err != nil {
					return err
				}
				return a.printInvoice(inv)
			})
		},
	})
}

func (a *app) withInvoice(cmd string, args []string, fn func(ctx context.Context, c *client.Client, id string) error) error {
	if len(args) != 1 {
		return usagef("%s needs one INVOICE id", cmd)
	}
	return a.call(func(ctx context.Context, c *client.Client) error { return fn(ctx, c, args[0]) })
}

// printInvoice prints an invoice: the API's object with --json, else a
// table for people.
func (a *app) printInvoice(inv *client.Invoice) error {
	return a.print(inv, func() error { return a.invoiceTable(inv) })
}

func (a *app) invoiceTable(inv *client.Invoice) error {
	tw := a.table()
	fmt.Fprintf(tw, "Invoice %s\n", inv.ID)
	fmt.Fprintf(tw, "  from\t%s%s\n  amount\t%s %s\n", inv.AgentName, client.NameSuffix, inv.Amount, inv.Asset)
	if inv.Memo != "" {
		fmt.Fprintf(tw, "  memo\t%s\n", inv.Memo)
	}
	fmt.Fprintf(tw, "  status\t%s\n", inv.Status)
	if inv.TxHash != nil {
		fmt.Fprintf(tw, "  tx\t%s\n", *inv.TxHash)
	}
	if inv.Chain != "" {
		fmt.Fprintf(tw, "  chain\t%s\n", inv.Chain)
	}
	if inv.PayTo != "" {
		fmt.Fprintf(tw, "  pay to\t%s\n", inv.PayTo)
	}
	fmt.Fprintf(tw, "  pay\t%s\n  created\t%s\n", inv.PaymentLink, localTime(inv.CreatedAt))
	return tw.Flush()
}
