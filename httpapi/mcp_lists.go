package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/veilhq/veil/actors/agent"
)

// The MCP server's read tools over the payment records (docs/mcp.md,
// "Read tools"): list_payments and get_payment answer what GET
// /agent/:id/payments[/:paymentId] answers, list_received_payments what
// GET /agent/:id/payments/received answers. They read; nothing moves, so
// no money gate, approval or idempotency key applies.

// paymentsArgs are list_payments's arguments: the HTTP list's query.
type paymentsArgs struct {
	Status string `json:"status,omitempty"`
	Chain  string `json:"chain,omitempty"`
	Since  string `json:"since,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

var listPaymentsSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "status": {"type": "string", "enum": ["pending", "broadcast", "confirmed", "failed", "refused"], "description": "only payments in this status (pending and broadcast: on their way)"},
    "chain": {"type": "string", "enum": ["horizen", "ethereum", "polygon", "base", "stellar", "solana"]},
    "since": {"type": "string", "description": "only payments made at or after this time: RFC 3339 or a date (YYYY-MM-DD)"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "page size (default 50)"},
    "cursor": {"type": "string", "description": "nextCursor of the previous page"}
  },
  "additionalProperties": false
}`)

var listReceivedSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "status": {"type": "string", "enum": ["held", "withdrawn"], "description": "held: some of the payment is still at its one-time address; withdrawn: none is"},
    "chain": {"type": "string", "enum": ["horizen", "ethereum", "polygon", "base", "stellar", "solana"]},
    "since": {"type": "string", "description": "only payments received at or after this time: RFC 3339 or a date (YYYY-MM-DD)"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "page size (default 50)"},
    "cursor": {"type": "string", "description": "nextCursor of the previous page"}
  },
  "additionalProperties": false
}`)

var getPaymentSchema = json.RawMessage(`{
  "type": "object",
  "properties": {"payment_id": {"type": "string", "description": "the payment's id (from list_payments or a payment tool's result)"}},
  "required": ["payment_id"],
  "additionalProperties": false
}`)

// addReadTools adds the read tools to an agent's MCP server.
func (s *Server) addReadTools(srv *mcp.Server, account, agentID string) {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	srv.AddTool(&mcp.Tool{
		Name:        "list_payments",
		Description: "List the payments this agent made, newest first, each with its status (pending and broadcast: on its way, do not send it again; confirmed; failed; refused: nothing was signed), amount, recipient and transaction. Reads only.",
		InputSchema: listPaymentsSchema, Annotations: readOnly,
	}, s.mcpRead(func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a paymentsArgs
		if err := strictJSON(raw, &a); err != nil {
			return nil, err
		}
		m, err := listPayments(listRequest(ctx, a), account)
		if err != nil {
			return nil, err
		}
		return ask(ctx, s, agentID, m)
	}))
	srv.AddTool(&mcp.Tool{
		Name:        "list_received_payments",
		Description: "List the stealth payments this agent received, newest first: one per one-time address, with its chain, asset, amount, what is left of it (balance, withdrawn) and transactions. Reads only.",
		InputSchema: listReceivedSchema, Annotations: readOnly,
	}, s.mcpRead(func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a paymentsArgs
		if err := strictJSON(raw, &a); err != nil {
			return nil, err
		}
		m, err := listReceived(listRequest(ctx, a), account)
		if err != nil {
			return nil, err
		}
		return ask(ctx, s, agentID, m)
	}))
	srv.AddTool(&mcp.Tool{
		Name:        "get_payment",
		Description: "Show one payment this agent made, by its id: status, amount, recipient, transactions, confirmations, and why it failed or was refused. Reads only.",
		InputSchema: getPaymentSchema, Annotations: readOnly,
	}, s.mcpRead(func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a struct {
			PaymentID string `json:"payment_id"`
		}
		if err := strictJSON(raw, &a); err != nil {
			return nil, err
		}
		if !isUUID(a.PaymentID) {
			return nil, Errorf(http.StatusNotFound, "payment not found")
		}
		return ask(ctx, s, agentID, &agent.GetPayment{AccountID: account, PaymentID: a.PaymentID})
	}))
}

// listRequest is a list tool's arguments as the HTTP list's query, so
// that one place (lists.go) checks both.
func listRequest(ctx context.Context, a paymentsArgs) *http.Request {
	q := url.Values{}
	for k, v := range map[string]string{"status": a.Status, "chain": a.Chain, "since": a.Since, "cursor": a.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if a.Limit != 0 {
		q.Set("limit", strconv.Itoa(a.Limit))
	}
	return (&http.Request{URL: &url.URL{RawQuery: q.Encode()}}).WithContext(ctx)
}

// strictJSON decodes a tool's arguments ("" or null: none).
func strictJSON(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return Errorf(http.StatusBadRequest, "arguments: %s", jsonErrorText(err))
	}
	return nil
}

// mcpRead is a read tool's handler: read's answer as JSON (text and
// structured content); a 4xx of read (a bad filter, an unknown payment)
// is a tool result with isError and the API's message, as the agent's
// tools report theirs; anything else a protocol error.
func (s *Server) mcpRead(read func(ctx context.Context, args json.RawMessage) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		v, err := read(ctx, req.Params.Arguments)
		if err != nil {
			status, msg := classify(err)
			if status >= 400 && status < 500 {
				b, _ := json.Marshal(map[string]string{"error": msg})
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, IsError: true}, nil
			}
			return nil, s.mcpError(ctx, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, s.mcpError(ctx, fmt.Errorf("mcp read tool: %w", err))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
	}
}
