package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// server is a real API on a loopback listener, wired like httpapi's own
// end-to-end tests: bbolt on disk, the actor host, the software enclave,
// the builtin model, no chain connectors (tools that need a chain report
// errors).
type server struct {
	t     testing.TB
	url   string
	key   string
	store persistence.Store
}

func newServer(t testing.TB) *server {
	t.Helper()
	var root [32]byte
	root[0] = 9
	prov, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	host := host.NewHost(system, agent.Loader(agent.Deps{
		Store: st, Log: quiet, Keys: agent.EnclaveKeys(prov), Chains: agent.NoChains{},
		// The builtin planner (llm.Config's zero value) answers chat.
		Models:    func(p, key string) (llms.Model, error) { return llm.Config{}.Model(llm.Provider(p), key) },
		PublicURL: "http://veil.test",
	}), host.HostConfig{PassivateAfter: time.Minute}, quiet, nil)
	api := httpapi.New(httpapi.Config{Store: st, Agents: host, Logger: quiet, TEE: prov})
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
	return &server{t: t, url: srv.URL, key: key, store: st}
}

// newKey issues a key of another account.
func (s *server) newKey(account string) string {
	s.t.Helper()
	acc, err := apikey.EnsureAccount(context.Background(), s.store, account, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	k, err := apikey.Create(context.Background(), s.store, acc, false, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	return k
}

// fastRetry keeps retry tests quick.
var fastRetry = client.RetryPolicy{MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxRetryAfter: 5 * time.Second}

func (s *server) client(key string, opts ...client.Option) *client.Client {
	s.t.Helper()
	c, err := client.New(s.url, key, append([]client.Option{client.WithRetry(fastRetry)}, opts...)...)
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}
