package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/veilhq/veil/client"
)

func init() {
	register(&command{
		path:    "mcp",
		args:    "AGENT",
		summary: "serve an agent's MCP server over stdio, for desktop MCP clients",
		detail: `Speaks the Model Context Protocol on standard input and output and forwards every
request to the agent's MCP endpoint on the Veil server (POST /agent/:id/mcp) with the API key:
the same tools, schemas, resources, policy and approvals (docs/mcp.md). Nothing else is
written to standard output; errors go to standard error. Runs until standard input closes.`,
		examples: []string{
			"veil mcp alice",
			`{"mcpServers":{"alice":{"command":"veil","args":["mcp","alice"],"env":{"VEIL_URL":"https://veil.example.com","VEIL_API_KEY":"veil_live_…"}}}}`,
		},
		run: func(a *app, args []string) error {
			var endpoint string
			err := a.withOnlyAgent("mcp", args, "mcp takes one AGENT", func(_ context.Context, _ *client.Client, ag *client.AgentInfo, _ []string) error {
				endpoint = strings.TrimRight(a.g.url, "/") + "/agent/" + ag.ID + "/mcp"
				return nil
			})
			if err != nil {
				return err
			}
			return a.serveMCP(a.ctx, endpoint)
		},
	})
}

// keyTransport adds the API key to every request to the server.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	r.Header.Set("User-Agent", "veil-cli/"+version)
	return http.DefaultTransport.RoundTrip(r)
}

// serveMCP is a stdio MCP server whose tools and resources are the
// remote agent's: each call and read is forwarded as is (arguments and
// _meta, so an idempotency key reaches the server), and the remote's
// answer, a tool's isError result included, comes back unchanged.
func (a *app) serveMCP(ctx context.Context, endpoint string) error {
	remote, err := mcp.NewClient(&mcp.Implementation{Name: "veil-cli", Version: version}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             endpoint,
		HTTPClient:           &http.Client{Transport: keyTransport{a.g.apiKey}},
		DisableStandaloneSSE: true, // the server is stateless: no stream to open
	}, nil)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	defer remote.Close()
	hello := remote.InitializeResult()
	local := mcp.NewServer(hello.ServerInfo, &mcp.ServerOptions{Instructions: hello.Instructions})
	for t, err := range remote.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the agent's tools: %w", err)
		}
		local.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return remote.CallTool(ctx, &mcp.CallToolParams{Meta: req.Params.Meta, Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	for r, err := range remote.Resources(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the agent's resources: %w", err)
		}
		local.AddResource(r, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return remote.ReadResource(ctx, &mcp.ReadResourceParams{URI: req.Params.URI})
		})
	}
	err = local.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
	if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "EOF") {
		return fmt.Errorf("mcp over stdio: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
