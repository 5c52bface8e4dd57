package main

import (
	"context"
	"fmt"

	"github.com/veilhq/veil/client"
)

func init() {
	list := func(a *app, args []string) error {
		return agentList(a, "schedules", args,
			func(ctx context.Context, c *client.Client, id string) ([]client.Schedule, error) {
				return c.ListSchedules(ctx, id)
			},
			func(ag *client.AgentInfo) string {
				return fmt.Sprintf("No schedules for %s: ask it in chat, e.g. \"every week send 5 ZEN to carol\".", ag.FullName())
			},
			"ID\tSTATUS\tEVERY\tAMOUNT\tTO\tNEXT RUN", func(s client.Schedule) string {
				next := "-"
				if s.Status != client.ScheduleCancelled {
					next = localTime(s.NextRun)
				}
				return fmt.Sprintf("%s\t%s\t%s\t%s %s\t%s\t%s", s.ID, s.Status, s.Interval, s.Amount, s.Asset, s.Recipient, next)
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
					return a.print(s, func() error {
						fmt.Fprintf(a.stdout, "Schedule %s is %s.\n", s.ID, s.Status)
						return nil
					})
				})
			},
		})
	}
}
