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
	r.Method(http.MethodGet, "/agent/{id}/approvals", handler(s.listApprovals))
	r.Method(http.MethodGet, "/agent/{id}/approvals/{approvalId}", handler(s.getApproval))
	r.Method(http.MethodPost, "/agent/{id}/approvals/{approvalId}", handler(s.decideApproval))
	s.webhookRoutes(r)
}

// PreviewPolicyRequest is the body of POST /agent/:id/policy/preview.
type PreviewPolicyRequest struct {
	Policy *policy.Policy `json:"policy"`
}

// previewPolicy answers {hash, message}: the exact text the owner signs
// to set this policy with PUT /agent/:id/policy, issued now.
func (s *Server) previewPolicy(w http.ResponseWriter, r *http.Request) error {
	id, err := agentID(r, "id")
	if err != nil {
		return err
	}
	var req PreviewPolicyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Policy == nil {
		return Errorf(http.StatusBadRequest, "policy is required: send {\"policy\": {...}} (an empty policy {} removes every limit)")
	}
	v, err := ask(r.Context(), s, id, &agent.PreviewPolicy{AccountID: accountFrom(r.Context()).ID, Policy: *req.Policy})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v)
	return nil
}
