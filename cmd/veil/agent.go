package main

import (
	"cmp"
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"strings"
	"time"

	"github.com/veilhq/veil/client"
)

// agentArg returns the AGENT argument, or the default agent (VEIL_AGENT,
// then the config file's "agent"), and the remaining arguments.
func (a *app) agentArg(args []string, cmd string) (string, []string, error) {
	if len(args) > 0 {
		return args[0], args[1:], nil
	}
	if d := firstNonEmpty(a.getenv("VEIL_AGENT"), a.cfg.Agent); d != "" {
		return d, nil, nil
	}
	return "", nil, usagef("%s needs an AGENT (name, id or owner wallet), or set VEIL_AGENT / `veil config set agent NAME`", cmd)
}

// resolve finds the agent a reference names.
func (a *app) resolve(ctx context.Context, ref string) (*client.AgentInfo, error) {
	c, err := a.api()
	if err != nil {
		return nil, err
	}
	info, err := c.ResolveAgent(ctx, ref)
	if client.IsNotFound(err) {
		return nil, &client.Error{StatusCode: 404, Message: fmt.Sprintf("no agent %q in this account (veil agent list shows yours)", ref)}
	}
	return info, err
}

func init() {
	var create struct {
		chain string
		w     walletFlags
	}
	register(&command{
		path:    "agent create",
		args:    "NAME --chain CHAIN [wallet flags]",
		summary: "create an agent owned by your wallet",
		detail: `NAME is 3 to 32 lowercase letters, digits and hyphens (without .veil). CHAIN is horizen,
ethereum, polygon, base, stellar, solana, or all. The wallet signs the create message of
docs/signatures.md: an EVM key (keystore file or hex), a Stellar seed, or a Solana keypair.
To sign in a browser wallet instead: print the message with --wallet ADDRESS --print-message,
sign it there within 10 minutes, and pass --wallet, --signature and --message-file.`,
		examples: []string{
			"veil agent create alice --chain base --keystore ~/.ethereum/keystore/UTC--2026…",
			"VEIL_EVM_KEY=0x4c08… veil agent create alice --chain all",
			"veil agent create bob --chain stellar --stellar-secret-file ~/.stellar/bob.seed",
			"veil agent create carol --chain solana --solana-keypair ~/.config/solana/id.json --json",
			"veil agent create dave --chain base --wallet 0x2c75… --print-message > msg.txt",
			"veil agent create dave --chain base --wallet 0x2c75… --signature 0xd763… --message-file msg.txt",
		},
		flags: func(a *app, fs *pflag.FlagSet) {
			fs.StringVarP(&create.chain, "chain", "C", "", "`chain` to deploy on: horizen, ethereum, polygon, base, stellar, solana or all (required)")
			create.w.add(fs)
		},
		run: func(a *app, args []string) error {
			if len(args) != 1 {
				return usagef("agent create needs one NAME")
			}
			name := strings.TrimSuffix(args[0], client.NameSuffix)
			if !client.ValidName(name) {
				return usagef("invalid name %q: 3 to 32 lowercase letters, digits and hyphens, without .veil", args[0])
			}
			if create.chain == "" {
				return usagef("agent create needs --chain (horizen, ethereum, polygon, base, stellar, solana or all)")
			}
			w := &create.w
			if w.printMessage {
				if w.wallet == "" {
					return usagef("--print-message needs --wallet ADDRESS")
				}
				a.printSignable(client.CreateMessage(name, create.chain, w.wallet, time.Now()))
				return nil
			}
			var req client.CreateAgentRequest
			if w.presigned() {
				if w.wallet == "" {
					return usagef("--signature needs --wallet")
				}
				msg, err := w.signedMessage()
				if err != nil {
					return err
				}
				req = client.CreateAgentRequest{Name: name, Chain: create.chain, Wallet: w.wallet, Signature: w.signature, Message: msg}
			} else {
				s, err := w.signer(a)
				if err != nil {
					return err
				}
				if req, err = client.SignCreate(s, name, create.chain, time.Now()); err != nil {
					return usagef("%s", strings.TrimPrefix(err.Error(), "veil: "))
				}
			}
			return a.call(func(ctx context.Context, c *client.Client) error {
				ag, err := c.CreateAgent(ctx, req)
				if err != nil {
					return err
				}
				return a.print(ag, func() error {
					fmt.Fprintf(a.stdout, "Created %s%s (%s)\n", ag.Name, client.NameSuffix, ag.ID)
					tw := a.table()
					fmt.Fprintf(tw, "  chain\t%s\n  address\t%s\n  meta-address\t%s\n", ag.Chain, ag.Address, ag.MetaAddress)
					return tw.Flush()
				})
			})
		},
	})

	register(&command{
		path:     "agent list",
		summary:  "list the agents of your account",
		examples: []string{"veil agent list", "veil agent list --json | jq -r '.[].id'"},
		run: func(a *app, args []string) error {
			if err := noArgs("agent list", args); err != nil {
				return err
			}
			return a.call(func(ctx context.Context, c *client.Client) error {
				list, err := c.ListAgents(ctx)
				if err != nil {
					return err
				}
				return printList(a, list, "No agents yet: create one with veil agent create NAME --chain CHAIN.",
					"NAME\tID\tCHAINS\tADDRESS", func(ag client.AgentInfo) string {
						first := ""
						if len(ag.Chains) > 0 {
							first = ag.Addresses[ag.Chains[0]]
						}
						return fmt.Sprintf("%s\t%s\t%s\t%s", ag.FullName(), ag.ID, strings.Join(ag.Chains, ","), first)
					})
			})
		},
	})

	register(&command{
		path:     "agent show",
		args:     "AGENT",
		summary:  "show an agent's id, chains, addresses and meta-addresses",
		examples: []string{"veil agent show alice", "veil agent show 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "veil agent show alice --json"},
		run: func(a *app, args []string) error {
			return a.withAgent("agent show", args, 0, func(_ context.Context, _ *client.Client, ag *client.AgentInfo, _ []string) error {
				return a.print(ag, func() error {
					fmt.Fprintf(a.stdout, "%s\n  id      %s\n", ag.FullName(), ag.ID)
					tw := a.table()
					for _, ch := range ag.Chains {
						fmt.Fprintf(tw, "  %s\taddress\t%s\n", ch, ag.Addresses[ch])
						fmt.Fprintf(tw, "  \tmeta\t%s\n", ag.MetaAddresses[ch])
					}
					return tw.Flush()
				})
			})
		},
	})

	var statusChain string
	register(&command{
		path:    "agent status",
		args:    "AGENT [--chain CHAIN]",
		summary: "show an agent's balances, tokens and pending invoices on each of its chains",
		detail: `Balances are cut (never rounded up) to 6 decimals, with their symbol. With --json the output
is an array with the API's AgentStatus of each chain (one chain with --chain: that object).
A chain whose node does not answer is reported and the others are still shown (exit 6 if any
failed).`,
		examples: []string{"veil agent status alice", "veil agent status alice --chain base --json | jq -r .balance", "veil agent status alice --json | jq -r '.[] | .chain + \" \" + .balance'"},
		flags:    stringFlag(&statusChain, "chain", "C", "", "only this `chain`"),
		run: func(a *app, args []string) error {
			return a.withAgent("agent status", args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
				if statusChain != "" {
					st, err := c.AgentStatusOn(ctx, ag.ID, statusChain)
					if err != nil {
						return err
					}
					return a.print(st, func() error { return a.printStatus(ag, []*client.AgentStatus{st}, nil) })
				}
				var list []*client.AgentStatus
				failed := map[string]error{}
				var firstErr error
				for _, ch := range ag.Chains {
					st, err := c.AgentStatusOn(ctx, ag.ID, ch)
					if err != nil {
						if code := exitCode(err); code != exitUnavailable {
							return err
						}
						failed[ch] = err
						firstErr = cmp.Or(firstErr, err)
						continue
					}
					list = append(list, st)
				}
				if a.g.json {
					if err := a.printJSON(nonNil(list)); err != nil {
						return err
					}
					return firstErr
				}
				if err := a.printStatus(ag, list, failed); err != nil {
					return err
				}
				if firstErr != nil {
					return errQuietCode{exitUnavailable}
				}
				return nil
			})
		},
	})

	var export walletFlags
	register(&command{
		path:    "agent export",
		args:    "AGENT [wallet flags]",
		summary: "export an agent's private key (needs the owner wallet's fresh signature)",
		detail: `The owner wallet signs the export message of docs/signatures.md (valid 10 minutes, once).
The key alone is printed on standard output (JSON {"secret"} with --json): redirect it to a
file only you can read.`,
		examples: []string{
			"veil agent export alice --keystore ~/.ethereum/keystore/UTC--2026… > alice.key",
			"veil agent export bob --stellar-secret-file ~/.stellar/bob.seed --json",
			"veil agent export alice --wallet 0x2c75… --print-message",
		},
		flags: func(a *app, fs *pflag.FlagSet) { export.add(fs) },
		run: func(a *app, args []string) error {
			return a.withAgent("agent export", args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
				req, done, err := ownerAction[client.ExportRequest]{
					what:    "export",
					message: func(wallet string) string { return client.ExportMessage(ag.ID, wallet, time.Now()) },
					presigned: func(signature, msg string) client.ExportRequest {
						return client.ExportRequest{Signature: signature, Message: msg}
					},
					sign: func(s client.Signer) (client.ExportRequest, error) { return client.SignExport(s, ag.ID, time.Now()) },
				}.request(a, &export)
				if err != nil || done {
					return err
				}
				key, err := c.ExportKey(ctx, ag.ID, req)
				if err != nil {
					return err
				}
				return a.print(key, func() error {
					if isTerminal(a.stdout) {
						fmt.Fprintf(a.stderr, "Private key of %s (anyone who has it controls the agent's funds):\n", ag.FullName())
					}
					fmt.Fprintln(a.stdout, key.Secret)
					return nil
				})
			})
		},
	})
}
