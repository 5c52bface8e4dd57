// Names for the generated OpenAPI types (src/openapi.ts), so callers write
// AgentInfo rather than components["schemas"]["AgentInfo"].
import type { components } from "./openapi.js";

type S = components["schemas"];

export type ChainId = S["ChainId"];
export type ChainOrAll = S["ChainOrAll"];
export type Health = S["Health"];
export type Readiness = S["Readiness"];
export type AgentInfo = S["AgentInfo"];
export type CreateAgentRequest = S["CreateAgentRequest"];
export type CreateAgentResponse = S["CreateAgentResponse"];
export type AgentStatus = S["AgentStatus"];
export type ExportRequest = S["ExportRequest"];
export type ExportResponse = S["ExportResponse"];
export type ChatRequest = S["ChatRequest"];
export type ChatResponse = S["ChatResponse"];
export type ToolCall = S["ToolCall"];
export type Conversation = S["Conversation"];
export type Message = S["Message"];
export type Invoice = S["Invoice"];
export type InvoicePage = S["InvoicePage"];
export type PaymentRecord = S["PaymentRecord"];
export type PaymentPage = S["PaymentPage"];
/** A stealth payment the agent received (GET /agent/:id/payments/received): the spec's Payment with its chain, asset, amount and transactions. */
export type ReceivedPayment = S["ReceivedPayment"];
export type ReceivedPage = S["ReceivedPage"];
/** The received list's status filter: held (some of it is still at its one-time address) or withdrawn. */
export type ReceivedStatus = "held" | "withdrawn";
export type Notification = S["Notification"];
export type NotificationList = S["NotificationList"];
/** A payment event (payment.confirmed / payment.failed), sent on the notification stream and webhooks alongside notifications: a Notification plus the payment record. */
export type PaymentEvent = S["PaymentEvent"];
export type Schedule = S["Schedule"];
export type TEEInfo = S["TEEInfo"];
export type Attestation = S["Attestation"];
export type PayView = S["PayView"];
export type SpendingPolicy = S["SpendingPolicy"];
export type PolicyView = S["PolicyView"];
export type PolicyPreview = S["PolicyPreview"];
export type SetPolicyRequest = S["SetPolicyRequest"];
export type CreateWebhookRequest = S["CreateWebhookRequest"];
export type Webhook = S["Webhook"];
export type WebhookDelivery = S["WebhookDelivery"];
export type Approval = S["Approval"];
export type DecideApprovalRequest = S["DecideApprovalRequest"];
export type ApprovalDecision = S["ApprovalDecision"];
export type ErrorBody = S["Error"];
