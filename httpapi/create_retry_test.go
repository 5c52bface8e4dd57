package httpapi_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/httpapi"
)

// A client that retries POST /agent/create with the same signed body after
// its answer was lost gets the agent that was created (200), not 409 or
// "signature already used"; another account presenting the same signature
// is refused (400) and learns nothing. Each create failpoint stands for
// the crash or timeout: it aborts the first request right there.
func TestCreateRetryAfterLostAnswer(t *testing.T) {
	cases := []struct {
		failpoint string
		// stored: the agent exists after the failed first request.
		stored bool
	}{
		{"", true}, // the answer was lost on the network
		{agent.FailBeforeCreateStore, false},
		{agent.FailAfterCreateStore, true},
		{agent.FailAfterCreateRegister, true},
	}
	for _, tc := range cases {
		t.Run("failpoint="+tc.failpoint, func(t *testing.T) {
			var armed atomic.Bool
			armed.Store(tc.failpoint != "")
			e := newEnv(t, envOptions{failpoint: func(name string) error {
				if name == tc.failpoint && armed.CompareAndSwap(true, false) {
					return errors.New("failpoint " + name)
				}
				return nil
			}})
			o := newEVMOwner(t)
			body := o.createBody("retried", "ethereum")

			first := e.do("POST", "/agent/create", e.key, body)
			if tc.failpoint != "" && first.status < 500 {
				t.Fatalf("first create with %s armed = %d %s", tc.failpoint, first.status, first.body)
			}
			if tc.failpoint == "" && first.status != 201 {
				t.Fatalf("first create = %d %s", first.status, first.body)
			}
			stored := e.agentsOf(t, e.key)
			if len(stored) != map[bool]int{true: 1, false: 0}[tc.stored] {
				t.Fatalf("after the first request %d agents are stored", len(stored))
			}

			// The retry: the same bytes, the same account.
			retry := e.do("POST", "/agent/create", e.key, body)
			wantStatus := 200
			if !tc.stored {
				wantStatus = 201 // nothing was stored: this one creates it
			}
			if retry.status != wantStatus {
				t.Fatalf("retry = %d %s; want %d", retry.status, retry.body, wantStatus)
			}
			var got httpapi.CreateAgentResponse
			retry.decode(t, &got)
			all := e.agentsOf(t, e.key)
			if len(all) != 1 || all[0].ID != got.ID || got.Name != "retried" || got.Chain != "ethereum" || got.Address != all[0].Addresses["ethereum"] || got.MetaAddress == "" {
				t.Fatalf("retry answered %+v; stored %+v", got, all)
			}
			if tc.failpoint == "" {
				var orig httpapi.CreateAgentResponse
				first.decode(t, &orig)
				if !reflect.DeepEqual(orig, got) {
					t.Fatalf("retry answered %+v, the first answer was %+v", got, orig)
				}
			}
			// Again: still the same agent.
			if again := e.do("POST", "/agent/create", e.key, body); again.status != 200 || !sameID(t, again, got.ID) {
				t.Fatalf("second retry = %d %s", again.status, again.body)
			}

			// Another account with the same signature: refused, nothing
			// created, nothing revealed.
			otherKey := e.newKey("other")
			r := e.do("POST", "/agent/create", otherKey, body)
			msg, code := r.errorBody(t)
			if r.status != 400 || code != 400 || msg == "" || sameIDLoose(r, got.ID) {
				t.Fatalf("other account = %d %s", r.status, r.body)
			}
			if n := len(e.agentsOf(t, otherKey)); n != 0 {
				t.Fatalf("other account has %d agents", n)
			}
			if n := len(e.agentsOf(t, e.key)); n != 1 {
				t.Fatalf("%d agents after the retries", n)
			}
		})
	}
}

// Copies of one create request sent at once: exactly one 201, the others
// 200 with the same agent.
func TestConcurrentCopiesOfOneCreate(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := newEVMOwner(t).createBody("copies", "ethereum")
	const n = 8
	res := make([]response, n)
	var wg sync.WaitGroup
	for i := range res {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res[i] = e.do("POST", "/agent/create", e.key, body)
		}(i)
	}
	wg.Wait()
	created := 0
	all := e.agentsOf(t, e.key)
	if len(all) != 1 {
		t.Fatalf("%d agents stored", len(all))
	}
	for _, r := range res {
		switch {
		case r.status == 201:
			created++
		case r.status != 200:
			t.Fatalf("copy = %d %s", r.status, r.body)
		}
		if !sameID(t, r, all[0].ID) {
			t.Fatalf("copy answered another agent: %s", r.body)
		}
	}
	if created != 1 {
		t.Fatalf("%d copies answered 201", created)
	}
}

func (e *env) agentsOf(t *testing.T, key string) []httpapi.AgentInfo {
	t.Helper()
	r := e.do("GET", "/agents", key, nil)
	var out []httpapi.AgentInfo
	r.decode(t, &out)
	if r.status != 200 {
		t.Fatalf("GET /agents = %d %s", r.status, r.body)
	}
	return out
}

func sameID(t *testing.T, r response, id string) bool {
	t.Helper()
	var got httpapi.CreateAgentResponse
	r.decode(t, &got)
	return got.ID == id
}

// sameIDLoose reports whether an answer names agent id at all.
func sameIDLoose(r response, id string) bool {
	var got struct{ ID string }
	_ = json.Unmarshal(r.body, &got)
	return got.ID == id
}
