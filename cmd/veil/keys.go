package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/veilhq/veil/client"
)

// veil keys …: the account's API keys while the server runs (an admin
// key), and veil audit: its audit trail.

func init() {
	var account string
	accountFlag := func(a *app, fs *pflag.FlagSet) {
		fs.StringVar(&account, "account", "", "another `account`'s keys (an admin key of the bootstrap account only)")
	}
	list := func(a *app, args []string) error {
		if err := noArgs("keys list", args); err != nil {
			return err
		}
		return a.call(func(ctx context.Context, c *client.Client) error {
			keys, err := c.ListKeys(ctx, account)
			if err != nil {
				return err
			}
			return printList(a, keys, "No API keys.", "ID\tNAME\tSCOPE\tSTATUS\tCREATED\tEXPIRES", func(k client.APIKey) string {
				exp := "never"
				if k.ExpiresAt != nil {
					exp = localTime(*k.ExpiresAt)
				}
				return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", k.ID, orDash(k.Name), k.Scope, k.Status, localTime(k.CreatedAt), exp)
			})
		})
	}
	register(&command{
		path:     "keys",
		summary:  "list the account's API keys (same as keys list)",
		detail:   "Subcommands: keys list|create|revoke|rotate (an admin key; see veil help keys).",
		examples: []string{"veil keys"},
		flags:    accountFlag,
		run:      list,
	})
	register(&command{
		path:     "keys list",
		summary:  "list the account's API keys, revoked ones too (never their text)",
		examples: []string{"veil keys list --json"},
		flags:    accountFlag,
		run:      list,
	})

	var create struct {
		scope, expires, account string
		rate                    float64
		burst                   int
		test                    bool
	}
	register(&command{
		path:    "keys create",
		args:    "NAME",
		summary: "create an API key; its text is printed once, on standard output",
		detail: "Scopes: read (GET only), chat (also chat, MCP, conversations, notifications), full (everything but keys and the audit trail), admin (everything). " +
			"The key's text goes to standard output alone, so that `veil keys create ci --scope read > ci.key` keeps it; what it is goes to standard error.",
		examples: []string{"veil keys create ci --scope read --expires 720h", "veil keys create billing-bot --scope chat --rate-limit 5"},
		flags: func(a *app, fs *pflag.FlagSet) {
			fs.StringVar(&create.scope, "scope", "", "`scope`: read, chat, full or admin (required)")
			fs.StringVar(&create.expires, "expires", "", "the key stops working after this `duration` (e.g. 720h); default never")
			fs.Float64Var(&create.rate, "rate-limit", 0, "the key's own limit, `requests/s` (default: the account's)")
			fs.IntVar(&create.burst, "rate-burst", 0, "with --rate-limit: the burst (default twice the rate)")
			fs.BoolVar(&create.test, "test", false, "issue a veil_test_ key")
			fs.StringVar(&create.account, "account", "", "for another `account`, created if new (an admin key of the bootstrap account only)")
		},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("keys create needs one NAME (what the key is for)")
			}
			if create.scope == "" {
				return usagef("keys create needs --scope read, chat, full or admin")
			}
			req := client.CreateKeyRequest{Name: args[0], Scope: create.scope, ExpiresIn: create.expires, Test: create.test, Account: create.account}
			if create.rate > 0 {
				b := create.burst
				if b <= 0 {
					b = max(1, int(2*create.rate))
				}
				req.RateLimit = &client.KeyRateLimit{PerSecond: create.rate, Burst: b}
			}
			return a.call(func(ctx context.Context, c *client.Client) error {
				k, err := c.CreateKey(ctx, req)
				if err != nil {
					return err
				}
				return a.print(k, func() error {
					fmt.Fprintf(a.stderr, "API key %s (%s, scope %s, account %s); shown once, store it now:\n", k.ID, k.Name, k.Scope, k.Account)
					fmt.Fprintln(a.stdout, k.Secret)
					return nil
				})
			})
		},
	})
	register(&command{
		path:     "keys revoke",
		args:     "KEY_ID",
		summary:  "revoke an API key at once (on every cluster member)",
		examples: []string{"veil keys revoke key_3f2a9c0d1e2b4a5c"},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("keys revoke needs one KEY_ID (see veil keys list)")
			}
			return a.call(func(ctx context.Context, c *client.Client) error {
				k, err := c.RevokeKey(ctx, args[0])
				if err != nil {
					return err
				}
				return a.print(k, func() error {
					fmt.Fprintf(a.stdout, "Key %s (%s) is revoked.\n", k.ID, orDash(k.Name))
					return nil
				})
			})
		},
	})
	register(&command{
		path:     "keys rotate",
		args:     "KEY_ID",
		summary:  "replace a key by a new one with its settings; the old one stops working at once",
		examples: []string{"veil keys rotate key_3f2a9c0d1e2b4a5c > ci.key"},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("keys rotate needs one KEY_ID (see veil keys list)")
			}
			return a.call(func(ctx context.Context, c *client.Client) error {
				r, err := c.RotateKey(ctx, args[0])
				if err != nil {
					return err
				}
				return a.print(r, func() error {
					fmt.Fprintf(a.stderr, "Key %s replaces %s (revoked); shown once, store it now:\n", r.Key.ID, r.Revoked.ID)
					fmt.Fprintln(a.stdout, r.Key.Secret)
					return nil
				})
			})
		},
	})

	var aq struct {
		agent, key, action, outcome, since, until, format, cursor, account string
		limit                                                              int
	}
	register(&command{
		path:    "audit",
		summary: "the account's audit trail, newest first (an admin key)",
		detail: "Every request that changes state, and every refused attempt of a revoked, expired or out-of-scope key, is one record. " +
			"--format csv or jsonl prints an export; follow the printed cursor (--cursor) for older records.",
		examples: []string{"veil audit --since 24h", "veil audit --outcome refused", "veil audit --action policy --format csv > audit.csv"},
		flags: func(a *app, fs *pflag.FlagSet) {
			fs.StringVar(&aq.agent, "agent", "", "only this agent's (`id`)")
			fs.StringVar(&aq.key, "key", "", "only this key's (`key id`)")
			fs.StringVar(&aq.action, "action", "", "only this `action` (policy.set) or family (policy)")
			fs.StringVar(&aq.outcome, "outcome", "", "only ok, failed or refused")
			fs.StringVar(&aq.since, "since", "", "records from this `time` (RFC 3339) or this long ago (24h)")
			fs.StringVar(&aq.until, "until", "", "records up to this `time` (RFC 3339) or this long ago")
			fs.StringVar(&aq.format, "format", "", "csv or jsonl: print an export instead of a table")
			fs.StringVar(&aq.cursor, "cursor", "", "continue after this `record id` (printed after a full page)")
			fs.StringVar(&aq.account, "account", "", "another `account`'s (an admin key of the bootstrap account only)")
			fs.IntVar(&aq.limit, "limit", 100, "at most this many records (1-1000)")
		},
		run: func(a *app, args []string) error {
			if err := noArgs("audit", args); err != nil {
				return err
			}
			q := client.AuditQuery{Account: aq.account, Agent: aq.agent, Key: aq.key, Action: aq.action, Outcome: aq.outcome, Cursor: aq.cursor, Limit: aq.limit}
			var err error
			if q.Since, err = whenFlag("since", aq.since); err != nil {
				return err
			}
			if q.Until, err = whenFlag("until", aq.until); err != nil {
				return err
			}
			switch aq.format {
			case "", "table":
			case "csv", "jsonl":
				return a.call(func(ctx context.Context, c *client.Client) error {
					b, err := c.AuditExport(ctx, q, aq.format)
					if err != nil {
						return err
					}
					_, err = a.stdout.Write(b)
					return err
				})
			default:
				return usagef("--format %q: want csv or jsonl", aq.format)
			}
			return a.call(func(ctx context.Context, c *client.Client) error {
				page, err := c.Audit(ctx, q)
				if err != nil {
					return err
				}
				if a.g.json {
					return a.printJSON(page)
				}
				if err := printList(a, page.Records, "No audit records.", "TIME\tKEY\tACTION\tSTATUS\tOUTCOME\tAGENT\tDETAIL", func(r client.AuditRecord) string {
					key := r.KeyID
					if r.KeyName != "" {
						key += " (" + r.KeyName + ")"
					}
					return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s", localTime(r.Time), orDash(key), r.Action, r.Status, r.Outcome, orDash(r.AgentID), orDash(oneLine(r.Detail, 80)))
				}); err != nil {
					return err
				}
				if page.NextCursor != nil {
					fmt.Fprintf(a.stderr, "More: veil audit --cursor %s\n", *page.NextCursor)
				}
				return nil
			})
		},
	})
}

// whenFlag reads an RFC 3339 time or a duration ago.
func whenFlag(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return time.Now().Add(-d), nil
	}
	return time.Time{}, usagef("--%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration ago (24h)", name, v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
