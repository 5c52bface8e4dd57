package policy_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/enclave"
)

// An invoice issued on this server is checked against the payer's
// allowlist by its issuer (the agent's name), found in the server's own
// invoice records; an address that is no invoice here (another server's,
// or a bare address) is checked by itself, as before. Both at signing
// (Authorize) and when a payment would be held for approval (Check).
func TestAllowlistKnowsInvoiceIssuers(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "veil.db"))
	t.Cleanup(func() { _ = st.Close() })
	n := 0
	gen := func(context.Context, chains.ID) (string, []byte, error) {
		n++
		return fmt.Sprintf("0x%040x", 0xb0+n), []byte{1}, nil
	}
	issue := func(issuerID, issuer string) string {
		t.Helper()
		inv, err := state.NewInvoices(st, issuerID, nil, issuer, "https://veil.test", gen).Create(ctx,
			tools.Invoice{Invoice: client.Invoice{Amount: "5", Asset: "USDC", Memo: "logo"}, Chain: chains.Base}, "")
		if err != nil {
			t.Fatal(err)
		}
		return inv.PayTo
	}
	bobs := issue("22222222-2222-4333-8444-555555555555", "bob")
	carols := issue("33333333-2222-4333-8444-555555555555", "carol")
	foreign := "0x00000000000000000000000000000000000000f0" // no invoice of this server

	store := policy.NewStore(st, nil)
	tests := []struct {
		name      string
		allowlist []string
		to        string
		want      string // "" = allowed; else in the refusal
	}{
		{"issuer on the allowlist", []string{"bob.veil"}, bobs, ""},
		{"issuer on the allowlist without the suffix", []string{"bob"}, bobs, ""},
		{"issuer upper-case address", []string{"bob"}, strings.ToUpper(bobs[:2]) + strings.ToUpper(bobs[2:]), ""},
		{"another issuer", []string{"bob"}, carols, "issued by carol.veil, which is not on the allowlist"},
		{"foreign invoice, no verifiable issuer", []string{"bob"}, foreign, "is not on the allowlist"},
		{"foreign invoice's address on the allowlist", []string{foreign}, foreign, ""},
		{"no allowlist", nil, carols, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Paying a new recipient is held for approval: the hold path
			// checks the allowlist before it asks the owner.
			set(t, st, policy.Policy{Allowlist: tc.allowlist, Approvals: policy.Approvals{ApproveNewRecipients: true}})
			five, _ := chains.ParseAmountOf("5", 6)
			sp := chains.Spend{Key: "k-" + tc.name, AgentID: agentID, Chain: chains.Base, Asset: "USDC", Amount: five, Recipient: tc.to}
			err := store.Authorize(ctx, sp)
			_, _, holdErr := store.Check(ctx, policy.Hold{AgentID: agentID, Kind: policy.KindInvoice, Chain: chains.Base, Asset: "USDC", Amount: five,
				Recipient: "an invoice", PayTo: tc.to, Key: "h-" + tc.name})
			for what, err := range map[string]error{"authorize": err, "hold": holdErr} {
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("%s: refused: %v", what, err)
				case tc.want != "" && (!errors.Is(err, enclave.ErrPolicy) || !strings.Contains(err.Error(), tc.want)):
					t.Fatalf("%s: %v, want a policy refusal saying %q", what, err, tc.want)
				}
			}
		})
	}
}
