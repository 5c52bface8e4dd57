package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/tools"
)

// MetaIdempotencyKey is the key in a tools/call request's _meta whose
// string value makes the call idempotent (docs/mcp.md): a retry with the
// same key, tool and arguments never pays twice.
const MetaIdempotencyKey = "idempotencyKey"

// notificationsLimit bounds the notifications resource to the most recent.
const notificationsLimit = 50

// mcpRoutes mounts every agent's MCP server (streamable HTTP, stateless:
// each POST is answered by itself, so any instance of a cluster serves it
// and nothing is kept between requests). It sits behind the API key like
// every agent endpoint.
func (s *Server) mcpRoutes(r chi.Router) {
	r.Method(http.MethodPost, "/agent/{id}/mcp", handler(s.serveMCP))
}

func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) error {
	// Another account's agent is a 404 in the spec's format before any
	// MCP message is read, like every agent endpoint.
	_, rec, err := s.ownAgent(r)
	if err != nil {
		return err
	}
	// A JSON-RPC batch is as many calls as it holds: each one after the
	// first spends one more token of the key's rate limit, and a batch
	// over MCPMaxBatch is refused whole (docs/mcp.md, "Limits").
	body, err := io.ReadAll(r.Body)
	if err != nil {
		limit, _ := bodyTimeout(r)
		if berr := bodyError(err, limit); berr != nil {
			return berr
		}
		return Errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	if n := batchLen(body); n > MCPMaxBatch {
		return Errorf(http.StatusBadRequest, "this JSON-RPC batch holds %d messages; an MCP request may hold at most %d: send fewer at once", n, MCPMaxBatch)
	} else if n > 1 && !s.spend(w, r, n-1) {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// A tool call may wait for a chain, as a chat does.
	extendWrite(w, s.bounds.ChatWriteTimeout)
	srv := s.mcpServer(accountID(r), rec)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The SDK refuses loopback requests with a foreign Host (DNS
		// rebinding); a browser page cannot send the bearer API key this
		// endpoint requires, and veild often runs behind a local proxy.
		DisableLocalhostProtection: true,
	})
	ew := &mcpErrorWriter{ResponseWriter: w}
	h.ServeHTTP(ew, r)
	ew.finish()
	return nil
}

// MCPMaxBatch is the most messages one JSON-RPC batch sent to an MCP
// endpoint may hold (docs/mcp.md).
const MCPMaxBatch = 20

// batchLen is the number of messages of a JSON-RPC batch (a JSON array);
// 0 for a single message or a body that is not one (the SDK answers it).
func batchLen(body []byte) int {
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 || t[0] != '[' {
		return 0
	}
	var msgs []json.RawMessage
	if json.Unmarshal(t, &msgs) != nil {
		return 0
	}
	return len(msgs)
}

// mcpErrorWriter turns the SDK's plain-text HTTP errors (http.Error: a
// wrong Accept header, a GET, a malformed message) into the API's error
// format {message, statusCode}. JSON answers (JSON-RPC results and
// errors) pass through unchanged.
type mcpErrorWriter struct {
	http.ResponseWriter
	status int // a plain-text error is being held
	buf    bytes.Buffer
}

func (e *mcpErrorWriter) WriteHeader(code int) {
	if code >= 400 && !strings.HasPrefix(e.Header().Get("Content-Type"), "application/json") {
		e.status = code
		return
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *mcpErrorWriter) Write(b []byte) (int, error) {
	if e.status != 0 {
		if e.buf.Len() < 1024 {
			e.buf.Write(b)
		}
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}

func (e *mcpErrorWriter) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok && e.status == 0 {
		f.Flush()
	}
}

func (e *mcpErrorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// finish writes a held error in the API's format.
func (e *mcpErrorWriter) finish() {
	if e.status == 0 {
		return
	}
	msg := strings.TrimSpace(e.buf.String())
	if msg == "" {
		msg = http.StatusText(e.status)
	}
	e.Header().Del("X-Content-Type-Options")
	writeError(e.ResponseWriter, e.status, "MCP: "+truncate(msg, 200))
}

// mcpServer is one agent's MCP server: the agent's tools with their
// schemas (agent/tools, the chat's own definitions) and three resources.
func (s *Server) mcpServer(account string, rec *agent.Record) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "veil-agent-" + rec.Name, Version: "1"}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("Tools of the Veil agent %s.veil. Payments run under the owner's spending policy and approval rules.", rec.Name),
		Logger:       s.log,
	})
	for _, t := range tools.All() {
		tl := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.Parameters}
		if t.ReadOnly {
			tl.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		srv.AddTool(tl, s.mcpTool(account, rec.ID, t.Name))
	}
	s.addReadTools(srv, account, rec.ID) // mcp_lists.go
	base := "veil://agent/" + rec.ID + "/"
	resources := []struct {
		name, desc string
		read       func(ctx context.Context) (any, error)
	}{
		{"info", "The agent's id, name, chains, addresses and meta-addresses (GET /agent/:id).", func(ctx context.Context) (any, error) {
			r, err := ask(ctx, s, rec.ID, &agent.Get{AccountID: account})
			if err != nil {
				return nil, err
			}
			return infoOf(r), nil
		}},
		{"balances", "The agent's balances on every deployed chain, with received stealth payments not yet withdrawn (the get_balance tool).", func(ctx context.Context) (any, error) {
			tc, err := ask(ctx, s, rec.ID, &agent.CallTool{AccountID: account, Tool: "get_balance", Arguments: "{}"})
			if err != nil {
				return nil, err
			}
			if tc.Status != "success" {
				return nil, fmt.Errorf("balances: %s", tc.Detail)
			}
			return json.RawMessage(tc.Detail), nil
		}},
		{"notifications", fmt.Sprintf("The agent's %d most recent notifications, newest first, with the unread count.", notificationsLimit), func(ctx context.Context) (any, error) {
			in, err := ask(ctx, s, rec.ID, &agent.ListNotifications{AccountID: account})
			if err != nil {
				return nil, err
			}
			if len(in.Notifications) > notificationsLimit {
				cp := *in
				cp.Notifications = cp.Notifications[:notificationsLimit]
				in = &cp
			}
			return in, nil
		}},
	}
	for _, res := range resources {
		uri := base + res.name
		srv.AddResource(&mcp.Resource{URI: uri, Name: res.name, Description: res.desc, MIMEType: "application/json"},
			func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				v, err := res.read(ctx)
				if err != nil {
					return nil, s.mcpError(ctx, err)
				}
				raw, err := json.Marshal(v)
				if err != nil {
					return nil, s.mcpError(ctx, err)
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(raw)}}}, nil
			})
	}
	return srv
}

// mcpTool runs a tools/call through the agent actor (agent.CallTool): the
// tool's validation, the owner's approval rules and the enclave's policy
// apply as in chat. A tool's failure (bad arguments, a refused or held
// payment) is a result with isError and the tool's detail, which the
// model can read; only a failure to reach the agent is a protocol error.
func (s *Server) mcpTool(account, agentID, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		key := ""
		if v, ok := req.Params.Meta[MetaIdempotencyKey]; ok {
			k, isString := v.(string)
			if !isString {
				return nil, errors.New("_meta." + MetaIdempotencyKey + " must be a string")
			}
			if len(k) > agent.MaxToolKeyLen {
				return nil, fmt.Errorf("_meta.%s is too long: at most %d characters", MetaIdempotencyKey, agent.MaxToolKeyLen)
			}
			key = k
		}
		tc, err := ask(ctx, s, agentID, &agent.CallTool{
			AccountID: account, Tool: name, Arguments: string(req.Params.Arguments), IdempotencyKey: key,
		})
		if err != nil {
			return nil, s.mcpError(ctx, err)
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tc.Detail}}, IsError: tc.Status != "success"}
		// A JSON object result is also the structured content, for
		// clients that read it rather than parse the text.
		var obj map[string]any
		if json.Unmarshal([]byte(tc.Detail), &obj) == nil && obj != nil {
			res.StructuredContent = json.RawMessage(tc.Detail)
		}
		return res, nil
	}
}

// mcpError is what an MCP client sees of a failure: the API's user-facing
// message (classify), never an internal detail, which is logged.
func (s *Server) mcpError(ctx context.Context, err error) error {
	status, msg := classify(err)
	if status >= 500 {
		loggerFrom(ctx).Error("mcp request failed", slog.Int("status", status), slog.Any("err", err))
	}
	return errors.New(msg)
}
