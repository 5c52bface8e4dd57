package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"strings"
	"time"

	"github.com/veilhq/veil/client"
)

// veil approvals: payments the owner's policy held (docs/approvals.md).
func init() {
	var status string
	list := func(a *app, args []string) error {
		switch status {
		case "", "all", client.ApprovalPending, client.ApprovalApproved, client.ApprovalDenied, client.ApprovalExpired:
		default:
			return usagef("--status %q: use pending, approved, denied, expired or all", status)
		}
		st := status
		if st == "all" {
			st = ""
		}
		return agentList(a, "approvals", args,
			func(ctx context.Context, c *client.Client, id string) ([]client.Approval, error) {
				return c.ListApprovals(ctx, id, st)
			},
			func(ag *client.AgentInfo) string {
				return fmt.Sprintf("No %sapprovals for %s.", map[bool]string{true: status + " "}[st != ""], ag.FullName())
			},
			"ID\tSTATUS\tAMOUNT\tTO\tWHY\tEXPIRES\tTX", func(ap client.Approval) string {
				tx := ap.TxHash
				if tx == "" && ap.Error != "" {
					tx = "error: " + ap.Error
				}
				return fmt.Sprintf("%s\t%s\t%s %s\t%s\t%s\t%s\t%s", ap.ID, ap.Status, ap.Amount, ap.Asset, ap.Recipient,
					strings.Join(ap.Reasons, "; "), localTime(ap.ExpiresAt), tx)
			})
	}
	statusFlag := stringFlag(&status, "status", "s", "pending", "only approvals in this `status`: pending, approved, denied, expired or all")
	register(&command{
		path:     "approvals",
		args:     "AGENT [--status pending|approved|denied|expired|all]",
		summary:  "list an agent's payments held for the owner's approval (same as approvals list)",
		detail:   "Subcommands: approvals list|approve|deny (see veil help approvals). docs/approvals.md explains the rules.",
		examples: []string{"veil approvals alice", "veil approvals alice --status all --json"},
		flags:    statusFlag,
		run:      list,
	})
	register(&command{
		path:     "approvals list",
		args:     "AGENT [--status pending|approved|denied|expired|all]",
		summary:  "list an agent's payments held for the owner's approval",
		examples: []string{"veil approvals list alice --status approved"},
		flags:    statusFlag,
		run:      list,
	})
	for _, deny := range []bool{false, true} {
		verb := map[bool]string{false: "approve", true: "deny"}[deny]
		var w walletFlags
		register(&command{
			path:    "approvals " + verb,
			args:    "AGENT APPROVAL [wallet flags]",
			summary: verb + " a held payment (needs the owner wallet's fresh signature)",
			detail: `The owner wallet signs "Veil wants you to ` + verb + ` payment <approval> of agent <agent id>."
with Issued At now (valid 10 minutes, once). An approved payment is sent at once; its
transaction (or why it could not be sent) is printed. A payment is decided once: a second
decision is refused (exit status of a conflict).`,
			examples: []string{
				"veil approvals " + verb + " alice 3f2a6c1e-… --keystore ~/.ethereum/keystore/UTC--2026…",
				"veil approvals " + verb + " alice 3f2a6c1e-… --evm-key-file owner.key --json",
				"veil approvals " + verb + " alice 3f2a6c1e-… --wallet 0x2c75… --print-message",
			},
			flags: func(a *app, fs *pflag.FlagSet) { w.add(fs) },
			run: func(a *app, args []string) error {
				return a.withAgent("approvals "+verb, args, 1, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, rest []string) error {
					id := rest[0]
					req, done, err := ownerAction[client.DecideApprovalRequest]{
						what:    "a decision",
						message: func(wallet string) string { return client.ApprovalMessage(id, ag.ID, wallet, deny, time.Now()) },
						presigned: func(signature, msg string) client.DecideApprovalRequest {
							return client.DecideApprovalRequest{Decision: verb, Signature: signature, Message: msg}
						},
						sign: func(s client.Signer) (client.DecideApprovalRequest, error) {
							return client.SignApproval(s, ag.ID, id, deny, time.Now())
						},
					}.request(a, &w)
					if err != nil || done {
						return err
					}
					d, err := c.DecideApproval(ctx, ag.ID, id, req)
					if err != nil {
						return err
					}
					return a.print(d, func() error {
						switch {
						case d.TxHash != "":
							fmt.Fprintf(a.stdout, "Payment %s %s: sent, transaction %s.\n", d.ID, d.Status, d.TxHash)
						case d.Error != "":
							fmt.Fprintf(a.stdout, "Payment %s %s, but it could not be sent: %s\n", d.ID, d.Status, d.Error)
						case d.Status == client.ApprovalApproved:
							fmt.Fprintf(a.stdout, "Payment %s approved; it is sent as soon as its chain answers (veil approvals list %s --status approved).\n", d.ID, ag.Name)
						default:
							fmt.Fprintf(a.stdout, "Payment %s %s: nothing was paid.\n", d.ID, d.Status)
						}
						return nil
					})
				})
			},
		})
	}
}
