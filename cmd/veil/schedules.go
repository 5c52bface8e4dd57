package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/veilhq/veil/client"
)

func init() {
	list := func(a *app, args []string) error {
		return a.withAgent("schedules", args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
			l, err := c.ListSchedules(ctx, ag.ID)
			if err != nil {
				return err
			}
			if a.g.json {
				if l == nil {
					l = []client.Schedule{}
				}
				return a.printJSON(l)
			}
			if len(l) == 0 {
				fmt.Fprintf(a.stderr, "No schedules for %s: ask it in chat, e.g. \"every week send 5 ZEN to carol\".\n", ag.FullName())
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tEVERY\tAMOUNT\tTO\tNEXT RUN")
			for _, s := range l {
				next := "-"
				if s.Status != client.ScheduleCancelled {
					next = s.NextRun.Local().Format(time.DateTime)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t%s\n", s.ID, s.Status, s.Interval, s.Amount, s.Asset, s.Recipient, next)
			}
			return tw.Flush()
		})
	}
	register(&command{
		path:     "schedules",
		args:     "AGENT",
		summary:  "list an agent's recurring payments (same as schedules list)",
		detail:   "Subcommands: schedules list|pause|resume|cancel (see veil help schedules).",
		examples: []string{"veil schedules alice"},
		run:      list,
	})
	register(&command{
		path:     "schedules list",
		args:     "AGENT",
		summary:  "list an agent's recurring payments",
		examples: []string{"veil schedules list alice --json"},
		run:      list,
	})
	for _, action := range []string{client.SchedulePause, client.ScheduleResume, client.ScheduleCancel} {
		register(&command{
			path:     "schedules " + action,
			args:     "AGENT SCHEDULE",
			summary:  action + " a recurring payment",
			examples: []string{"veil schedules " + action + " alice 3f2a…"},
			run: func(a *app, args []string) error {
				return a.withAgent("schedules "+action, args, 1, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, rest []string) error {
					s, err := c.ScheduleAction(ctx, ag.ID, rest[0], action)
					if err != nil {
						return err
					}
					if a.g.json {
						return a.printJSON(s)
					}
					fmt.Fprintf(a.stdout, "Schedule %s is %s.\n", s.ID, s.Status)
					return nil
				})
			},
		})
	}
}
