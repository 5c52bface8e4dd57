package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/internal/failpoint"
)

// post sends body and returns the status, or 0 when the connection broke
// (the server died mid-request).
func post(t *testing.T, url, key string, body any) (int, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// The real binary killed at each create failpoint (VEIL_FAILPOINTS, exit
// 137) while a client waits for its create: after a restart, the client's
// retry of the same signed body gets the agent (200) when it was stored, or
// creates it (201) when it was not; a second account presenting the same
// signature is refused with 400 and gets no agent.
func TestCreateRetryAfterCrashAtEachFailpoint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored bool
	}{
		{"create.before-store", false},
		{"create.after-store", true},
		{"create.after-register", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			t.Setenv(failpoint.EnvNames, tc.name+"=1")
			p := start(t, data)
			key := keyRE.FindString(p.stdout.String())
			owner, _ := crypto.GenerateKey()
			wallet := walletsig.EVMAddress(&owner.PublicKey)
			msg := walletsig.CreateMessage("phoenix", "ethereum", wallet, time.Now())
			body := map[string]string{"name": "phoenix", "chain": "ethereum", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg}

			if status, out := post(t, "http://"+p.addr+"/agent/create", key, body); status != 0 {
				t.Fatalf("create with %s armed answered %d %s", tc.name, status, out)
			}
			// Read stderr to its end (the process exited), then reap it.
			for line := range p.stderr.lines {
				p.stderr.all.WriteString(line + "\n")
			}
			err := p.cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != failpoint.ExitCode {
				t.Fatalf("veild exit = %v, want status %d", err, failpoint.ExitCode)
			}
			if !strings.Contains(p.stderr.all.String(), failpoint.Marker+tc.name) {
				t.Fatalf("failpoint %s did not fire; stderr:\n%s", tc.name, p.stderr.all.String())
			}

			// A second account, made while the server is down.
			out, err := exec.Command(veildBin, "apikey", "create", "--account", "other", "--data", data).Output()
			if err != nil {
				t.Fatalf("apikey create: %v", err)
			}
			otherKey := strings.TrimSpace(string(out))

			t.Setenv(failpoint.EnvNames, "")
			p2 := start(t, data)
			want := 200
			if !tc.stored {
				want = 201
			}
			status, resp := post(t, "http://"+p2.addr+"/agent/create", key, body)
			if status != want {
				t.Fatalf("retry after the restart = %d %s; want %d", status, resp, want)
			}
			var got struct{ ID, Name, Chain, Address, MetaAddress string }
			_ = json.Unmarshal(resp, &got)
			_, list := call(t, "GET", "http://"+p2.addr+"/agents", key, nil)
			var agents []struct{ ID string }
			_ = json.Unmarshal(list, &agents)
			if len(agents) != 1 || agents[0].ID != got.ID || got.Name != "phoenix" || got.Address == "" || got.MetaAddress == "" {
				t.Fatalf("retry answered %s; the account has %s", resp, list)
			}
			if status, again := post(t, "http://"+p2.addr+"/agent/create", key, body); status != 200 || !bytes.Contains(again, []byte(got.ID)) {
				t.Fatalf("second retry = %d %s", status, again)
			}
			status, resp = post(t, "http://"+p2.addr+"/agent/create", otherKey, body)
			if status != 400 || bytes.Contains(resp, []byte(got.ID)) {
				t.Fatalf("other account = %d %s", status, resp)
			}
			if _, list := call(t, "GET", "http://"+p2.addr+"/agents", otherKey, nil); strings.TrimSpace(string(list)) != "[]" {
				t.Fatalf("other account's agents: %s", list)
			}
			p2.stop(t, syscall.SIGTERM)
		})
	}
}
