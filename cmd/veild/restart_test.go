package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
)

func call(t *testing.T, method, url, key string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// An agent created before a restart has the same addresses after it: keys
// are derived from the sealed root, never stored.
func TestAgentSurvivesRestartWithSameKeys(t *testing.T) {
	data := t.TempDir()
	p := start(t, data)
	key := keyRE.FindString(p.stdout.String())
	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	msg := walletsig.CreateMessage("durable", "all", wallet, time.Now())
	status, body := call(t, "POST", "http://"+p.addr+"/agent/create", key, map[string]string{
		"name": "durable", "chain": "all", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
	})
	if status != 201 {
		t.Fatalf("create = %d %s", status, body)
	}
	var created struct{ ID, Address string }
	_ = json.Unmarshal(body, &created)
	_, before := call(t, "GET", "http://"+p.addr+"/agent/"+created.ID, key, nil)
	// Steps 5 and 7 are real on the EVM devnet: the faucet funded the
	// agent's first chain (horizen), so its status shows a balance.
	status, body = call(t, "GET", "http://"+p.addr+"/agent/"+created.ID+"/status", key, nil)
	var st struct {
		Balance string
		Chain   string
		Address string
	}
	_ = json.Unmarshal(body, &st)
	if status != 200 || st.Chain != "horizen" || st.Address != created.Address || st.Balance == "" || st.Balance == "0" {
		t.Fatalf("status = %d %s", status, body)
	}
	// Every chain is live on its devnet: the agent's balance on each.
	for _, chain := range []string{"ethereum", "stellar", "solana"} {
		status, body = call(t, "POST", "http://"+p.addr+"/agent/"+created.ID+"/chat", key, map[string]string{"message": "what's my balance on " + chain})
		var reply struct {
			ToolCalls []struct{ Name, Status, Detail string }
		}
		_ = json.Unmarshal(body, &reply)
		t.Logf("%s: %s", chain, reply.ToolCalls[0].Detail)
		if status != 200 || len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Status != "success" || strings.Contains(reply.ToolCalls[0].Detail, `"native":"0"`) {
			t.Fatalf("balance on %s = %d %s", chain, status, body)
		}
	}
	p.stop(t, syscall.SIGTERM)

	fi, err := os.Stat(filepath.Join(data, "enclave", "root.seal"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("seal file mode %v", fi.Mode().Perm())
	}

	p2 := start(t, data)
	status, after := call(t, "GET", "http://"+p2.addr+"/agent/"+created.ID, key, nil)
	if status != 200 || !bytes.Equal(before, after) {
		t.Fatalf("after restart %d:\n%s\nbefore:\n%s", status, after, before)
	}
	p2.stop(t, syscall.SIGTERM)
}
