package ready_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/veilhq/veil/runtime/ready"
)

func TestChecker(t *testing.T) {
	block := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	ignore := make(chan struct{})
	t.Cleanup(func() { close(ignore) })
	tests := []struct {
		name    string
		checks  []ready.Check
		code    int
		failing []string
		errs    map[string]string
		warns   map[string]string
	}{
		{name: "none", code: 200, failing: []string{}},
		{name: "all pass", checks: []ready.Check{
			ready.Func("store", func(context.Context) error { return nil }),
			ready.Func("enclave", func(context.Context) error { return nil }),
		}, code: 200, failing: []string{}},
		{name: "one fails", checks: []ready.Check{
			ready.Func("store", func(context.Context) error { return nil }),
			ready.Func("chain/base", func(context.Context) error { return errors.New("node at http://x: connection refused") }),
		}, code: 503, failing: []string{"chain/base"}, errs: map[string]string{"chain/base": "node at http://x: connection refused"}},
		{name: "a warning stays ready", checks: []ready.Check{
			ready.Func("chain/base", func(context.Context) error { return nil }),
			ready.Func("relayer/base", func(context.Context) error {
				return ready.Warning(errors.New("relayer 0xabc holds 0.001 ETH"))
			}),
		}, code: 200, failing: []string{}, warns: map[string]string{"relayer/base": "relayer 0xabc holds 0.001 ETH"}},
		{name: "a warning beside a failure", checks: []ready.Check{
			ready.Func("chain/solana", func(context.Context) error { return errors.New("down") }),
			ready.Func("relayer/base", func(context.Context) error { return ready.Warning(errors.New("low")) }),
		}, code: 503, failing: []string{"chain/solana"}, warns: map[string]string{"relayer/base": "low"}},
		{name: "timeout and ctx-ignoring and panic", checks: []ready.Check{
			ready.Func("slow", block),
			ready.Func("deaf", func(context.Context) error { <-ignore; return nil }),
			ready.Func("boom", func(context.Context) error { panic("bad") }),
		}, code: 503, failing: []string{"boom", "deaf", "slow"}, errs: map[string]string{
			"slow": "no answer within 50ms", "deaf": "no answer within 50ms", "boom": "check panicked: bad"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &ready.Checker{Timeout: 50 * time.Millisecond}
			c.Add(tc.checks...)
			rec := httptest.NewRecorder()
			c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tc.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			var rep ready.Report
			if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Ready != (tc.code == 200) || len(rep.Checks) != len(tc.checks) {
				t.Fatalf("report %+v", rep)
			}
			if len(rep.Failing) != len(tc.failing) {
				t.Fatalf("failing %v, want %v", rep.Failing, tc.failing)
			}
			for i := range tc.failing {
				if rep.Failing[i] != tc.failing[i] {
					t.Fatalf("failing %v, want %v", rep.Failing, tc.failing)
				}
			}
			if len(rep.Warnings) != len(tc.warns) {
				t.Fatalf("warnings %v, want %v", rep.Warnings, tc.warns)
			}
			for _, r := range rep.Checks {
				if r.Warning != tc.warns[r.Name] {
					t.Fatalf("%s: warning %q, want %q", r.Name, r.Warning, tc.warns[r.Name])
				}
				if want, ok := tc.errs[r.Name]; ok && r.Error != want {
					t.Fatalf("%s: error %q, want %q", r.Name, r.Error, want)
				}
				if r.OK == (r.Error != "") {
					t.Fatalf("%s: ok %v with error %q", r.Name, r.OK, r.Error)
				}
			}
		})
	}
}
