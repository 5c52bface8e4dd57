package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
)

// An approval decides once: one that expired, or was approved and then
// failed, is final, and the same request (same key) later is held for a
// new approval even after the owner relaxed the policy; the enclave's gate
// does not take the failed approval as one. A denied one stays refused.
func TestAFailedOrExpiredApprovalIsFinal(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		end     func(a *policy.Approval)
		wantErr error
	}{
		{"approved then failed", func(a *policy.Approval) {
			a.Status, a.Error = policy.StatusApproved, "refused by the agent's spending policy"
		}, nil},
		{"expired", func(a *policy.Approval) { a.Status = policy.StatusExpired }, nil},
		{"denied", func(a *policy.Approval) { a.Status = policy.StatusDenied }, policy.ErrNotApproved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := open(t, filepath.Join(t.TempDir(), "p.db"))
			defer st.Close()
			ps := policy.NewStore(st, func() time.Time { return now })
			set(t, st, policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"USDC": "1"}}})
			h := policy.Hold{AgentID: agentID, Kind: policy.KindPayment, Chain: chains.Ethereum, Asset: "USDC", Amount: usdc(t, "5"), Recipient: "bob.veil", PayTo: "st:eth:0xb0b", Key: "k"}
			first, ops, err := ps.Check(ctx, h)
			if err != nil || first == nil || len(ops) == 0 {
				t.Fatalf("first Check = %v, %v, %v", first, ops, err)
			}
			if _, err := st.Apply(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			ap, v, err := policy.GetApproval(ctx, st, agentID, first.ID)
			if err != nil {
				t.Fatal(err)
			}
			c.end(ap)
			put, err := policy.PutOp(ap, v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Apply(ctx, put); err != nil {
				t.Fatal(err)
			}
			// The enclave's gate does not take a failed approval as one.
			if err := ps.WithApprovals().Authorize(ctx, spend("k", "USDC", "5", "st:eth:0xb0b")); !errors.Is(err, enclave.ErrPolicy) {
				t.Fatalf("gate on the ended approval's key: %v", err)
			}
			set(t, st, policy.Policy{}) // the owner relaxes the policy
			again, ops, err := ps.Check(ctx, h)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("Check after %s = %v, %v", c.name, again, err)
				}
				return
			}
			if err != nil || again == nil || again.ID == first.ID || len(ops) == 0 || !strings.Contains(strings.Join(again.Reasons, ";"), first.ID) {
				t.Fatalf("Check after %s = %+v, %v, %v; want a new approval naming %s", c.name, again, ops, err, first.ID)
			}
			if _, err := st.Apply(ctx, ops...); err != nil {
				t.Fatalf("the new approval does not commit: %v", err)
			}
		})
	}
}

// usdc is v USDC (6 decimals), as a payment request parses it.
func usdc(t *testing.T, v string) chains.Amount {
	t.Helper()
	a, err := chains.ParseAmountOf(v, 6)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A hold carries its amount typed (as the payment request parsed it); the
// approval record keeps it as before, whole units as text in "amount" (so
// approvals already stored load and pay as they did), and a hold of no
// amount that is not "everything" is refused, not held.
func TestHoldAmountIsTyped(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	st := open(t, filepath.Join(t.TempDir(), "p.db"))
	defer st.Close()
	ps := policy.NewStore(st, func() time.Time { return now })
	set(t, st, policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"USDC": "1"}}})
	h := policy.Hold{AgentID: agentID, Kind: policy.KindPayment, Chain: chains.Base, Asset: "USDC", Amount: usdc(t, "2.50"), Recipient: "bob.veil", PayTo: "st:base:0xb0b", Key: "typed"}
	ap, ops, err := ps.Check(ctx, h)
	if err != nil || ap == nil {
		t.Fatalf("Check = %v, %v", ap, err)
	}
	if _, err := st.Apply(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	got, _, err := policy.GetApproval(ctx, st, agentID, ap.ID)
	if err != nil || got.Amount != "2.5" || !strings.Contains(strings.Join(got.Reasons, ";"), "2.5 USDC is above the approval threshold of 1 USDC") {
		t.Fatalf("stored approval %+v, %v", got, err)
	}
	if raw, _ := json.Marshal(got); !strings.Contains(string(raw), `"amount":"2.5"`) {
		t.Fatalf("approval JSON %s", raw)
	}
	all := h
	all.Amount, all.All, all.Key = chains.Amount{}, true, "all"
	if ap, _, err := ps.Check(ctx, all); err != nil || ap == nil || ap.Amount != "" {
		t.Fatalf("Check(all) = %+v, %v", ap, err)
	}
	zero := h
	zero.Amount, zero.Key = chains.Amount{}, "zero"
	if ap, _, err := ps.Check(ctx, zero); !errors.Is(err, chains.ErrInvalidAmount) || ap != nil {
		t.Fatalf("Check(zero) = %+v, %v, want ErrInvalidAmount", ap, err)
	}
}
