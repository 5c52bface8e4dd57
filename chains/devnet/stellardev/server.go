//go:build !nodevnet

package stellardev

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/network"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/protocols/horizon/base"
	"github.com/stellar/go-stellar-sdk/support/render/hal"
	"github.com/stellar/go-stellar-sdk/support/render/problem"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/veilhq/veil/persistence"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func envelopeHash(envB64 string) (string, error) {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(envB64, &env); err != nil {
		return "", err
	}
	h, err := network.HashTransactionInEnvelope(env, Passphrase)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h[:]), nil
}

func (d *Devnet) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.root)
	mux.HandleFunc("GET /accounts/{id}", d.getAccount)
	mux.HandleFunc("GET /accounts/{id}/transactions", d.accountTxs)
	mux.HandleFunc("GET /transactions", d.allTxs)
	mux.HandleFunc("GET /transactions/{hash}", d.getTx)
	mux.HandleFunc("POST /transactions", d.postTx)
	mux.HandleFunc("GET /claimable_balances", d.claimables)
	mux.HandleFunc("GET /friendbot", d.friendbot)
	mux.HandleFunc("GET /ledgers/{seq}", d.getLedger)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/hal+json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeProblem(w http.ResponseWriter, p problem.P) {
	w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func notFound(w http.ResponseWriter) {
	writeProblem(w, problem.P{Type: "https://stellar.org/horizon-errors/not_found", Title: "Resource Missing", Status: 404,
		Detail: "The resource at the url requested was not found. This usually occurs for one of two reasons: The url requested is not valid, or no data in our database could be found with the parameters provided."})
}

func badRequest(w http.ResponseWriter, detail string) {
	writeProblem(w, problem.P{Type: "https://stellar.org/horizon-errors/bad_request", Title: "Bad Request", Status: 400, Detail: detail})
}

func (d *Devnet) root(w http.ResponseWriter, r *http.Request) {
	var root hProtocol.Root
	root.HorizonVersion = "veil-devnet"
	root.StellarCoreVersion = "veil-devnet (no stellar-core)"
	l := int32(d.Ledger())
	root.HorizonSequence, root.CoreSequence, root.IngestSequence = l, l, uint32(l)
	root.NetworkPassphrase = Passphrase
	root.CurrentProtocolVersion = 22
	root.Links.Friendbot = &hal.Link{Href: d.url + "/friendbot{?addr}", Templated: true}
	writeJSON(w, 200, root)
}

func (d *Devnet) accountJSON(a *account) hProtocol.Account {
	var out hProtocol.Account
	out.ID, out.AccountID, out.PT = a.ID, a.ID, a.ID
	out.Sequence = a.Seq
	out.SequenceLedger = a.SeqLedger
	out.SubentryCount = a.Subentries
	out.NumSponsoring = a.Sponsoring
	out.NumSponsored = a.Sponsored
	out.Sponsor = a.Sponsor
	out.LastModifiedLedger = a.Modified
	out.Thresholds = hProtocol.AccountThresholds{}
	out.Signers = []hProtocol.Signer{{Weight: 1, Key: a.ID, Type: "ed25519_public_key"}}
	out.Data = map[string]string{}
	for k, v := range a.Data {
		out.Data[k] = b64(v)
	}
	keys := make([]string, 0, len(a.Lines))
	for k := range a.Lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := a.Lines[k]
		code, issuer, _ := strings.Cut(k, ":")
		typ := "credit_alphanum4"
		if len(code) > 4 {
			typ = "credit_alphanum12"
		}
		yes := true
		out.Balances = append(out.Balances, hProtocol.Balance{
			Balance: amount.StringFromInt64(l.Balance), Limit: amount.StringFromInt64(l.Limit),
			BuyingLiabilities: "0.0000000", SellingLiabilities: "0.0000000", IsAuthorized: &yes,
			Asset: base.Asset{Type: typ, Code: code, Issuer: issuer}, Sponsor: l.Sponsor,
		})
	}
	out.Balances = append(out.Balances, hProtocol.Balance{Balance: amount.StringFromInt64(a.Balance),
		BuyingLiabilities: "0.0000000", SellingLiabilities: "0.0000000", Asset: base.Asset{Type: "native"}})
	return out
}

func (d *Devnet) getAccount(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	a := d.st.accounts[r.PathValue("id")]
	var out hProtocol.Account
	if a != nil {
		out = d.accountJSON(a)
	}
	d.mu.Unlock()
	if a == nil {
		notFound(w)
		return
	}
	writeJSON(w, 200, out)
}

func (d *Devnet) txJSON(rec *txRecord) hProtocol.Transaction {
	var t hProtocol.Transaction
	t.ID, t.Hash = rec.Hash, rec.Hash
	t.PT = strconv.FormatInt(rec.PT, 10)
	t.Successful = rec.Successful
	t.Ledger = int32(rec.Ledger)
	t.LedgerCloseTime = rec.Created
	t.Account, t.FeeAccount = rec.Source, rec.Source
	t.AccountSequence = rec.Seq
	t.FeeCharged, t.MaxFee = rec.FeeCharged, rec.MaxFee
	t.OperationCount = rec.OpCount
	t.EnvelopeXdr, t.ResultXdr = rec.Envelope, rec.Result
	t.MemoType, t.Memo = rec.MemoType, rec.Memo
	var env xdr.TransactionEnvelope
	if xdr.SafeUnmarshalBase64(rec.Envelope, &env) == nil {
		for _, s := range env.Signatures() {
			t.Signatures = append(t.Signatures, b64(s.Signature))
		}
	}
	t.Links.Self = hal.Link{Href: d.url + "/transactions/" + rec.Hash}
	return t
}

func (d *Devnet) getTx(w http.ResponseWriter, r *http.Request) {
	rec, err := d.txByHash(r.Context(), strings.ToLower(r.PathValue("hash")))
	if err != nil {
		notFound(w)
		return
	}
	writeJSON(w, 200, d.txJSON(rec))
}

func (d *Devnet) accountTxs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d.mu.Lock()
	_, exists := d.st.accounts[id]
	d.mu.Unlock()
	if !exists {
		// Horizon answers for merged accounts too; a never-seen one is 404.
		recs, _ := d.store.List(r.Context(), tableAcctTxs, persistence.Query{Prefix: id + "/", Limit: 1})
		if len(recs) == 0 {
			notFound(w)
			return
		}
	}
	d.listTxs(w, r, tableAcctTxs, id+"/")
}

func (d *Devnet) allTxs(w http.ResponseWriter, r *http.Request) { d.listTxs(w, r, tableAllTxs, "") }

func (d *Devnet) listTxs(w http.ResponseWriter, r *http.Request, table, prefix string) {
	q := r.URL.Query()
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			badRequest(w, "limit: an integer from 1 to 200")
			return
		}
		limit = n
	}
	desc := q.Get("order") == "desc"
	if o := q.Get("order"); o != "" && o != "asc" && o != "desc" {
		badRequest(w, "order: asc or desc")
		return
	}
	includeFailed := q.Get("include_failed") == "true"
	query := persistence.Query{Prefix: prefix, Reverse: desc}
	if c := q.Get("cursor"); c != "" && c != "now" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 0 {
			badRequest(w, "cursor: a paging token")
			return
		}
		query.After = prefix + fmt.Sprintf("%020d", n)
	} else if c == "now" && !desc {
		query.After = prefix + "99999999999999999999"
	}
	var page hProtocol.TransactionsPage
	page.Embedded.Records = []hProtocol.Transaction{}
	last := q.Get("cursor")
	for len(page.Embedded.Records) < limit {
		query.Limit = limit - len(page.Embedded.Records)
		recs, err := d.store.List(r.Context(), table, query)
		if err != nil {
			writeProblem(w, problem.ServerError)
			return
		}
		for _, kv := range recs {
			query.After = kv.Key
			rec, err := d.txByHash(r.Context(), string(kv.Value))
			if err != nil {
				continue
			}
			last = strconv.FormatInt(rec.PT, 10)
			if !rec.Successful && !includeFailed {
				continue
			}
			page.Embedded.Records = append(page.Embedded.Records, d.txJSON(rec))
		}
		if len(recs) < query.Limit {
			break
		}
	}
	self := *r.URL
	next := *r.URL
	nq := next.Query()
	nq.Set("cursor", last)
	next.RawQuery = nq.Encode()
	page.Links.Self = hal.Link{Href: d.url + self.String()}
	page.Links.Next = hal.Link{Href: d.url + next.String()}
	writeJSON(w, 200, page)
}

// postTx is POST /transactions (form field tx, or a JSON body {"tx":…}).
func (d *Devnet) postTx(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	env := ""
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			Tx string `json:"tx"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		env = body.Tx
	} else if err := r.ParseForm(); err == nil {
		env = r.PostForm.Get("tx")
	}
	if env == "" {
		badRequest(w, "tx: a base64 XDR transaction envelope is required")
		return
	}
	rec, rej, err := d.submit(r.Context(), env)
	if err != nil {
		d.log.Error("submit", "err", err)
		writeProblem(w, problem.P{Type: "https://stellar.org/horizon-errors/timeout", Title: "Timeout", Status: 504, Detail: err.Error()})
		return
	}
	if rej == nil {
		writeJSON(w, 200, d.txJSON(rec))
		return
	}
	if rej.TxCode == "tx_malformed" && !rej.Included {
		writeProblem(w, problem.P{Type: "https://stellar.org/horizon-errors/transaction_malformed", Title: "Transaction Malformed", Status: 400,
			Detail: "Horizon could not decode the transaction envelope in this request.", Extras: map[string]any{"envelope_xdr": env}})
		return
	}
	resultXDR := ""
	if rec != nil {
		resultXDR = rec.Result
	} else {
		resultXDR, _ = xdr.MarshalBase64(rej.Result)
	}
	codes := map[string]any{"transaction": rej.TxCode}
	if len(rej.OpCodes) > 0 {
		codes["operations"] = rej.OpCodes
	}
	writeProblem(w, problem.P{
		Type: "https://stellar.org/horizon-errors/transaction_failed", Title: "Transaction Failed", Status: 400,
		Detail: "The transaction failed when submitted to the stellar network. The `extras.result_codes` field on this response contains further details.  Descriptions of each code can be found at: https://developers.stellar.org/docs/data/apis/horizon/api-reference/errors/result-codes/transactions",
		Extras: map[string]any{"envelope_xdr": env, "result_xdr": resultXDR, "result_codes": codes},
	})
}

func (d *Devnet) claimables(w http.ResponseWriter, r *http.Request) {
	claimant := r.URL.Query().Get("claimant")
	if claimant == "" {
		badRequest(w, "claimant: required on the devnet")
		return
	}
	var page hProtocol.ClaimableBalances
	page.Embedded.Records = []hProtocol.ClaimableBalance{}
	d.mu.Lock()
	var ids []string
	for id, c := range d.st.claimables {
		for _, cl := range c.Claimants {
			if cl == claimant {
				ids = append(ids, id)
				break
			}
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := d.st.claimables[id]
		cb := hProtocol.ClaimableBalance{BalanceID: c.ID, Asset: c.Asset, Amount: amount.StringFromInt64(c.Amount),
			Sponsor: c.Sponsor, LastModifiedLedger: c.Modified, PT: c.ID}
		for _, cl := range c.Claimants {
			cb.Claimants = append(cb.Claimants, hProtocol.Claimant{Destination: cl, Predicate: xdr.ClaimPredicate{Type: xdr.ClaimPredicateTypeClaimPredicateUnconditional}})
		}
		page.Embedded.Records = append(page.Embedded.Records, cb)
	}
	d.mu.Unlock()
	writeJSON(w, 200, page)
}

func (d *Devnet) friendbot(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("addr")
	rec, err := d.fund(r.Context(), addr)
	if err != nil {
		status := 400
		if errors.Is(err, context.Canceled) {
			status = 503
		}
		writeProblem(w, problem.P{Type: "https://stellar.org/horizon-errors/bad_request", Title: "Bad Request", Status: status, Detail: err.Error()})
		return
	}
	writeJSON(w, 200, d.txJSON(rec))
}
