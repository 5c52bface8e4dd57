package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/persistence"
)

// dumpTables is the content of the tables a signed request may write:
// agents and their indexes, used signatures, policies.
func (e *env) dumpTables(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{agent.TableAgents, agent.TableAgentNames, agent.TableAgentAccounts, agent.TableAgentWallets, agent.TableUsedSigs, policy.TablePolicies} {
		recs, err := e.store.List(context.Background(), table, persistence.Query{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			b.WriteString(table + " " + r.Key + " " + string(r.Value) + "\n")
		}
	}
	return b.String()
}

// Every signed request (create, export, policy) whose Issued At is outside
// [now − 10 min, now + 1 min], or not an RFC 3339 UTC timestamp, is a 400
// in the error format and writes nothing. Year 9999 used to pass (the
// duration arithmetic overflowed).
func TestSignedRequestsOutsideTheWindowChangeNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	o := newEVMOwner(t)
	a := e.create(t, o, "window", "ethereum")
	now := time.Now().UTC()
	stamps := []struct{ name, issued string }{
		{"year 9999", "9999-12-31T23:59:59Z"},
		{"year 1", "0001-01-01T00:00:00Z"},
		{"300 years ahead", now.AddDate(300, 0, 0).Format("2006-01-02T15:04:05Z")},
		{"300 years ago", now.AddDate(-300, 0, 0).Format("2006-01-02T15:04:05Z")},
		{"an hour ahead", now.Add(time.Hour).Format("2006-01-02T15:04:05Z")},
		{"an hour ago", now.Add(-time.Hour).Format("2006-01-02T15:04:05Z")},
		{"leap second", now.Format("2006-01-02") + "T23:59:60Z"},
		{"offset", now.Format("2006-01-02T15:04:05") + "+00:00"},
		{"garbage", "soon"},
	}
	p := policy.Policy{PerTransaction: map[string]string{"ETH": "0.01"}}
	hash, err := policy.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	before := e.dumpTables(t)
	for _, s := range stamps {
		wallet := "\nWallet: " + o.wallet() + "\nIssued At: " + s.issued
		create := "Veil wants you to create agent late.veil on ethereum." + wallet
		export := "Veil wants you to export the private key of agent " + a.ID + "." + wallet
		setPolicy := "Veil wants you to set spending policy " + hash + " for agent " + a.ID + "." + wallet
		reqs := []struct {
			what, method, path string
			body               any
		}{
			{"create", "POST", "/agent/create", httpapi.CreateAgentRequest{Name: "late", Chain: "ethereum", Wallet: o.wallet(), Message: create, Signature: o.sign(create)}},
			{"export", "POST", "/agent/" + a.ID + "/export", httpapi.ExportRequest{Message: export, Signature: o.sign(export)}},
			{"policy", "PUT", "/agent/" + a.ID + "/policy", map[string]any{"policy": p, "message": setPolicy, "signature": o.sign(setPolicy)}},
		}
		for _, rq := range reqs {
			r := e.do(rq.method, rq.path, e.key, rq.body)
			msg, code := r.errorBody(t)
			if r.status != 400 || code != 400 || !strings.Contains(msg, "Issued At") {
				t.Errorf("%s with Issued At %s (%s) = %d %s", rq.what, s.issued, s.name, r.status, r.body)
			}
			if strings.Contains(string(r.body), "secret") {
				t.Fatalf("%s: a key came back: %s", rq.what, r.body)
			}
		}
	}
	if after := e.dumpTables(t); after != before {
		t.Fatalf("refused requests changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
