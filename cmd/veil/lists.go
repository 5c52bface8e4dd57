package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// The paged lists (docs/cli.md, "Invoices"): one page by default, --all
// for every page, --cursor to go on from where a page ended.

// listFlags are the flags every paged list takes.
type listFlags struct {
	status, since, cursor string
	limit                 int
	all                   bool
	// hint is what the paging hint repeats after AGENT (" --received").
	hint string
}

func (f *listFlags) register(statuses string) func(*app, *pflag.FlagSet) {
	return func(_ *app, fs *pflag.FlagSet) {
		fs.StringVarP(&f.status, "status", "s", "", "only this `status`: "+statuses)
		fs.StringVar(&f.since, "since", "", "only what was created since `WHEN`: a time (2026-11-01T09:00:00Z), a date (2026-11-01) or an age (24h, 7d)")
		fs.IntVarP(&f.limit, "limit", "n", 0, fmt.Sprintf("at most `N` per page, 1 to %d (default %d)", client.MaxPageLimit, client.DefaultPageLimit))
		fs.StringVar(&f.cursor, "cursor", "", "go on from where a page ended (the `CURSOR` it printed)")
		fs.BoolVar(&f.all, "all", false, "every page, not only the first")
	}
}

// query checks the flags (a usage error, exit 2, before anything is
// sent) and returns the API query.
func (f *listFlags) query(statuses []string, now time.Time) (client.ListQuery, error) {
	q := client.ListQuery{Status: f.status, Limit: f.limit, Cursor: f.cursor}
	if f.status == "all" {
		q.Status = ""
	}
	if q.Status != "" && !contains(statuses, q.Status) {
		return q, usagef("--status %q: use %s or all", f.status, strings.Join(statuses, ", "))
	}
	if f.limit < 0 || f.limit > client.MaxPageLimit {
		return q, usagef("--limit %d: use 1 to %d", f.limit, client.MaxPageLimit)
	}
	if f.since != "" {
		t, err := parseSince(f.since, now)
		if err != nil {
			return q, usagef("--since %q: use a time (2026-11-01T09:00:00Z), a date (2026-11-01) or an age (24h, 7d)", f.since)
		}
		q.Since = t
	}
	return q, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseSince reads RFC 3339, a date (midnight UTC) or an age before now
// (a Go duration, or N followed by d for days).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("bad age %q", s)
		}
		return now.Add(-time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("bad age %q", s)
	}
	return now.Add(-d), nil
}

// pagedList runs a paged list command on AGENT: get reads one page;
// --all follows the cursor to the end. With --json it prints the API's
// page object (with --all, every item and no cursor); else a table, and
// on stderr how to see the next page.
func pagedList[T any](a *app, cmd string, args []string, f *listFlags, statuses []string, key string,
	get func(ctx context.Context, c *client.Client, agentID string, q client.ListQuery) ([]T, string, error),
	empty func(*client.AgentInfo) string, header string, row func(T) string) error {
	q, err := f.query(statuses, time.Now())
	if err != nil {
		return err
	}
	return a.withAgent(cmd, args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
		var items []T
		next := ""
		for {
			page, cur, err := get(ctx, c, ag.ID, q)
			if err != nil {
				return err
			}
			items, next = append(items, page...), cur
			if !f.all || cur == "" || cur == q.Cursor {
				break
			}
			q.Cursor = cur
		}
		if a.g.json {
			out := map[string]any{key: nonNil(items)}
			if next != "" && !f.all {
				out["nextCursor"] = next
			}
			return a.printJSON(out)
		}
		if err := printList(a, items, empty(ag), header, row); err != nil {
			return err
		}
		if next != "" && !f.all {
			fmt.Fprintf(a.stderr, "More: veil %s %s%s --cursor %s (or --all)\n", cmd, ag.Name, f.hint, next)
		}
		return nil
	})
}

func init() {
	var f listFlags
	statuses := []string{client.InvoicePending, client.InvoicePaid, client.InvoiceExpired}
	register(&command{
		path:    "invoices",
		args:    "AGENT [--status pending|paid|expired] [--since WHEN] [--limit N] [--all|--cursor CURSOR]",
		summary: "list an agent's invoices, newest first",
		detail: `One page (50 by default); --all lists every page. pending: unpaid and still payable; expired:
unpaid past its expiry; paid. With --json: the API's page, {"invoices": [...], "nextCursor": "..."}.`,
		examples: []string{
			"veil invoices alice",
			"veil invoices alice --status pending --since 7d",
			"veil invoices alice --all --json | jq -r '.invoices[] | select(.status==\"paid\") | .id'",
		},
		flags: f.register("pending, paid, expired or all"),
		run: func(a *app, args []string) error {
			return pagedList(a, "invoices", args, &f, statuses, "invoices",
				func(ctx context.Context, c *client.Client, id string, q client.ListQuery) ([]client.Invoice, string, error) {
					p, err := c.ListInvoices(ctx, id, q)
					if err != nil {
						return nil, "", err
					}
					return p.Invoices, p.NextCursor, nil
				},
				func(ag *client.AgentInfo) string {
					return fmt.Sprintf("No invoices for %s: ask it in chat, e.g. \"create an invoice for 5 USDC for logo design\".", ag.FullName())
				},
				"ID\tSTATUS\tAMOUNT\tMEMO\tCREATED\tPAY", func(inv client.Invoice) string {
					status := inv.Status
					if inv.Status == client.InvoicePending && inv.ExpiresAt != nil && !time.Now().Before(*inv.ExpiresAt) {
						status = client.InvoiceExpired
					}
					return fmt.Sprintf("%s\t%s\t%s %s\t%s\t%s\t%s", inv.ID, status, inv.Amount, inv.Asset, oneLine(inv.Memo, 40), localTime(inv.CreatedAt), inv.PaymentLink)
				})
		},
	})
}

func init() {
	var f listFlags
	var chain string
	var received bool
	statuses := []string{client.PaymentPending, client.PaymentBroadcast, client.PaymentConfirmed, client.PaymentFailed, client.PaymentRefused}
	receivedStatuses := []string{client.ReceivedHeld, client.ReceivedWithdrawn}
	flags := f.register("pending, broadcast, confirmed, failed, refused or all; with --received: held, withdrawn or all")
	register(&command{
		path:    "payments",
		args:    "AGENT [PAYMENT] [--received] [--status S] [--chain CHAIN] [--since WHEN] [--limit N] [--all|--cursor CURSOR]",
		summary: "list the payments an agent made (or, with --received, received), newest first, or show one",
		detail: `Each payment has one record from the moment it is signed (docs/payments.md): pending (on its
way, outcome not known yet: do not send it again), broadcast, confirmed, failed, or refused
(nothing was signed). One page (50 by default); --all lists every page. With PAYMENT: that one
record. With --json: the API's page, {"payments": [...], "nextCursor": "..."}, or the record.

--received lists the stealth payments the agent received instead (GET
/agent/:id/payments/received): one per one-time address, with what is left of it (held) or
withdrawn, found by the scanner or paid to an invoice; the notification inbox is not needed.`,
		examples: []string{
			"veil payments alice",
			"veil payments alice --status pending --chain base",
			"veil payments alice 01936f0e-…",
			"veil payments alice --received --since 7d",
			"veil payments alice --all --json | jq -r '.payments[] | select(.status==\"confirmed\") | .txHash'",
		},
		flags: func(a *app, fs *pflag.FlagSet) {
			flags(a, fs)
			fs.StringVar(&chain, "chain", "", "only payments on this `chain`")
			fs.BoolVar(&received, "received", false, "the payments the agent received, not those it made")
		},
		run: func(a *app, args []string) error {
			if len(args) == 2 {
				if received {
					return usagef("payments: --received lists; it shows no single payment (drop PAYMENT or --received)")
				}
				return a.withAgent("payments", args, 1, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, rest []string) error {
					p, err := c.GetPayment(ctx, ag.ID, rest[0])
					if err != nil {
						return err
					}
					return a.print(p, func() error { return a.paymentTable(p) })
				})
			}
			if chain != "" {
				if _, err := chains.Parse(chain); err != nil {
					return usagef("--chain %q: use one of horizen, ethereum, polygon, base, stellar, solana", chain)
				}
			}
			if received {
				f.hint = " --received"
				return pagedList(a, "payments", args, &f, receivedStatuses, "payments",
					func(ctx context.Context, c *client.Client, id string, q client.ListQuery) ([]client.ReceivedPayment, string, error) {
						p, err := c.ListReceived(ctx, id, client.ReceivedQuery{ListQuery: q, Chain: chain})
						if err != nil {
							return nil, "", err
						}
						return p.Payments, p.NextCursor, nil
					},
					func(ag *client.AgentInfo) string {
						return fmt.Sprintf("No payments received by %s yet.", ag.FullName())
					},
					"RECEIVED\tAMOUNT\tLEFT\tCHAIN\tADDRESS\tTX", func(p client.ReceivedPayment) string {
						left := p.Balance + " " + p.Asset
						if p.Withdrawn {
							left = "withdrawn"
						}
						return fmt.Sprintf("%s\t%s %s\t%s\t%s\t%s\t%s", localTime(p.ReceivedAt), p.Amount, p.Asset, left, p.Chain, p.StealthAddress, strings.Join(p.TxHashes, ", "))
					})
			}
			return pagedList(a, "payments", args, &f, statuses, "payments",
				func(ctx context.Context, c *client.Client, id string, q client.ListQuery) ([]client.PaymentRecord, string, error) {
					p, err := c.ListPayments(ctx, id, client.PaymentQuery{ListQuery: q, Chain: chain})
					if err != nil {
						return nil, "", err
					}
					return p.Payments, p.NextCursor, nil
				},
				func(ag *client.AgentInfo) string {
					return fmt.Sprintf("No payments recorded for %s.", ag.FullName())
				},
				"ID\tSTATUS\tAMOUNT\tTO\tCHAIN\tCREATED\tTX", func(p client.PaymentRecord) string {
					tx := p.TxHash
					if tx == "" && p.Reason != "" {
						tx = oneLine(p.Reason, 60)
					}
					return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", p.ID, p.Status, paymentAmount(p), recipientOf(p), p.Chain, localTime(p.CreatedAt), tx)
				})
		},
	})
}

func paymentAmount(p client.PaymentRecord) string {
	if p.All {
		return "all " + p.Asset
	}
	return p.Amount + " " + p.Asset
}

func recipientOf(p client.PaymentRecord) string {
	if p.Recipient.Name != "" {
		return p.Recipient.Name
	}
	return p.Recipient.Address
}

func (a *app) paymentTable(p *client.PaymentRecord) error {
	tw := a.table()
	fmt.Fprintf(tw, "Payment %s\n", p.ID)
	fmt.Fprintf(tw, "  status\t%s\n  amount\t%s\n  to\t%s\n", p.Status, paymentAmount(*p), recipientOf(*p))
	if p.Recipient.Name != "" {
		fmt.Fprintf(tw, "  address\t%s\n", p.Recipient.Address)
	}
	fmt.Fprintf(tw, "  chain\t%s\n  kind\t%s\n", p.Chain, p.Kind)
	if p.Source.Type != "" {
		fmt.Fprintf(tw, "  asked by\t%s %s\n", p.Source.Type, p.Source.ID)
	}
	if p.TxHash != "" {
		fmt.Fprintf(tw, "  tx\t%s\n", p.TxHash)
	}
	if len(p.TxHashes) > 1 {
		fmt.Fprintf(tw, "  all txs\t%s\n", strings.Join(p.TxHashes, ", "))
	}
	if p.Confirmations > 0 {
		fmt.Fprintf(tw, "  confirmations\t%d\n", p.Confirmations)
	}
	if p.Reason != "" {
		fmt.Fprintf(tw, "  reason\t%s\n", p.Reason)
	}
	fmt.Fprintf(tw, "  created\t%s\n", localTime(p.CreatedAt))
	if p.SettledAt != nil {
		fmt.Fprintf(tw, "  settled\t%s\n", localTime(*p.SettledAt))
	}
	if p.Status == client.PaymentPending || p.Status == client.PaymentBroadcast {
		fmt.Fprintln(tw, "  \ton its way: do not send it again; you are told when it settles")
	}
	return tw.Flush()
}
