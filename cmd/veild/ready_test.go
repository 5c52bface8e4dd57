package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/ready"
)

// fakeHead is a connector whose head is whatever the test says.
type fakeHead struct {
	chains.Connector
	height uint64
	at     time.Time
	err    error
}

func (f fakeHead) Head(context.Context) (uint64, time.Time, error) { return f.height, f.at, f.err }

// fakeDev is a development node (chains/evm Connector.Development).
type fakeDev struct{ fakeHead }

func (fakeDev) Development(context.Context) bool { return true }

func TestChainCheck(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tests := []struct {
		name string
		conn chains.Connector
		real bool
		want string // "" = ready
	}{
		{"fresh real head", fakeHead{height: 9, at: now.Add(-10 * time.Second)}, true, ""},
		{"stale real head", fakeHead{height: 9, at: now.Add(-10 * time.Minute)}, true, "base head 9 is 10m0s old"},
		{"stale devnet head is fine", fakeHead{height: 9, at: now.Add(-10 * time.Hour)}, false, ""},
		{"head without a time", fakeHead{height: 9}, true, ""},
		// An automining development node (Hardhat, Anvil, geth --dev,
		// chain ids 31337 and 1337) has no block without a transaction.
		{"stale head of a development node", fakeDev{fakeHead{height: 9, at: now.Add(-10 * time.Hour)}}, true, ""},
		{"node down", fakeHead{err: errors.New("dial tcp 127.0.0.1:1: connection refused")}, true, "base node does not answer: dial tcp"},
		{"node down on a devnet", fakeHead{err: errors.New("connection refused")}, false, "base node does not answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := chainCheck(chains.Base, tc.conn, tc.real, 2*time.Minute, clock)
			if c.Name() != "chain/base" {
				t.Fatalf("name %q", c.Name())
			}
			err := c.Check(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("not ready: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A closed store, a failing enclave or a dead chain node each make
// /readyz 503 and name the check; with all well it is 200.
func TestReadinessChecks(t *testing.T) {
	open := func(t *testing.T) persistence.Store {
		s, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	okEnclave := func(context.Context) error { return nil }
	tests := []struct {
		name    string
		closed  bool
		enclave func(context.Context) error
		nodeErr error
		failing []string
	}{
		{name: "ready", enclave: okEnclave},
		{name: "store closed", closed: true, enclave: okEnclave, failing: []string{"store"}},
		{name: "enclave down", enclave: func(context.Context) error { return errors.New("dstack socket: no such file") }, failing: []string{"enclave"}},
		{name: "node down", enclave: okEnclave, nodeErr: errors.New("connection refused"), failing: []string{"chain/base"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := open(t)
			if tc.closed {
				_ = store.Close()
			} else {
				t.Cleanup(func() { _ = store.Close() })
			}
			set := &chainSet{refs: map[chains.ID]*chainactor.Ref{}, real: map[chains.ID]bool{}}
			cfg := config{Store: "bolt", Enclave: "software", ReadyTimeout: time.Second, ReadyHeadAge: time.Minute}
			c := readiness(cfg, store, set, tc.enclave, nil, time.Now)
			c.Add(chainCheck(chains.Base, fakeHead{height: 1, err: tc.nodeErr}, false, time.Minute, time.Now))
			rec := httptest.NewRecorder()
			c.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			var rep ready.Report
			if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			wantCode := http.StatusOK
			if len(tc.failing) > 0 {
				wantCode = http.StatusServiceUnavailable
			}
			if rec.Code != wantCode || strings.Join(rep.Failing, ",") != strings.Join(tc.failing, ",") {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			// The built-in checks are there (others may be added beside them).
			names := map[string]bool{}
			for _, c := range rep.Checks {
				names[c.Name] = true
			}
			for _, want := range []string{"store", "enclave", "chain/base"} {
				if !names[want] {
					t.Fatalf("no %s check: %s", want, rec.Body)
				}
			}
		})
	}
}

// The real server: /readyz on both listeners lists the store, the enclave
// and the six chains on their devnets, all passing; /health stays ok.
func TestReadyzServed(t *testing.T) {
	p := start(t, t.TempDir())
	for _, addr := range []string{p.addr, p.metrics} {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		var rep ready.Report
		err = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !rep.Ready {
			t.Fatalf("%s/readyz: %d %+v %v", addr, resp.StatusCode, rep, err)
		}
		names := map[string]bool{}
		for _, c := range rep.Checks {
			names[c.Name] = c.OK
		}
		for _, want := range []string{"store", "enclave", "chain/horizen", "chain/ethereum", "chain/polygon", "chain/base", "chain/stellar", "chain/solana"} {
			if !names[want] {
				t.Fatalf("%s/readyz: check %s missing or failing: %+v", addr, want, rep.Checks)
			}
		}
	}
}
