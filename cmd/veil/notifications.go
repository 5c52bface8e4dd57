package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"time"

	"github.com/veilhq/veil/client"
)

func init() {
	var f struct {
		follow, unread, markRead bool
		interval                 time.Duration
	}
	notifications := &command{
		path:    "notifications",
		args:    "AGENT [--follow] [--unread] [--mark-read]",
		summary: "print an agent's notifications; --follow prints new ones as they arrive",
		detail: `Notifications are printed oldest first. --follow prints them, then each new one as the
server pushes it (Server-Sent Events), until Ctrl-C (exit 0); a dropped stream is reopened after
--interval without missing any. With --json the list is the server's {notifications,
unreadCount}; with --follow it is one JSON notification per line.
Subcommands: notifications read AGENT (mark all read), notifications clear AGENT (delete all).`,
		examples: []string{
			"veil notifications alice",
			"veil notifications alice --unread --mark-read",
			"veil notifications alice --follow --interval 10s",
			"veil notifications alice --follow --json | jq -r 'select(.type==\"payment_received\") | .body'",
		},
		flags: func(a *app, fs *pflag.FlagSet) {
			fs.BoolVarP(&f.follow, "follow", "f", false, "keep following and print new notifications as they arrive")
			fs.BoolVarP(&f.unread, "unread", "u", false, "only unread notifications")
			fs.BoolVar(&f.markRead, "mark-read", false, "mark all read after printing")
			fs.DurationVarP(&f.interval, "interval", "i", 5*time.Second, "with --follow: wait this `interval` before reopening a dropped stream")
		},
		run: func(a *app, args []string) error {
			if f.interval < 100*time.Millisecond {
				return usagef("--interval must be at least 100ms")
			}
			var n *notifier
			err := a.withOnlyAgent("notifications", args, "notifications takes one AGENT", func(_ context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
				n = &notifier{app: a, c: c, agent: ag, unread: f.unread, markRead: f.markRead}
				return nil
			})
			if err != nil {
				return err
			}
			if !f.follow {
				return n.once()
			}
			return n.follow(f.interval)
		},
	}
	register(notifications)
	list := *notifications
	list.path, list.summary = "notifications list", "same as notifications AGENT (for an agent named read or clear)"
	register(&list)
	// read and clear act on the whole inbox; their JSON is the inbox's new
	// state, and people get no output.
	for _, op := range []struct {
		verb, summary string
		do            func(ctx context.Context, c *client.Client, agentID string) error
		json          map[string]any
	}{
		{"read", "mark all of an agent's notifications read", func(ctx context.Context, c *client.Client, id string) error {
			return c.MarkNotificationsRead(ctx, id)
		}, map[string]any{"unreadCount": 0}},
		{"clear", "delete all of an agent's notifications, for good", func(ctx context.Context, c *client.Client, id string) error {
			return c.DeleteNotifications(ctx, id)
		}, map[string]any{"deleted": true}},
	} {
		path := "notifications " + op.verb
		register(&command{
			path:     path,
			args:     "AGENT",
			summary:  op.summary,
			examples: []string{"veil " + path + " alice"},
			run: func(a *app, args []string) error {
				return a.withAgent(path, args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
					if err := op.do(ctx, c, ag.ID); err != nil {
						return err
					}
					return a.print(op.json, func() error { return nil })
				})
			},
		})
	}
}

type notifier struct {
	app              *app
	c                *client.Client
	agent            *client.AgentInfo
	unread, markRead bool
	seen             int64 // highest id printed
}

// fetch reads the inbox under ctx (the follow loop's, so an interrupt ends
// a request in flight), bounded by the request timeout.
func (n *notifier) fetch(ctx context.Context) (*client.Inbox, error) {
	ctx, cancel := n.app.limit(ctx, defaultTimeout)
	defer cancel()
	return n.c.Notifications(ctx, n.agent.ID)
}

// fresh returns the inbox's notifications not printed yet, oldest first.
func (n *notifier) fresh(in *client.Inbox) []client.Notification {
	var out []client.Notification
	for i := len(in.Notifications) - 1; i >= 0; i-- {
		nt := in.Notifications[i]
		if nt.ID <= n.seen || n.unread && nt.Read {
			continue
		}
		out = append(out, nt)
	}
	return out
}

func (n *notifier) once() error {
	in, err := n.fetch(n.app.ctx)
	if err != nil {
		return err
	}
	list := n.fresh(in)
	if n.app.g.json {
		out := client.Inbox{Notifications: in.Notifications, UnreadCount: in.UnreadCount}
		if n.unread {
			out.Notifications = nil
			for i := len(list) - 1; i >= 0; i-- {
				out.Notifications = append(out.Notifications, list[i])
			}
		}
		out.Notifications = nonNil(out.Notifications)
		if err := n.app.printJSON(out); err != nil {
			return err
		}
	} else {
		if len(list) == 0 {
			fmt.Fprintf(n.app.stderr, "No %snotifications for %s.\n", map[bool]string{true: "unread "}[n.unread], n.agent.FullName())
		}
		for _, nt := range list {
			printNotification(n.app.stdout, nt)
		}
		if in.UnreadCount > 0 && !n.markRead {
			fmt.Fprintf(n.app.stderr, "%d unread (mark them read with --mark-read or veil notifications read %s)\n", in.UnreadCount, n.agent.Name)
		}
	}
	return n.mark(len(list) > 0)
}

func (n *notifier) mark(any bool) error {
	if !n.markRead || !any {
		return nil
	}
	ctx, cancel := n.app.reqCtx(defaultTimeout)
	defer cancel()
	return n.c.MarkNotificationsRead(ctx, n.agent.ID)
}

// follow prints the inbox, then each new notification as the server
// pushes it (GET /agent/:id/notifications/stream), until interrupted. A
// dropped stream or a server error is reported once and the stream is
// reopened after every (with the last id seen: nothing is missed); auth
// and not-found end it.
func (n *notifier) follow(every time.Duration) error {
	a := n.app
	enc := json.NewEncoder(a.stdout)
	if !a.g.json {
		fmt.Fprintf(a.stderr, "Following notifications of %s (Ctrl-C to stop).\n", n.agent.FullName())
	}
	failing := false
	err := n.c.FollowNotifications(a.ctx, n.agent.ID, client.FollowOptions{Reconnect: every, OnError: func(err error) {
		if !failing {
			fmt.Fprintf(a.stderr, "veil: stream: %s (will keep trying)\n", errText(err))
		}
		failing = true
	}}, func(nt client.Notification) error {
		if failing {
			fmt.Fprintln(a.stderr, "veil: following again")
			failing = false
		}
		if n.unread && nt.Read {
			return nil
		}
		if a.g.json {
			if err := enc.Encode(nt); err != nil {
				return err
			}
		} else {
			printNotification(a.stdout, nt)
		}
		if err := n.mark(true); err != nil && a.ctx.Err() == nil {
			fmt.Fprintf(a.stderr, "veil: marking read: %s\n", errText(err))
		}
		return nil
	})
	if a.ctx.Err() != nil {
		return nil
	}
	return err
}

func printNotification(w io.Writer, nt client.Notification) {
	mark := " "
	if !nt.Read {
		mark = "•"
	}
	fmt.Fprintf(w, "%s %s  %-17s %s\n", mark, localTime(nt.CreatedAt), nt.Type, nt.Title)
	if nt.Body != "" && nt.Body != nt.Title {
		fmt.Fprintf(w, "    %s\n", nt.Body)
	}
}
