//go:build !nodevnet

package evm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// lackingNode serves JSON-RPC by forwarding to a real node, except the
// methods in lacks, which it answers as a node without them does
// (EIP-1474 -32004 "Method … is not supported", Hardhat's wording), in
// single calls and in batches. calls counts the refused requests.
type lackingNode struct {
	srv   *httptest.Server
	lacks map[string]bool
	calls atomic.Int64
}

func newLackingNode(t testing.TB, target string, lacks ...string) *lackingNode {
	t.Helper()
	n := &lackingNode{lacks: map[string]bool{}}
	for _, m := range lacks {
		n.lacks[m] = true
	}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		refuse := func(m msg) map[string]any {
			n.calls.Add(1)
			return map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32004, "message": "Method " + m.Method + " is not supported"}}
		}
		var one msg
		var many []msg
		switch {
		case json.Unmarshal(body, &one) == nil && n.lacks[one.Method]:
			_ = json.NewEncoder(w).Encode(refuse(one))
			return
		case json.Unmarshal(body, &many) == nil:
			for _, m := range many {
				if n.lacks[m.Method] {
					out := []any{}
					for _, m := range many {
						out = append(out, refuse(m))
					}
					_ = json.NewEncoder(w).Encode(out)
					return
				}
			}
		}
		forwardRPC(w, target, body)
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// forwardRPC sends a JSON-RPC body to the node at target and copies its
// answer to w.
func forwardRPC(w http.ResponseWriter, target string, body []byte) {
	resp, err := http.Post(target, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
