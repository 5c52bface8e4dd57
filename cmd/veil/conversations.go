package main

import (
	"context"
	"fmt"

	"github.com/veilhq/veil/client"
)

func init() {
	list := func(a *app, args []string) error {
		return agentList(a, "conversations", args,
			func(ctx context.Context, c *client.Client, id string) ([]client.Conversation, error) {
				return c.ListConversations(ctx, id)
			},
			func(ag *client.AgentInfo) string {
				return fmt.Sprintf("No conversations with %s yet: start one with veil chat %s.", ag.FullName(), ag.Name)
			},
			"ID\tUPDATED\tTITLE", func(cv client.Conversation) string {
				title := cv.Title
				if title == "" {
					title = "(empty)"
				}
				return fmt.Sprintf("%s\t%s\t%s", cv.ID, localTime(cv.UpdatedAt), title)
			})
	}
	register(&command{
		path:    "conversations",
		args:    "AGENT",
		summary: "list an agent's conversations (same as conversations list)",
		detail:  "Subcommands: conversations list|show|new|delete (see veil help conversations).",
		run:     list,
	})
	register(&command{
		path:     "conversations list",
		args:     "AGENT",
		summary:  "list an agent's conversations, most recently updated first",
		examples: []string{"veil conversations alice", "veil conversations list alice --json"},
		run:      list,
	})
	register(&command{
		path:     "conversations show",
		args:     "AGENT CONVERSATION",
		summary:  "print a conversation's messages, tool calls included",
		examples: []string{"veil conversations show alice 5f0c…", "veil conversations show alice 5f0c… --json"},
		run: func(a *app, args []string) error {
			return a.withAgent("conversations show", args, 1, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, rest []string) error {
				conv := rest[0]
				if conv == "last" {
					id, err := lastConversation(ctx, c, ag.ID)
					if err != nil {
						return err
					}
					conv = id
				}
				msgs, err := c.ListMessages(ctx, ag.ID, conv)
				if err != nil {
					return err
				}
				return a.print(nonNil(msgs), func() error {
					a.printMessages(a.stdout, ag, msgs)
					return nil
				})
			})
		},
	})
	register(&command{
		path:     "conversations new",
		args:     "AGENT",
		summary:  "create an empty conversation and print its id",
		examples: []string{`conv=$(veil conversations new alice) && veil chat alice -c "$conv" -m hello`},
		run: func(a *app, args []string) error {
			return a.withAgent("conversations new", args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
				cv, err := c.CreateConversation(ctx, ag.ID)
				if err != nil {
					return err
				}
				return a.print(cv, func() error {
					fmt.Fprintln(a.stdout, cv.ID)
					return nil
				})
			})
		},
	})
	register(&command{
		path:     "conversations delete",
		args:     "AGENT CONVERSATION",
		summary:  "delete a conversation and all its messages, for good",
		examples: []string{"veil conversations delete alice 5f0c…"},
		run: func(a *app, args []string) error {
			return a.withAgent("conversations delete", args, 1, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, rest []string) error {
				if err := c.DeleteConversation(ctx, ag.ID, rest[0]); err != nil {
					return err
				}
				return a.print(map[string]any{"deleted": rest[0]}, func() error {
					fmt.Fprintf(a.stderr, "Deleted conversation %s.\n", rest[0])
					return nil
				})
			})
		},
	})
}
