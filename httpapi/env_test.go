package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime"
)

// env is a real server on a loopback listener: bbolt on disk, the actor
// host, the API.
type env struct {
	t     testing.TB
	url   string
	key   string
	store persistence.Store
	host  *runtime.Host
	api   *httpapi.Server
	now   time.Time
}

type envOptions struct {
	keys agent.Keys
	tee  httpapi.TEE
}

func newEnv(t testing.TB, opts envOptions) *env {
	t.Helper()
	if opts.keys == nil {
		var root [32]byte
		root[0] = 7
		prov, err := software.New(root)
		if err != nil {
			t.Fatal(err)
		}
		opts.keys = agent.EnclaveKeys(prov)
		opts.tee = prov
	}
	dir := t.TempDir()
	st, err := persistence.OpenBolt(filepath.Join(dir, "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	host := runtime.NewHost(system, agent.Loader(agent.Deps{Store: st, Log: quiet, Keys: opts.keys, Chains: agent.NoChains{}}),
		runtime.HostConfig{PassivateAfter: time.Minute}, quiet, nil)
	api := httpapi.New(httpapi.Config{Store: st, Agents: host, Logger: quiet, TEE: opts.tee})
	srv := httptest.NewServer(api)
	key, err := apikey.Bootstrap(context.Background(), st, time.Now())
	if err != nil || key == "" {
		t.Fatalf("bootstrap: %q %v", key, err)
	}
	t.Cleanup(func() {
		srv.Close()
		_ = host.Stop(context.Background())
		system.Shutdown()
		_ = st.Close()
	})
	return &env{t: t, url: srv.URL, key: key, store: st, host: host, api: api}
}

// newKey issues a key for another account.
func (e *env) newKey(account string) string {
	e.t.Helper()
	acc, err := apikey.EnsureAccount(context.Background(), e.store, account, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	k, err := apikey.Create(context.Background(), e.store, acc, false, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorBody(t *testing.T) (string, int) {
	t.Helper()
	var e struct {
		Message    *string `json:"message"`
		StatusCode *int    `json:"statusCode"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Message == nil || e.StatusCode == nil {
		t.Fatalf("not the spec's error body (status %d): %s", r.status, r.body)
	}
	if *e.StatusCode != r.status {
		t.Fatalf("statusCode %d in body, %d on the wire", *e.StatusCode, r.status)
	}
	return *e.Message, *e.StatusCode
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// do sends a request with the given key ("" for none) and optional JSON body.
func (e *env) do(method, path, key string, body any) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case []byte:
			rd = bytes.NewReader(b)
		case string:
			rd = bytes.NewReader([]byte(b))
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				e.t.Fatal(err)
			}
			rd = bytes.NewReader(raw)
		}
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
