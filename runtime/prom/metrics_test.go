package prom_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/runtime/prom"
)

// scrape fetches the handler's text output and parses it the way
// Prometheus does.
func scrape(t *testing.T, m *prom.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return fams
}

func agentsOf(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "agent" {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestPerAgentSeriesAreCappedAndRemovedOnPassivation(t *testing.T) {
	m := prom.New(1)
	m.Activated("a1", time.Millisecond)
	m.Activated("a2", time.Millisecond) // beyond the cap of 1
	m.Handled("a1", "Get", time.Millisecond)
	m.Handled("a2", "Get", time.Millisecond)
	m.Handled("a2", "Chat", time.Millisecond)
	m.Tool("a1", "send_payment", "success")
	m.Payment("a1", chains.Ethereum)

	got := agentsOf(scrape(t, m)["veil_agent_messages_total"])
	if got["a1"] != 1 || got[prom.OtherAgents] != 2 || len(got) != 2 {
		t.Fatalf("messages by agent = %v", got)
	}
	if v := scrape(t, m)["veil_runtime_active_agents"].Metric[0].GetGauge().GetValue(); v != 2 {
		t.Fatalf("active = %v", v)
	}

	m.Passivated("a1")
	fams := scrape(t, m)
	for _, name := range []string{"veil_agent_messages_total", "veil_agent_tool_calls_total", "veil_agent_payments_total"} {
		if _, ok := agentsOf(fams[name])["a1"]; ok {
			t.Fatalf("%s still has a series for the passivated agent", name)
		}
	}
	// The freed slot goes to the next activation.
	m.Activated("a3", time.Millisecond)
	m.Handled("a3", "Get", time.Millisecond)
	if got := agentsOf(scrape(t, m)["veil_agent_messages_total"]); got["a3"] != 1 {
		t.Fatalf("a3 not labelled after a slot freed: %v", got)
	}
}

func TestRuntimeStoreHTTPAndChainSeries(t *testing.T) {
	m := prom.New(0)
	m.Commit(12, 3*time.Millisecond)
	m.LogApply(40, 9*time.Millisecond)
	m.Request("GET", "/agent/{id}", 200, time.Millisecond)
	m.Request("GET", "", 404, time.Millisecond)
	m.Call(chains.Base, "SendStealth", 40*time.Millisecond, nil)
	m.Call(chains.Base, "SendStealth", 40*time.Millisecond, io.EOF)
	m.Scanned(chains.Base, 7, time.Now().Add(-2*time.Second))
	fams := scrape(t, m)
	for _, name := range []string{"veil_store_commit_seconds", "veil_store_commit_batches", "veil_store_apply_seconds", "veil_store_apply_groups", "veil_http_requests_total",
		"veil_http_request_seconds", "veil_chain_call_seconds", "veil_chain_call_errors_total",
		"veil_chain_announcements_scanned_total", "veil_chain_scan_lag_seconds", "go_goroutines"} {
		if fams[name] == nil {
			t.Fatalf("missing %s", name)
		}
	}
	routes := map[string]bool{}
	for _, mm := range fams["veil_http_requests_total"].Metric {
		for _, l := range mm.Label {
			if l.GetName() == "route" {
				routes[l.GetValue()] = true
			}
		}
	}
	if !routes["/agent/{id}"] || !routes["unmatched"] || len(routes) != 2 {
		t.Fatalf("routes = %v (raw paths must never become labels)", routes)
	}
	for name, want := range map[string]float64{"veil_store_apply_groups": 40, "veil_store_apply_seconds": 0.009} {
		h := fams[name].Metric[0].GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != want {
			t.Fatalf("%s: %d samples, sum %v; want 1, %v", name, h.GetSampleCount(), h.GetSampleSum(), want)
		}
	}
	if lag := fams["veil_chain_scan_lag_seconds"].Metric[0].GetGauge().GetValue(); lag < 2 || lag > 60 {
		t.Fatalf("scan lag = %v", lag)
	}
}

func TestHTTPLabelsAreBounded(t *testing.T) {
	tests := []struct {
		method        string
		status        int
		method2, code string
	}{
		{"GET", 200, "GET", "200"},
		{"POST", 201, "POST", "201"},
		{"DELETE", 404, "DELETE", "404"},
		{"BREW", 418, "OTHER", "4xx"},
		{"get", 299, "OTHER", "2xx"},
		{strings.Repeat("X", 500), 503, "OTHER", "503"},
		{"PATCH", 599, "PATCH", "5xx"},
		{"GET", 999, "GET", "other"},
	}
	m := prom.New(0)
	for _, tc := range tests {
		if got := prom.MethodLabel(tc.method); got != tc.method2 {
			t.Fatalf("MethodLabel(%.10q) = %q, want %q", tc.method, got, tc.method2)
		}
		if got := prom.CodeLabel(tc.status); got != tc.code {
			t.Fatalf("CodeLabel(%d) = %q, want %q", tc.status, got, tc.code)
		}
		m.Request(tc.method, "/agent/{id}", tc.status, time.Millisecond)
	}
	// A thousand distinct junk methods and codes add no series.
	before := len(scrape(t, m)["veil_http_request_seconds"].Metric)
	for i := range 1000 {
		m.Request("M"+strings.Repeat("x", i%50)+string(rune('A'+i%26)), "/agent/{id}", 430+i%20, time.Millisecond) // no code of the fixed set
	}
	fam := scrape(t, m)["veil_http_request_seconds"]
	if len(fam.Metric) != before {
		t.Fatalf("junk grew the histogram from %d to %d series", before, len(fam.Metric))
	}
	for _, s := range fam.Metric {
		labels := map[string]string{}
		for _, l := range s.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["route"] == "" || labels["method"] == "" || labels["code"] == "" {
			t.Fatalf("series without route, method or code: %v", labels)
		}
	}
}

func TestBuildInfo(t *testing.T) {
	m := prom.New(0)
	m.SetBuildInfo("v1.2.3", "1a2b3c", "go1.26.8")
	fam := scrape(t, m)["veil_build_info"]
	if fam == nil || len(fam.Metric) != 1 || fam.Metric[0].GetGauge().GetValue() != 1 {
		t.Fatalf("veil_build_info %v", fam)
	}
	got := map[string]string{}
	for _, l := range fam.Metric[0].Label {
		got[l.GetName()] = l.GetValue()
	}
	if got["version"] != "v1.2.3" || got["revision"] != "1a2b3c" || got["goversion"] != "go1.26.8" {
		t.Fatalf("labels %v", got)
	}
}
