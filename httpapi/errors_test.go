package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// The runtime's cluster and lifecycle errors are 503s in the spec's error
// format with Retry-After (retriable); a stale activation's conflict is
// never a 500.
func TestRuntimeErrorsAreRetriable503s(t *testing.T) {
	conflict := &persistence.ConflictError{Table: "agents", Key: "a", Expected: persistence.AtVersion(6), Actual: 10}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"fenced member", fmt.Errorf("agent a: %w: it sees 1 of 3 members", host.ErrFenced), 503},
		{"stale activation", fmt.Errorf("agent a: %w: %w", host.ErrStale, conflict), 503},
		{"member lost", fmt.Errorf("agent a: %w", host.ErrMemberLost), 503},
		{"stopping", host.ErrStopping, 503},
		{"timeout", host.ErrTimeout, 503},
		{"anything else", errors.New("boom"), 500},
	} {
		rec := httptest.NewRecorder()
		handler(func(http.ResponseWriter, *http.Request) error { return tc.err }).ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tc.want || body.StatusCode != tc.want || body.Message == "" {
			t.Errorf("%s: %d %s, want %d in the error format", tc.name, rec.Code, rec.Body, tc.want)
		}
		if got := rec.Header().Get("Retry-After"); (tc.want == 503) != (got == "1") {
			t.Errorf("%s: Retry-After %q", tc.name, got)
		}
	}
}
