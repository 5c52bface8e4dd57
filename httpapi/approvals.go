package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
)

// DecideApprovalRequest is the body of POST /agent/:id/approvals/:approvalId.
type DecideApprovalRequest struct {
	Decision  string `json:"decision"`
	Message   string `json:"message"`
	Signature string `json:"signature"`
}

// approvalID reads {approvalId}: anything but a UUID is not found.
func approvalID(r *http.Request) (string, error) {
	id := chi.URLParam(r, "approvalId")
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return "", Errorf(http.StatusNotFound, "approval not found")
	}
	return id, nil
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	status := r.URL.Query().Get("status")
	switch status {
	case "", policy.StatusPending, policy.StatusApproved, policy.StatusDenied, policy.StatusExpired:
	default:
		return Errorf(http.StatusBadRequest, "status %q is not one of pending, approved, denied, expired", truncate(status, 40))
	}
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.ListApprovals{AccountID: acc, Status: status}))
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) error {
	id, err := approvalID(r)
	if err != nil {
		return err
	}
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.GetApproval{AccountID: acc, ApprovalID: id}))
}

// decideApproval needs the owner wallet's fresh signature: an API key
// alone approves nothing (docs/approvals.md).
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) error {
	id, err := approvalID(r)
	if err != nil {
		return err
	}
	var req DecideApprovalRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Decision != "approve" && req.Decision != "deny" {
		return Errorf(http.StatusBadRequest, "decision must be \"approve\" or \"deny\", with the owner's signature of the matching message (docs/approvals.md)")
	}
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.DecideApproval{
		AccountID: acc, ApprovalID: id, Decision: req.Decision, Signature: req.Signature, Message: req.Message,
	}))
}
