package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/veilhq/veil/chains/walletsig"
)

func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

func hasAgentSeries(f *dto.MetricFamily, id string) bool {
	if f == nil {
		return false
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "agent" && l.GetValue() == id {
				return true
			}
		}
	}
	return false
}

// The metrics listener serves the Prometheus text format without a key; an
// agent's series exist while its actor is active and go when it passivates.
func TestMetricsEndpoint(t *testing.T) {
	p := start(t, t.TempDir(), "--passivate-after", "300ms")
	if p.metrics == "" {
		t.Fatal("no metrics listener logged")
	}
	key := keyRE.FindString(p.stdout.String())
	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	msg := walletsig.CreateMessage("metered", "ethereum", wallet, time.Now())
	status, body := call(t, "POST", "http://"+p.addr+"/agent/create", key, map[string]string{
		"name": "metered", "chain": "ethereum", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
	})
	if status != 201 {
		t.Fatalf("create = %d %s", status, body)
	}
	var a struct{ ID string }
	_ = json.Unmarshal(body, &a)
	call(t, "GET", "http://"+p.addr+"/agent/"+a.ID, key, nil)

	fams := scrape(t, p.metrics)
	for _, name := range []string{"veil_http_requests_total", "veil_store_commit_seconds", "veil_store_apply_seconds", "veil_store_apply_groups", "veil_runtime_activations_total", "veil_chain_call_seconds", "veil_build_info"} {
		if fams[name] == nil {
			t.Fatalf("missing %s", name)
		}
	}
	// The build is named, and the latency histogram has method and code.
	if bi := fams["veil_build_info"].Metric; len(bi) != 1 || bi[0].GetGauge().GetValue() != 1 || len(bi[0].Label) != 3 {
		t.Fatalf("veil_build_info %v", bi)
	}
	found := false
	for _, m := range fams["veil_http_request_seconds"].Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		found = found || l["route"] == "/agent/create" && l["method"] == "POST" && l["code"] == "201"
	}
	if !found {
		t.Fatalf("no veil_http_request_seconds{route=/agent/create,method=POST,code=201}: %v", fams["veil_http_request_seconds"].Metric)
	}
	if !hasAgentSeries(fams["veil_agent_messages_total"], a.ID) {
		t.Fatal("no series for the active agent")
	}
	// The API port keeps its key: no metrics there.
	if resp, err := http.Get("http://" + p.addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("the API port serves /metrics")
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for hasAgentSeries(scrape(t, p.metrics)["veil_agent_messages_total"], a.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the passivated agent's series stayed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The background scanners report their passes.
	for scrape(t, p.metrics)["veil_chain_scan_pass_seconds"] == nil {
		if time.Now().After(deadline) {
			t.Fatal("no scanner pass reported")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The log's applier reports its transactions (the create above was
	// logged, then applied behind the answer).
	for f := scrape(t, p.metrics)["veil_store_apply_groups"]; f.Metric[0].GetHistogram().GetSampleCount() == 0; f = scrape(t, p.metrics)["veil_store_apply_groups"] {
		if time.Now().After(deadline) {
			t.Fatal("no applier transaction reported")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.stop(t, syscall.SIGTERM)
}
