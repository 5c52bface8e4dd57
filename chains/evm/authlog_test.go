//go:build !nodevnet

package evm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/chains/evm/evmtest"
)

// TestAuthorizationLogs: the fate of an authorization whose nonce is used
// comes from its log, searched in ranges no wider than Config.LogRange
// (here behind a node that refuses wider eth_getLogs ranges, as RPC
// providers do), each reported once:
//   - canceled by the payer's key (cancelAuthorization): failed, with the
//     canceling transaction and the reason;
//   - used by the payee many ranges after the block it was signed at:
//     confirmed, with that transaction, and no range over the cap asked;
//   - used, but no log in reach (the node hides it): no guess, no
//     settlement; the record is told once (a SettlementPending note under
//     chains.NoteKey), and once the log can be read it is confirmed, saying
//     it was found late.
func TestAuthorizationLogs(t *testing.T) {
	const logRange = 4
	d := startDevnet(t, chains.Base)
	cfg, _ := d.Config(chains.Base)
	node := newLogCapNode(t, cfg.RPCURL, logRange)
	cfg.RPCURL, cfg.LogRange = node.srv.URL, logRange
	e := newAuthEnv(t, cfg, "logs")
	validBefore := e.head.Add(time.Hour) // the chain stays before it

	// passes runs maintenance n times past validBefore by our clock.
	passes := func(t *testing.T, n int) {
		t.Helper()
		e.set(validBefore.Add(time.Second))
		for range n {
			if _, err := e.c.MaintainOnce(e.ctx, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	one := func(t *testing.T, key string, want chains.SettlementStatus, tx, reason string) {
		t.Helper()
		got := e.settled.Of(key)
		if len(got) != 1 || got[0].Status != want || got[0].TxHash != tx || got[0].AgentID != e.alice.ID || !strings.Contains(got[0].Reason, reason) {
			t.Fatalf("settlements %+v; want one %s (tx %s, reason with %q)", got, want, tx, reason)
		}
	}

	t.Run("canceled by the payer", func(t *testing.T) {
		key := "x402/logs-canceled"
		auth, _ := e.sign(t, key, "0.1", validBefore)
		tx := cancelAuthorization(t, e.c, auth, e.alice, e.bob)
		passes(t, 2)
		one(t, key, chains.SettlementFailed, tx, "canceled")
		if got := e.settled.Of(key)[0].Reason; !strings.Contains(got, "nothing was transferred") {
			t.Fatalf("reason %q does not say nothing was transferred", got)
		}
	})

	t.Run("used many ranges after it was signed", func(t *testing.T) {
		key := "x402/logs-far"
		auth, sig := e.sign(t, key, "0.1", validBefore)
		signedAt, err := e.c.Client().BlockNumber(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			h, err := e.c.Client().BlockNumber(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if h > signedAt+3*logRange {
				break
			}
			mustMined(t, e.c, mustFund(t, e.c, evmtest.NewAgent("logs-filler-"+string(rune('a'+i))).Address).TxHash)
		}
		tx := e.settle(t, key, auth, sig)
		refusedBefore := node.refused.Load()
		passes(t, 2)
		one(t, key, chains.SettlementConfirmed, tx, "")
		if n := node.refused.Load() - refusedBefore; n != 0 {
			t.Fatalf("%d eth_getLogs ranges over %d blocks asked", n, logRange)
		}
	})

	t.Run("used, no log in reach", func(t *testing.T) {
		key := "x402/logs-hidden"
		auth, sig := e.sign(t, key, "0.1", validBefore)
		tx := e.settle(t, key, auth, sig)
		node.hide.Store(true)
		passes(t, 3)
		if got := e.settled.Of(key); len(got) != 0 {
			t.Fatalf("settled %+v with no log to say how", got)
		}
		notes := e.settled.Of(chains.NoteKey(key))
		if len(notes) != 1 || notes[0].Status != chains.SettlementPending || notes[0].TxHash != "" || !strings.Contains(notes[0].Reason, "no transfer log was found") {
			t.Fatalf("notes %+v; want one pending note saying no log was found", notes)
		}
		node.hide.Store(false)
		passes(t, 2)
		one(t, key, chains.SettlementConfirmed, tx, "found on a later check")
		if got := e.settled.Of(chains.NoteKey(key)); len(got) != 1 {
			t.Fatalf("notes %+v after it was found; want the one", got)
		}
	})
}

// cancelAuthorization burns auth's nonce with cancelAuthorization, signed
// by payer's key (EIP-3009's CancelAuthorization) and submitted by
// submitter; the canceling transaction's hash.
func cancelAuthorization(t *testing.T, c *evm.Connector, auth chains.TransferAuthorization, payer, submitter *evmtest.Agent) string {
	t.Helper()
	token := common.HexToAddress(auth.Contract)
	domain := crypto.Keccak256(crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")),
		crypto.Keccak256([]byte(auth.Name)), crypto.Keccak256([]byte(auth.Version)), common.LeftPadBytes(auth.ChainID.Bytes(), 32),
		common.LeftPadBytes(token.Bytes(), 32))
	structHash := crypto.Keccak256(crypto.Keccak256([]byte("CancelAuthorization(address authorizer,bytes32 nonce)")),
		common.LeftPadBytes(payer.Address.Bytes(), 32), auth.Nonce[:])
	digest := crypto.Keccak256([]byte{0x19, 0x01}, domain, structHash)
	sig, err := crypto.Sign(digest, payer.Account)
	if err != nil {
		t.Fatal(err)
	}
	data := bindings.NewTestToken().PackCancelAuthorization(payer.Address, auth.Nonce, sig[64]+27, [32]byte(sig[:32]), [32]byte(sig[32:64]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := walletOf(t, c, submitter.Account).Send(ctx, token, nil, data)
	if err != nil {
		t.Fatalf("cancelAuthorization: %v", err)
	}
	if rc.Status != 1 {
		t.Fatalf("cancelAuthorization %s reverted", rc.TxHash.Hex())
	}
	return rc.TxHash.Hex()
}

// logCapNode forwards JSON-RPC to a real node, except eth_getLogs over a
// range wider than max blocks, which it refuses as RPC providers do
// (refused counts them), and, while hide is set, the logs of EIP-3009's
// authorization events, which it answers as none.
type logCapNode struct {
	srv     *httptest.Server
	hide    atomic.Bool
	refused atomic.Int64
}

func newLogCapNode(t testing.TB, target string, max uint64) *logCapNode {
	t.Helper()
	used := crypto.Keccak256Hash([]byte("AuthorizationUsed(address,bytes32)")).Hex()
	n := &logCapNode{}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params []struct {
				FromBlock string `json:"fromBlock"`
				ToBlock   string `json:"toBlock"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "eth_getLogs" && len(m.Params) == 1 {
			from, err1 := hexutil.DecodeUint64(m.Params[0].FromBlock)
			to, err2 := hexutil.DecodeUint64(m.Params[0].ToBlock)
			answer := func(v map[string]any) {
				v["jsonrpc"], v["id"] = "2.0", m.ID
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(v)
			}
			switch {
			case err1 != nil || err2 != nil || to < from || to-from+1 > max:
				n.refused.Add(1)
				answer(map[string]any{"error": map[string]any{"code": -32005, "message": "query exceeds max block range " + hexutil.EncodeUint64(max)}})
				return
			case n.hide.Load() && bytes.Contains(bytes.ToLower(body), []byte(strings.ToLower(used))):
				answer(map[string]any{"result": []any{}})
				return
			}
		}
		forwardRPC(w, target, body)
	}))
	t.Cleanup(n.srv.Close)
	return n
}
