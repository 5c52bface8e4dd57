package client_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/client"
)

// Approvals, the policy preview, webhooks and the notification stream
// through the client against a real server (no chain: an approved payment
// waits for its chain, which is what the server says).
func TestOwnerEndpoints(t *testing.T) {
	s := newServer(t)
	c := s.client(s.key)
	ctx := ctx(t)
	owner := newEVM(t)
	alice, err := c.CreateAgentSigned(ctx, "holder", client.ChainBase, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAgentSigned(ctx, "bob", client.ChainBase, newEVM(t)); err != nil {
		t.Fatal(err)
	}
	hash, err := c.SetPolicySigned(ctx, alice.ID, map[string]any{"approvalAbove": map[string]string{"ETH": "0.1"}}, owner)
	if err != nil || len(hash) != 64 {
		t.Fatalf("set policy: %q %v", hash, err)
	}
	if _, err := c.SetPolicySigned(ctx, alice.ID, map[string]any{"approvalAbove": map[string]string{"ETH": "-1"}}, owner); !client.IsBadRequest(err) {
		t.Fatalf("malformed policy: %v", err)
	}

	// A held payment raises approval_required; the stream replays the
	// stored inbox from id 0, then the callback's error ends it.
	r, err := c.Chat(ctx, alice.ID, client.ChatRequest{Message: "send 0.5 ETH to bob"})
	if err != nil || len(r.ToolCalls) != 1 || r.ToolCalls[0].Status != "success" || !strings.Contains(r.ToolCalls[0].Detail, "pending_approval") {
		t.Fatalf("chat: %+v %v", r, err)
	}
	var streamed []client.Notification
	enough := errors.New("enough")
	err = c.FollowNotifications(ctx, alice.ID, client.FollowOptions{}, func(n client.Notification) error {
		streamed = append(streamed, n)
		if n.Type == "approval_required" {
			return enough
		}
		return nil
	})
	if !errors.Is(err, enough) || streamed[len(streamed)-1].Type != "approval_required" {
		t.Fatalf("stream: %v %+v", err, streamed)
	}
	if err := c.FollowNotifications(ctx, "00000000-0000-4000-8000-000000000000", client.FollowOptions{After: client.FollowNew}, func(client.Notification) error { return nil }); !client.IsNotFound(err) {
		t.Fatalf("stream of an unknown agent: %v", err)
	}

	pending, err := c.ListApprovals(ctx, alice.ID, client.ApprovalPending)
	if err != nil || len(pending) == 0 || pending[0].Amount != "0.5" {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	id := pending[0].ID
	if _, err := c.Approve(ctx, alice.ID, id, newEVM(t)); !client.IsBadRequest(err) {
		t.Fatalf("a stranger approves: %v", err)
	}
	dec, err := c.Approve(ctx, alice.ID, id, owner)
	if err != nil || dec.Status != client.ApprovalApproved || dec.TxHash != "" {
		t.Fatalf("approve: %+v %v", dec, err)
	}
	if _, err := c.Deny(ctx, alice.ID, id, owner); !client.IsConflict(err) {
		t.Fatalf("second decision: %v", err)
	}
	if a, err := c.GetApproval(ctx, alice.ID, id); err != nil || a.Status != client.ApprovalApproved {
		t.Fatalf("get: %+v %v", a, err)
	}
	if len(pending) > 1 {
		if dec, err := c.Deny(ctx, alice.ID, pending[1].ID, owner); err != nil || dec.Status != client.ApprovalDenied {
			t.Fatalf("deny: %+v %v", dec, err)
		}
	}

	// Webhooks.
	hook, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: "https://example.com/veil", Events: []string{"approval_required"}})
	if err != nil || !strings.HasPrefix(hook.Secret, "whsec_") {
		t.Fatalf("create webhook: %+v %v", hook, err)
	}
	if _, err := c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: "http://169.254.169.254/"}); !client.IsBadRequest(err) {
		t.Fatalf("metadata URL: %v", err)
	}
	hooks, err := c.ListWebhooks(ctx)
	if err != nil || len(hooks) != 1 || hooks[0].Secret != "" {
		t.Fatalf("list: %+v %v", hooks, err)
	}
	if d, err := c.TestWebhook(ctx, hook.ID); err != nil || d.Status != "pending" {
		t.Fatalf("test: %+v %v", d, err)
	}
	if ds, err := c.WebhookDeliveries(ctx, hook.ID); err != nil || len(ds) != 1 {
		t.Fatalf("deliveries: %+v %v", ds, err)
	}
	if err := s.client(s.newKey("other")).DeleteWebhook(ctx, hook.ID); !client.IsNotFound(err) {
		t.Fatalf("another account deletes: %v", err)
	}
	if err := c.DeleteWebhook(ctx, hook.ID); err != nil {
		t.Fatal(err)
	}
}
