package main

import (
	"context"
	"fmt"

	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/buildinfo"
)

func init() {
	register(&command{
		path:     "health",
		summary:  "check that the server answers",
		examples: []string{"veil health --url http://127.0.0.1:8080 && echo up"},
		run: func(a *app, args []string) error {
			return a.callWithoutKey(func(ctx context.Context, c *client.Client) error {
				h, err := c.Health(ctx)
				if err != nil {
					return err
				}
				return a.print(h, func() error {
					fmt.Fprintf(a.stdout, "%s: %s\n", c.BaseURL(), h.Status)
					return nil
				})
			})
		},
	})
	register(&command{
		path:    "version",
		summary: "print the version",
		run: func(a *app, args []string) error {
			bi := buildinfo.Read(version)
			return a.print(struct {
				buildinfo.Info
				Client string `json:"client"`
			}{bi, client.Version}, func() error {
				fmt.Fprintln(a.stdout, "veil", bi)
				return nil
			})
		},
	})
	register(&command{
		path:     "tee info",
		summary:  "show the server's enclave provider, measurement and attestation key",
		examples: []string{"veil tee info --json"},
		run: func(a *app, args []string) error {
			return a.call(func(ctx context.Context, c *client.Client) error {
				info, err := c.TEEInfo(ctx)
				if err != nil {
					return err
				}
				return a.print(info, func() error {
					tw := a.table()
					fmt.Fprintf(tw, "provider\t%s\nmeasurement\t%s\ninstance\t%s\nattestation key\t%s %s\nnote\t%s\n",
						info.Provider, info.Measurement, info.InstanceID, info.AttestationKeyType, info.AttestationPublicKey, info.Note)
					return tw.Flush()
				})
			})
		},
	})
	var nonce string
	register(&command{
		path:     "tee attest",
		args:     "AGENT [--nonce TEXT]",
		summary:  "get the enclave's attestation of an agent's keys (docs/enclave.md says how to verify it)",
		examples: []string{`veil tee attest alice --nonce "$(openssl rand -hex 16)" --json > alice-attestation.json`},
		flags:    stringFlag(&nonce, "nonce", "n", "", "your fresh nonce (at most 128 characters)"),
		run: func(a *app, args []string) error {
			return a.withAgent("tee attest", args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
				att, err := c.Attest(ctx, ag.ID, nonce)
				if err != nil {
					return err
				}
				return a.print(att, func() error {
					tw := a.table()
					fmt.Fprintf(tw, "agent\t%s (%s)\nprovider\t%s\nquote type\t%s\nreport data\t%s\nnonce\t%s\nissued at\t%s\n",
						ag.FullName(), att.AgentID, att.Provider, att.QuoteType, att.ReportData, att.Nonce, att.IssuedAt)
					for _, ch := range sortedKeys(att.PublicKeys) {
						fmt.Fprintf(tw, "%s\t%s\n", ch, att.PublicKeys[ch].Address)
					}
					fmt.Fprintln(tw, "(use --json to keep the full statement and quote for verification)")
					return tw.Flush()
				})
			})
		},
	})
}
