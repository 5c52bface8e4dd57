package httpapi

import (
	"net/http"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
)

// approvalID reads {approvalId}: anything but a UUID is not found. The
// approval's id is read before the agent's, the body after it.
func approvalID(r *http.Request) (string, error) { return pathID(r, "approvalId", "approval") }

// listApprovals reads GET /agent/:id/approvals?status=.
func listApprovals(r *http.Request, acc string) (*agent.ListApprovals, error) {
	status := r.URL.Query().Get("status")
	switch status {
	case "", policy.StatusPending, policy.StatusApproved, policy.StatusDenied, policy.StatusExpired:
	default:
		return nil, Errorf(http.StatusBadRequest, "status %q is not one of pending, approved, denied, expired", truncate(status, 40))
	}
	return &agent.ListApprovals{AccountID: acc, Status: status}, nil
}

// getApproval reads GET /agent/:id/approvals/:approvalId.
func getApproval(r *http.Request, acc string) (*agent.GetApproval, error) {
	id, err := approvalID(r)
	return &agent.GetApproval{AccountID: acc, ApprovalID: id}, err
}

// decideApproval reads POST /agent/:id/approvals/:approvalId, which needs
// the owner wallet's fresh signature: an API key alone approves nothing
// (docs/approvals.md).
func decideApproval(r *http.Request, acc string) (*agent.DecideApproval, error) {
	id, err := approvalID(r)
	if err != nil {
		return nil, err
	}
	var req DecideApprovalRequest
	if err := decodeJSON(r, &req); err != nil {
		return nil, err
	}
	if req.Decision != "approve" && req.Decision != "deny" {
		return nil, Errorf(http.StatusBadRequest, "decision must be \"approve\" or \"deny\", with the owner's signature of the matching message (docs/approvals.md)")
	}
	return &agent.DecideApproval{
		AccountID: acc, ApprovalID: id, Decision: req.Decision, Signature: req.Signature, Message: req.Message,
	}, nil
}
