//go:build !nodevnet

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/internal/faultproxy"
	"github.com/veilhq/veil/runtime/ready"
)

// stellarBehind starts a Stellar devnet of its own (its own genesis) and
// returns it with its host:port.
func stellarBehind(t *testing.T) (*stellardev.Devnet, string) {
	t.Helper()
	d, err := stellardev.Start(context.Background(), stellardev.Options{Dir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	u, _ := url.Parse(d.URL())
	return d, u.Host
}

// stellarEnv points veild's Stellar at Horizon through proxy (a "real"
// network: VEIL_RPC_STELLAR), with the devnets' passphrase and USDC.
func stellarEnv(proxy *faultproxy.Proxy) []string {
	return []string{
		"VEIL_RPC_STELLAR=http://" + proxy.Addr(),
		"VEIL_STELLAR_PASSPHRASE=" + stellardev.Passphrase,
		"VEIL_STELLAR_ASSETS=USDC=" + stellardev.IssuerKey.Address(),
		"VEIL_STELLAR_FRIENDBOT=1",
	}
}

// readyz is GET /readyz: its status and report.
func readyz(t *testing.T, addr string) (int, ready.Report) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep ready.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, rep
}

// checkError is the error of the named readiness check ("" when it
// passed or is absent).
func checkError(rep ready.Report, name string) (string, bool) {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c.Error, c.OK
		}
	}
	return "", false
}

// waitCheck polls /readyz until the named check's outcome is ok and, when
// failing, its error holds want.
func waitCheck(t *testing.T, addr, name string, ok bool, want string) ready.Report {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, rep := readyz(t, addr)
		msg, passed := checkError(rep, name)
		if passed == ok && (ok || strings.Contains(msg, want)) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: ok=%v %q, want ok=%v %q; report %+v", name, passed, msg, ok, want, rep)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// getStatus is GET /agent/:id/status?chain=: status, the body's message,
// and the Retry-After header.
func getStatus(t *testing.T, base, key, id, chain string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/agent/"+id+"/status?chain="+chain, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body struct {
		Message    string
		StatusCode int
	}
	_ = json.Unmarshal(raw, &body)
	if resp.StatusCode != 200 && body.StatusCode != resp.StatusCode {
		t.Fatalf("status %d with body %s: not {message, statusCode}", resp.StatusCode, raw)
	}
	return resp.StatusCode, body.Message, resp.Header.Get("Retry-After")
}

// Stellar's Horizon does not answer when veild starts: veild serves, the
// chain is degraded (its operations 503 naming it, with Retry-After;
// /readyz names it), the other chains and the agents serve, and the chain
// serves once Horizon answers, with no restart. Then Horizon serves a
// fresh network under the same passphrase (a reset): veild refuses the
// chain (503, /readyz, the log's alert, veil_chain_state) instead of
// showing its empty balances.
func TestStellarDownAtStartThenReset(t *testing.T) {
	proxy, err := faultproxy.Listen("127.0.0.1:0") // refuses until SetTarget
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	p := startEnv(t, t.TempDir(), stellarEnv(proxy))
	key := keyRE.FindString(p.stdout.String())
	base := "http://" + p.addr

	code, rep := readyz(t, p.addr)
	msg, ok := checkError(rep, "chain/stellar")
	if code != 503 || ok || !strings.Contains(msg, "chain stellar is unavailable") || !strings.Contains(msg, "degraded") {
		t.Fatalf("/readyz %d, chain/stellar %v %q", code, ok, msg)
	}
	for _, other := range []string{"chain/horizen", "chain/ethereum", "chain/polygon", "chain/base", "chain/solana", "store", "enclave"} {
		if _, ok := checkError(rep, other); !ok {
			t.Fatalf("%s fails while only Stellar is down: %+v", other, rep)
		}
	}

	// Every agent serves: one on all chains is created (its Stellar
	// registration waits), and reads its other chains.
	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	cmsg := walletsig.CreateMessage("degraded", "all", wallet, time.Now())
	status, body := call(t, "POST", base+"/agent/create", key, map[string]string{
		"name": "degraded", "chain": "all", "wallet": wallet, "signature": walletsig.SignEVM(owner, cmsg), "message": cmsg,
	})
	if status != 201 {
		t.Fatalf("create while Stellar is down = %d %s", status, body)
	}
	var agent struct{ ID string }
	_ = json.Unmarshal(body, &agent)
	if code, msg, _ := getStatus(t, base, key, agent.ID, "base"); code != 200 {
		t.Fatalf("status on base = %d %s", code, msg)
	}
	code, msg, retry := getStatus(t, base, key, agent.ID, "stellar")
	if code != 503 || !strings.Contains(msg, "chain stellar") || retry == "" {
		t.Fatalf("status on the degraded chain = %d %q, Retry-After %q", code, msg, retry)
	}
	if strings.Contains(msg, proxy.Addr()) {
		t.Fatalf("the client's message shows the node's URL: %q", msg)
	}

	// Horizon answers: the chain serves, no restart.
	first, firstAddr := stellarBehind(t)
	proxy.SetTarget(firstAddr)
	waitCheck(t, p.addr, "chain/stellar", true, "")
	if code, msg, _ := getStatus(t, base, key, agent.ID, "stellar"); code != 200 {
		t.Fatalf("status on stellar after recovery = %d %s", code, msg)
	}

	// A fresh network behind the same URL and passphrase: refused.
	_, secondAddr := stellarBehind(t)
	_ = first.Close() // its connections end; new ones reach the fresh network
	proxy.SetTarget(secondAddr)
	waitCheck(t, p.addr, "chain/stellar", false, "reset")
	code, msg, _ = getStatus(t, base, key, agent.ID, "stellar")
	if code != 503 || !strings.Contains(msg, "chain stellar") || !strings.Contains(msg, "reset") {
		t.Fatalf("status on the reset chain = %d %q", code, msg)
	}
	if code, msg, _ := getStatus(t, base, key, agent.ID, "ethereum"); code != 200 {
		t.Fatalf("status on ethereum while Stellar is reset = %d %s", code, msg)
	}
	fams := scrape(t, p.metrics)
	reset := false
	for _, m := range fams["veil_chain_state"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		reset = reset || labels["chain"] == "stellar" && labels["state"] == "reset" && m.GetGauge().GetValue() == 1
	}
	if !reset {
		t.Fatalf("veil_chain_state has no stellar reset series: %v", fams["veil_chain_state"])
	}
	if logs := p.stop(t, syscall.SIGTERM); !strings.Contains(logs, "ALERT chain reset") {
		t.Fatalf("no alert in the log:\n%s", logs)
	}
}

// --require-all-chains keeps the strict start: a chain whose node does not
// answer stops veild with an error naming it.
func TestRequireAllChainsRefusesToStart(t *testing.T) {
	proxy, err := faultproxy.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, veildBin, "serve", "--addr", "127.0.0.1:0", "--devnet-base-port", "0", "--metrics-addr", "off", "--require-all-chains",
		"--data", filepath.Join(t.TempDir(), "data"))
	cmd.Env = append(cmd.Environ(), stellarEnv(proxy)...)
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), "connect stellar") {
		t.Fatalf("veild --require-all-chains with Stellar down: %v\n%s", err, out)
	}
}
