package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/httpapi/apikey"
)

// BenchmarkReadPathVsBaseline compares Veil's warm GET /agent/:id with the
// fastest server that could answer it: a chi handler serving the same JSON
// bytes from a map behind the same API-key check (apikey.Lookup on the same
// store). Each op is one pair: readPairN requests to each side from the same
// 64-client loader, back to back, in alternating order, so that load from
// other processes hits both alike. It reports the median over the pairs of
// Veil's requests/s divided by the baseline's (veil/baseline; the target of
// issue 21 is ≥ 0.8) and the medians of both rates. Figures in
// docs/BENCHMARKS.md:
//
//	go test -run '^$' -bench ReadPathVsBaseline -benchtime 10x -count 3 ./httpapi/
func BenchmarkReadPathVsBaseline(b *testing.B) {
	const readPairN = 4000
	e := newEnv(b, envOptions{})
	ids := agentsFor(b, e, 256)
	bodies := make(map[string][]byte, len(ids))
	for _, id := range ids { // activate every agent, and keep its answer
		r := e.do("GET", "/agent/"+id, e.key, nil)
		if r.status != http.StatusOK {
			b.Fatalf("GET /agent/%s: %d %s", id, r.status, r.body)
		}
		bodies[id] = r.body
	}
	base := httptest.NewServer(baselineRouter(e, bodies))
	defer base.Close()

	side := func(url string) float64 {
		rps, _ := drive(b, readPairN, http.StatusOK, func(c *http.Client, i int) int {
			return get(c, url+"/agent/"+ids[i%len(ids)], e.key)
		})
		return rps
	}
	var ratios, veil, baseline []float64
	pair := 0
	for b.Loop() {
		var v, bl float64
		if pair%2 == 0 {
			v, bl = side(e.url), side(base.URL)
		} else {
			bl, v = side(base.URL), side(e.url)
		}
		pair++
		veil, baseline, ratios = append(veil, v), append(baseline, bl), append(ratios, v/bl)
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(ratios), "veil/baseline")
	b.ReportMetric(med(veil), "veil-req/s")
	b.ReportMetric(med(baseline), "baseline-req/s")
	b.ReportMetric(0, "ns/op")
}

// baselineRouter serves GET /agent/{id} from bodies, behind the API-key
// check Veil's authenticate middleware does (header parse, apikey.Lookup).
func baselineRouter(e *env, bodies map[string][]byte) http.Handler {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				http.Error(w, `{"message":"unauthorized","statusCode":401}`, http.StatusUnauthorized)
				return
			}
			if _, _, err := apikey.Lookup(r.Context(), e.store, strings.TrimSpace(key)); err != nil {
				http.Error(w, `{"message":"unauthorized","statusCode":401}`, http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	r.Get("/agent/{id}", func(w http.ResponseWriter, r *http.Request) {
		body, ok := bodies[chi.URLParam(r, "id")]
		if !ok {
			http.Error(w, `{"message":"agent not found","statusCode":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	return r
}
