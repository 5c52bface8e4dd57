package httpapi

import (
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"
)

// TestRouteRulesNameRoutes: every entry of the scope table is a route
// the router serves (a renamed route cannot keep a stale rule while the
// real one falls back to the default), and its action is named.
func TestRouteRulesNameRoutes(t *testing.T) {
	s := New(Config{})
	served := map[string]bool{}
	if err := chi.Walk(s.Routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for k, rule := range routeRules {
		if !served[k] {
			t.Errorf("routeRules names %q, which the router does not serve", k)
		}
		if rule.action == "" || rule.scope == "" {
			t.Errorf("%s: rule %+v", k, rule)
		}
	}
}
