//go:build !nodevnet

package solanadev

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

type rpcRequest struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func invalidParams(msg string) *rpcError {
	return &rpcError{Code: -32602, Message: "Invalid params: " + msg}
}

// serveRPC answers JSON-RPC 2.0 requests (single or batch) on POST, and
// GET /tx/<signature> as the devnet's explorer.
func (d *Devnet) serveRPC(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/tx/") {
		d.explorer(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "Used HTTP Method is not allowed. POST or OPTIONS is required", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	body = []byte(strings.TrimSpace(string(body)))
	if len(body) > 0 && body[0] == '[' {
		var reqs []rpcRequest
		if err := json.Unmarshal(body, &reqs); err != nil {
			_ = json.NewEncoder(w).Encode(rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: -32700, Message: "Parse error"}})
			return
		}
		out := make([]rpcResponse, len(reqs))
		for i, q := range reqs {
			out[i] = d.handle(r.Context(), q)
		}
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	var q rpcRequest
	if err := json.Unmarshal(body, &q); err != nil {
		_ = json.NewEncoder(w).Encode(rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: -32700, Message: "Parse error"}})
		return
	}
	_ = json.NewEncoder(w).Encode(d.handle(r.Context(), q))
}

func (d *Devnet) handle(ctx context.Context, q rpcRequest) rpcResponse {
	resp := rpcResponse{JSONRPC: "2.0", ID: q.ID}
	if resp.ID == nil {
		resp.ID = json.RawMessage("null")
	}
	res, err := d.dispatch(ctx, q.Method, q.Params)
	if err != nil {
		resp.Error = err
	} else {
		resp.Result = res
	}
	return resp
}

// params decodes the positional parameters ps into dst, in order; a
// *solana.PublicKey takes a base58 address. A parameter the request leaves
// out leaves its dst as it is, except an address, which is required.
func params(ps []json.RawMessage, dst ...any) *rpcError {
	for i, v := range dst {
		k, isKey := v.(*solanago.PublicKey)
		switch {
		case i >= len(ps) && isKey:
			return invalidParams("missing address")
		case i >= len(ps):
		case isKey:
			var s string
			if err := json.Unmarshal(ps[i], &s); err != nil {
				return invalidParams(err.Error())
			}
			var err error
			if *k, err = solanago.PublicKeyFromBase58(s); err != nil {
				return invalidParams("Invalid param: " + err.Error())
			}
		default:
			if err := json.Unmarshal(ps[i], v); err != nil {
				return invalidParams(err.Error())
			}
		}
	}
	return nil
}

func (d *Devnet) ctxValue(v any) any {
	return map[string]any{"context": map[string]any{"apiVersion": "2.1.0", "slot": d.Slot()}, "value": v}
}

func (d *Devnet) dispatch(ctx context.Context, method string, ps []json.RawMessage) (any, *rpcError) {
	switch method {
	case "getHealth":
		return "ok", nil
	case "getVersion":
		return map[string]any{"solana-core": "2.1.0-veil-devnet", "feature-set": 0}, nil
	case "getGenesisHash":
		return d.genesis.String(), nil
	case "getSlot", "getBlockHeight":
		return d.Slot(), nil
	case "getLatestBlockhash":
		d.mu.Lock()
		s := d.slotLocked()
		h := d.blockhash(s)
		d.mu.Unlock()
		return d.ctxValue(map[string]any{"blockhash": h.String(), "lastValidBlockHeight": s + blockhashWindow}), nil
	case "isBlockhashValid":
		var s string
		if err := params(ps, &s); err != nil {
			return nil, err
		}
		h, err := solanago.HashFromBase58(s)
		if err != nil {
			return nil, invalidParams("blockhash")
		}
		d.mu.Lock()
		_, ok := d.recentSlot(h)
		d.mu.Unlock()
		return d.ctxValue(ok), nil
	case "getMinimumBalanceForRentExemption":
		var n int
		if err := params(ps, &n); err != nil {
			return nil, err
		}
		if n < 0 || n > 10<<20 {
			return nil, invalidParams("data length")
		}
		return rentExempt(n), nil
	case "getBalance":
		var k solanago.PublicKey
		if err := params(ps, &k); err != nil {
			return nil, err
		}
		d.mu.Lock()
		var v uint64
		if a := d.accounts[k]; a != nil {
			v = a.Lamports
		}
		d.mu.Unlock()
		return d.ctxValue(v), nil
	case "getAccountInfo":
		var k solanago.PublicKey
		var opts struct {
			Encoding string `json:"encoding"`
		}
		if err := params(ps, &k, &opts); err != nil {
			return nil, err
		}
		d.mu.Lock()
		v := accountJSON(d.accounts[k], opts.Encoding)
		d.mu.Unlock()
		return d.ctxValue(v), nil
	case "getMultipleAccounts":
		// As getAccountInfo for up to 100 keys, null for each missing
		// one (wallet libraries such as @solana/pay read the sender and
		// the recipient this way).
		var ks []solanago.PublicKey
		var opts struct {
			Encoding string `json:"encoding"`
		}
		if err := params(ps, &ks, &opts); err != nil {
			return nil, err
		}
		if len(ks) > 100 {
			return nil, invalidParams("Too many inputs provided; max 100")
		}
		out := make([]any, len(ks))
		d.mu.Lock()
		for i, k := range ks {
			out[i] = accountJSON(d.accounts[k], opts.Encoding)
		}
		d.mu.Unlock()
		return d.ctxValue(out), nil
	case "getTokenAccountBalance":
		var k solanago.PublicKey
		if err := params(ps, &k); err != nil {
			return nil, err
		}
		v, e := d.tokenBalance(k)
		if e != nil {
			return nil, e
		}
		return d.ctxValue(v), nil
	case "requestAirdrop":
		var k solanago.PublicKey
		var lamports uint64
		if err := params(ps, &k, &lamports); err != nil {
			return nil, err
		}
		sig, e := d.Airdrop(ctx, k, lamports)
		if e != nil {
			return nil, asRPC(e)
		}
		return sig.String(), nil
	case "veilFund":
		var k solanago.PublicKey
		if err := params(ps, &k); err != nil {
			return nil, err
		}
		sig, e := d.Fund(ctx, k)
		if e != nil {
			return nil, asRPC(e)
		}
		return sig.String(), nil
	case "sendTransaction":
		var enc string
		var opts struct {
			Encoding      string `json:"encoding"`
			SkipPreflight bool   `json:"skipPreflight"`
		}
		if err := params(ps, &enc, &opts); err != nil {
			return nil, err
		}
		var raw []byte
		var derr error
		if opts.Encoding == "base64" {
			raw, derr = base64.StdEncoding.DecodeString(enc)
		} else {
			raw, derr = base58.Decode(enc)
		}
		if derr != nil {
			return nil, invalidParams("failed to decode the transaction: " + derr.Error())
		}
		sig, e := d.process(ctx, raw, opts.SkipPreflight)
		if e != nil {
			return nil, e
		}
		return sig.String(), nil
	case "getSignatureStatuses":
		var sigs []string
		if err := params(ps, &sigs); err != nil {
			return nil, err
		}
		out := make([]any, len(sigs))
		for i, s := range sigs {
			rec, err := d.tx(ctx, s)
			if err != nil {
				continue
			}
			st := map[string]any{"Ok": nil}
			if string(rec.Err) != "null" {
				st = map[string]any{"Err": rec.Err}
			}
			out[i] = map[string]any{"slot": rec.Slot, "confirmations": nil, "err": rec.Err, "status": st, "confirmationStatus": "finalized"}
		}
		return d.ctxValue(out), nil
	case "getSignaturesForAddress":
		var k solanago.PublicKey
		var opts struct {
			Limit  int    `json:"limit"`
			Before string `json:"before"`
			Until  string `json:"until"`
		}
		if err := params(ps, &k, &opts); err != nil {
			return nil, err
		}
		return d.signaturesFor(ctx, k, opts.Limit, opts.Before, opts.Until)
	case "getTransaction":
		var s string
		var opts struct {
			Encoding string `json:"encoding"`
		}
		if err := params(ps, &s, &opts); err != nil {
			return nil, err
		}
		rec, err := d.tx(ctx, s)
		if err != nil {
			return nil, nil // null: unknown signature
		}
		return d.txJSON(rec, opts.Encoding)
	}
	return nil, &rpcError{Code: -32601, Message: "Method not found"}
}

func (d *Devnet) tokenBalance(k solanago.PublicKey) (any, *rpcError) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.accounts[k]
	if a == nil {
		return nil, &rpcError{Code: -32602, Message: "Invalid param: could not find account"}
	}
	t, ok := decodeTokenAccount(a.Data)
	if !a.Owner.Equals(tokenProgram) || !ok {
		return nil, &rpcError{Code: -32602, Message: "Invalid param: not a Token account"}
	}
	dec := 0
	if m := d.accounts[t.Mint]; m != nil {
		if ms, ok := decodeMint(m.Data); ok {
			dec = int(ms.Decimals)
		}
	}
	return uiAmount(t.Amount, dec), nil
}

func asRPC(err error) *rpcError {
	if e, ok := err.(*rpcError); ok {
		return e
	}
	return &rpcError{Code: -32603, Message: "Internal error: " + err.Error()}
}

func uiAmount(amount uint64, dec int) map[string]any {
	s := chains.FormatAmount(new(big.Int).SetUint64(amount), dec)
	var f float64
	fmt.Sscan(s, &f)
	return map[string]any{"amount": u64s(amount), "decimals": dec, "uiAmount": f, "uiAmountString": s}
}

func (d *Devnet) tx(ctx context.Context, sig string) (*txRecord, error) {
	return jsonrec.Get[txRecord](ctx, d.store, tableTxs, sig)
}

func (d *Devnet) signaturesFor(ctx context.Context, k solanago.PublicKey, limit int, before, until string) (any, *rpcError) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	prefix := k.String() + "/"
	q := persistence.Query{Prefix: prefix, Reverse: true}
	if before != "" {
		rec, err := d.tx(ctx, before)
		if err != nil {
			return nil, invalidParams("before: unknown signature")
		}
		q.After = fmt.Sprintf("%s%020d", prefix, rec.Seq)
	}
	var untilSeq uint64
	if until != "" {
		rec, err := d.tx(ctx, until)
		if err != nil {
			return nil, invalidParams("until: unknown signature")
		}
		untilSeq = rec.Seq
	}
	out := []any{}
	for len(out) < limit {
		q.Limit = limit - len(out)
		recs, err := d.store.List(ctx, tableAddrSigs, q)
		if err != nil {
			return nil, &rpcError{Code: -32603, Message: err.Error()}
		}
		for _, kv := range recs {
			q.After = kv.Key
			rec, err := d.tx(ctx, string(kv.Value))
			if err != nil {
				continue
			}
			if untilSeq > 0 && rec.Seq <= untilSeq {
				return out, nil
			}
			out = append(out, map[string]any{"signature": rec.Signature, "slot": rec.Slot, "err": rec.Err, "memo": rec.Memo,
				"blockTime": rec.BlockTime, "confirmationStatus": "finalized"})
		}
		if len(recs) < q.Limit {
			break
		}
	}
	return out, nil
}

// accountJSON is an account as getAccountInfo answers it (nil: null).
func accountJSON(a *account, encoding string) any {
	if a == nil {
		return nil
	}
	data := []any{base64.StdEncoding.EncodeToString(a.Data), "base64"}
	if encoding == "base58" {
		data = []any{base58.Encode(a.Data), "base58"}
	}
	return map[string]any{"lamports": a.Lamports, "owner": a.Owner.String(), "data": data, "executable": a.Executable,
		"rentEpoch": uint64(18446744073709551615), "space": len(a.Data)}
}

func tokenJSON(ts []tokenBalance) []any {
	out := []any{}
	for _, t := range ts {
		out = append(out, map[string]any{"accountIndex": t.AccountIndex, "mint": t.Mint, "owner": t.Owner, "programId": t.ProgramID,
			"uiTokenAmount": uiAmount(t.Amount, t.Decimals)})
	}
	return out
}

func (d *Devnet) txJSON(rec *txRecord, encoding string) (any, *rpcError) {
	var txv any
	switch encoding {
	case "base64":
		txv = []any{base64.StdEncoding.EncodeToString(rec.Raw), "base64"}
	case "base58":
		txv = []any{base58.Encode(rec.Raw), "base58"}
	default:
		tx, err := decodeTx(rec.Raw)
		if err != nil {
			return nil, err
		}
		txv = tx
	}
	status := map[string]any{"Ok": nil}
	if string(rec.Err) != "null" {
		status = map[string]any{"Err": rec.Err}
	}
	return map[string]any{
		"slot": rec.Slot, "blockTime": rec.BlockTime, "version": "legacy", "transaction": txv,
		"meta": map[string]any{
			"err": rec.Err, "fee": rec.Fee, "preBalances": rec.Pre, "postBalances": rec.Post,
			"preTokenBalances": tokenJSON(rec.PreTok), "postTokenBalances": tokenJSON(rec.PostTok),
			"logMessages": rec.Logs, "status": status, "innerInstructions": []any{}, "rewards": []any{},
			"loadedAddresses": map[string]any{"writable": []any{}, "readonly": []any{}}, "computeUnitsConsumed": 0,
		},
	}, nil
}

// explorer answers GET /tx/<signature> with the transaction as JSON, so
// that transaction links resolve.
func (d *Devnet) explorer(w http.ResponseWriter, r *http.Request) {
	rec, err := d.tx(r.Context(), strings.TrimPrefix(r.URL.Path, "/tx/"))
	if err != nil {
		http.Error(w, "transaction not found on the solana devnet", http.StatusNotFound)
		return
	}
	v, rerr := d.txJSON(rec, "json")
	if rerr != nil {
		http.Error(w, rerr.Message, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
