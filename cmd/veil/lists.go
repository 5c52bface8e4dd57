package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/veilhq/veil/client"
)

// The paged lists (docs/cli.md, "Invoices"): one page by default, --all
// for every page, --cursor to go on from where a page ended.

// listFlags are the flags every paged list takes.
type listFlags struct {
	status, since, cursor string
	limit                 int
	all                   bool
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
			fmt.Fprintf(a.stderr, "More: veil %s %s --cursor %s (or --all)\n", cmd, ag.Name, next)
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
