package httpapi

import "github.com/veilhq/veil/client"

// The wire types that have no type of their own in the layers below are
// the Go client's: one definition of each JSON shape, which the server
// writes (or decodes) and the client reads (or sends), so the two cannot
// drift apart. The answers are byte for byte what the spec and
// openapi.json say; the request types' omitempty tags only matter when
// the client encodes.
type (
	// AgentInfo is the spec's AgentInfo.
	AgentInfo = client.AgentInfo
	// CreateAgentRequest is the body of POST /agent/create.
	CreateAgentRequest = client.CreateAgentRequest
	// CreateAgentResponse is the spec's single-chain create answer, plus
	// the AgentInfo fields chains, addresses and metaAddresses (additive:
	// the spec's five fields are unchanged), which Wraith's TypeScript SDK
	// reads from this answer (docs/compat-wraith.md).
	CreateAgentResponse = client.CreatedAgent
	// ExportRequest is the body of POST /agent/:id/export.
	ExportRequest = client.ExportRequest
	// ChatRequest is the body of POST /agent/:id/chat.
	ChatRequest = client.ChatRequest
	// DecideApprovalRequest is the body of POST
	// /agent/:id/approvals/:approvalId.
	DecideApprovalRequest = client.DecideApprovalRequest
	// CreateWebhookRequest is the body of POST /webhooks.
	CreateWebhookRequest = client.CreateWebhookRequest
	// WebhookView is a webhook as the API shows it; Secret only in the
	// answer of the create.
	WebhookView = client.Webhook
	// DeliveryView is one delivery as GET /webhooks/:id/deliveries shows it.
	DeliveryView = client.WebhookDelivery
)
