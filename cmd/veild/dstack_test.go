package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/enclave/dstack/dstacktest"
)

// veild with --enclave dstack derives its keys from the guest agent on the
// Unix socket (a local server speaking dstack's API) and attests with TDX
// quotes that carry the report data.
func TestServeWithDstackEnclave(t *testing.T) {
	var app [32]byte
	app[0] = 9
	guest := dstacktest.New(t, dstacktest.Config{AppKey: app})
	p := start(t, t.TempDir(), "--enclave", "dstack", "--dstack-socket", guest.Socket())
	key := keyRE.FindString(p.stdout.String())

	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	msg := walletsig.CreateMessage("in-tdx", "base", wallet, time.Now())
	status, body := call(t, "POST", "http://"+p.addr+"/agent/create", key, map[string]string{
		"name": "in-tdx", "chain": "base", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
	})
	if status != 201 {
		t.Fatalf("create = %d %s", status, body)
	}
	var a struct{ ID string }
	_ = json.Unmarshal(body, &a)

	status, body = call(t, "GET", "http://"+p.addr+"/tee/info", key, nil)
	var info struct{ Provider string }
	_ = json.Unmarshal(body, &info)
	if status != 200 || info.Provider != "dstack" {
		t.Fatalf("tee/info = %d %s", status, body)
	}
	status, body = call(t, "GET", "http://"+p.addr+"/tee/attest/"+a.ID+"?nonce=n-1", key, nil)
	var att struct {
		QuoteType, Quote, ReportData, Nonce string
	}
	_ = json.Unmarshal(body, &att)
	if status != 200 || att.QuoteType != "tdx" || att.Quote == "" || att.Nonce != "n-1" || len(att.ReportData) != 64 {
		t.Fatalf("attest = %d %s", status, body)
	}
	p.stop(t, syscall.SIGTERM)
}

func TestDstackSocketMissingIsAClearStartupError(t *testing.T) {
	cmd := exec.Command(veildBin, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--enclave", "dstack",
		"--dstack-socket", "/nonexistent/dstack.sock", "--metrics-addr", "off", "--devnet-base-port", "0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("serve started without a guest agent")
	}
	if !strings.Contains(string(out), "/nonexistent/dstack.sock") {
		t.Fatalf("error does not name the socket: %s", out)
	}
}
