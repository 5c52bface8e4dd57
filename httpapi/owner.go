package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
)

// ownerRoutes mounts the endpoints that keep the owner in the loop
// (issue 18): the notification stream, webhooks, the policy preview and
// approvals.
func (s *Server) ownerRoutes(r chi.Router) {
	r.Method(http.MethodGet, "/agent/{id}/notifications/stream", handler(s.notificationStream))
	r.Method(http.MethodPost, "/agent/{id}/policy/preview", handler(s.previewPolicy))
	r.Method(http.MethodGet, "/agent/{id}/approvals", asks(s, http.StatusOK, listApprovals))
	r.Method(http.MethodGet, "/agent/{id}/approvals/{approvalId}", asks(s, http.StatusOK, getApproval))
	r.Method(http.MethodPost, "/agent/{id}/approvals/{approvalId}", asks(s, http.StatusOK, decideApproval))
	s.webhookRoutes(r)
}

// PreviewPolicyRequest is the body of POST /agent/:id/policy/preview.
type PreviewPolicyRequest struct {
	Policy *policy.Policy `json:"policy"`
	// Invoice (optional): an invoice id or payment link of this server;
	// the preview then says whether a payment of it would pass, checked by
	// its issuer (issue 34 item 3).
	Invoice string `json:"invoice,omitempty"`
}

// needPolicy is the rule of both policy bodies: the policy is required
// (an empty one removes every limit); send shows the body to send.
func needPolicy(p *policy.Policy, send string) error {
	if p == nil {
		return Errorf(http.StatusBadRequest, "policy is required: send %s (an empty policy {} removes every limit)", send)
	}
	return nil
}

// previewPolicy answers {hash, message}: the exact text the owner signs
// to set this policy with PUT /agent/:id/policy, issued now.
func (s *Server) previewPolicy(w http.ResponseWriter, r *http.Request) error {
	var req PreviewPolicyRequest
	to, acc, err := targetBody(r, &req)
	if err != nil {
		return err
	}
	if err := needPolicy(req.Policy, `{"policy": {...}}`); err != nil {
		return err
	}
	if len(req.Invoice) > 300 {
		return Errorf(http.StatusBadRequest, "invoice is %d characters; give an invoice id or payment link (at most 300)", len(req.Invoice))
	}
	return private(w, http.StatusOK)(ask(r.Context(), s, to, &agent.PreviewPolicy{AccountID: acc, Policy: *req.Policy, Invoice: req.Invoice}))
}
