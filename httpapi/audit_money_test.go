package httpapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/veilhq/veil/runtime/audit"
)

// moneyRecords are the audit records of action in the account of e.key
// (the records runtime/audit.Money describes), checked for what every one
// of them carries: the agent, no key (no request of the account made
// them), and each of ids among its payment ids.
func (e *env) moneyRecords(t *testing.T, action, agentID string, ids ...string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, r := range e.auditOf(e.key) {
		if r.Action != action {
			continue
		}
		if r.AgentID != agentID || r.KeyID != "" || r.Source == "" || r.Detail == "" {
			t.Fatalf("%s record %+v", action, r)
		}
		for _, id := range ids {
			if !slices.ContainsFunc(r.PaymentIDs, func(p string) bool { return strings.EqualFold(p, id) }) {
				t.Fatalf("%s record %+v does not name %s", action, r, id)
			}
		}
		out = append(out, r)
	}
	return out
}
