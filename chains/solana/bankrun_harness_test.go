//go:build !nodevnet

package solana_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	bin "github.com/gagliardetto/binary"
	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/mr-tron/base58"

	"github.com/veilhq/veil/chains"
)

// The differential harness of TestBankrunDifferential (issue 35 item 7,
// docs/chains-solana.md "The real runtime: bankrun"): every transaction
// sent to Veil's devnet through proxy is also executed by the real Solana
// runtime (solana-bankrun, testdata/bankrun/harness.mjs) from the same
// account state, and both outcomes are recorded.
//
// bankrun has its own blockhash, so the transaction bankrun runs is the
// devnet's with only the recent blockhash replaced by bankrun's and signed
// again by the same keys: the enclave under the same signing request,
// recorded by recSigner (a connector's transactions), or a test's own keys
// (wallets).

// bankrunDir holds package.json, package-lock.json and harness.mjs
// (node_modules is not committed: `npm ci` installs it).
const bankrunDir = "testdata/bankrun"

// bankrun is the running harness: one request per line.
type bankrun struct {
	t   *testing.T
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	log *bytes.Buffer
	// restarts counts the harnesses that died and were started again:
	// solana-bankrun since 0.3 sporadically dies of a segmentation fault in
	// its native module (solana-program-library reverted to 0.2.0 for it,
	// solana-program-library#6567); the harness holds no state between
	// requests that the Go side does not give it again, so a new one
	// answers the same request.
	restarts int
}

// maxRestarts bounds the restarts in one test.
const maxRestarts = 3

// errRestarted reports that the harness died during the request and a new
// one was started: the caller builds the request again (a transaction's
// twin needs the new bank's blockhash).
var errRestarted = errors.New("the bankrun harness died and was started again")

// startBankrun starts node harness.mjs, running `npm ci` first when
// node_modules lacks the packages. Without node or npm it skips, except
// under CI=true, where it fails: CI must run the differential test.
func startBankrun(t *testing.T) *bankrun {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the bankrun harness loads the linux-x64 native module (solana-bankrun-linux-x64-gnu); this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed: CI must run the solana-bankrun differential test", bin)
			}
			t.Skipf("%s is not installed (CI=true makes this a failure)", bin)
		}
	}
	for _, p := range []string{"solana-bankrun", "solana-bankrun-linux-x64-gnu", "@solana/web3.js"} {
		if _, err := os.Stat(filepath.Join(bankrunDir, "node_modules", p, "package.json")); err != nil {
			cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
			cmd.Dir = bankrunDir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("npm ci in %s: %v\n%s", bankrunDir, err, out)
			}
			break
		}
	}
	b := &bankrun{t: t}
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		_ = b.in.Close() // the harness ends at the end of its input
		_ = b.cmd.Wait()
	})
	return b
}

// restarted is the number of restarts so far.
func (b *bankrun) restarted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.restarts
}

// kill ends the harness as a crash would (the restart's test).
func (b *bankrun) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

func (b *bankrun) start() error {
	cmd := exec.Command("node", "harness.mjs")
	cmd.Dir = bankrunDir
	cmd.Env = append(os.Environ(), "RUST_LOG=error")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	b.cmd, b.in, b.out, b.log = cmd, in, bufio.NewReaderSize(out, 1<<20), &bytes.Buffer{}
	cmd.Stderr = b.log
	return cmd.Start()
}

// call sends req and decodes the answer into resp. When the harness dies
// it is started again (up to maxRestarts in a test): a blockhash request
// is asked again, an exec answers errRestarted.
func (b *bankrun) call(req, resp any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	for {
		died, err := b.roundTrip(line, resp)
		if died == nil {
			return err
		}
		if b.restarts >= maxRestarts {
			return fmt.Errorf("bankrun harness died %d times; the last: %v", b.restarts+1, died)
		}
		b.restarts++
		b.t.Logf("bankrun harness died (%v); starting a new one (%d of at most %d)", died, b.restarts, maxRestarts)
		if err := b.start(); err != nil {
			return err
		}
		if m, ok := req.(map[string]any); !ok || m["op"] != "blockhash" {
			return errRestarted
		}
	}
}

// roundTrip is one request; died is set when the harness ended.
func (b *bankrun) roundTrip(line []byte, resp any) (died, err error) {
	if _, err := b.in.Write(append(line, '\n')); err != nil {
		_ = b.in.Close()
		return fmt.Errorf("write: %v (exit: %v; stderr: %s)", err, b.cmd.Wait(), b.log.String()), nil
	}
	for {
		l, err := b.out.ReadString('\n')
		if err != nil {
			_ = b.in.Close()
			return fmt.Errorf("read: %v (exit: %v; stderr: %s)", err, b.cmd.Wait(), b.log.String()), nil
		}
		if rest, ok := strings.CutPrefix(l, "@@ "); ok {
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal([]byte(rest), &e) == nil && e.Error != "" {
				return nil, fmt.Errorf("bankrun harness: %s", e.Error)
			}
			return nil, json.Unmarshal([]byte(rest), resp)
		}
	}
}

func (b *bankrun) blockhash() (solanago.Hash, error) {
	var r struct {
		Blockhash string `json:"blockhash"`
	}
	if err := b.call(map[string]any{"op": "blockhash"}, &r); err != nil {
		return solanago.Hash{}, err
	}
	return solanago.HashFromBase58(r.Blockhash)
}

// acct is an account's state as both sides report it.
type acct struct {
	Address    string `json:"address"`
	Exists     bool   `json:"exists"`
	Lamports   string `json:"lamports"`
	Owner      string `json:"owner"`
	Data       string `json:"data"` // base64
	Executable bool   `json:"executable,omitempty"`
}

// same says whether two states are the same account: an account without
// lamports does not exist (the runtime deletes it).
func (a acct) same(b acct) bool {
	if a.Lamports == "0" && b.Lamports == "0" {
		return true
	}
	return a.Lamports == b.Lamports && a.Owner == b.Owner && a.Data == b.Data
}

func (a acct) String() string {
	if a.Lamports == "0" {
		return "none"
	}
	d, _ := base64.StdEncoding.DecodeString(a.Data)
	return fmt.Sprintf("%s lamports, owner %s, %d bytes %x", a.Lamports, a.Owner, len(d), d)
}

type execResult struct {
	Err  *string  `json:"err"`
	Logs []string `json:"logs"`
	Post []acct   `json:"post"`
}

// recSigner signs as Signer does and records every request for a Solana
// message, so that the proxy can have the same key sign the bankrun twin
// of that message under the same request (same key, spend and fee).
type recSigner struct {
	chains.Signer
	mu   sync.Mutex
	reqs map[string][]chains.SignRequest // by message
}

func (s *recSigner) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	sig, err := s.Signer.Sign(ctx, req)
	if err == nil && req.Key.Chain == chains.Solana {
		s.mu.Lock()
		s.reqs[string(req.Payload)] = append(s.reqs[string(req.Payload)], req)
		s.mu.Unlock()
	}
	return sig, err
}

// outcome is one transaction as both runtimes saw it.
type outcome struct {
	label     string
	signature string
	skip      bool     // skipPreflight
	devnetErr string   // "" = success; the TransactionError's Display
	bankErr   string   // same, from bankrun
	keys      []string // the accounts compared (the programs left out)
	pre       []acct
	devnet    []acct
	bank      []acct
	logs      []string
}

// diffs lists what differs between the two runtimes.
func (o outcome) diffs() []string {
	var d []string
	if o.devnetErr != o.bankErr {
		d = append(d, fmt.Sprintf("result: devnet %q, bankrun %q", orOK(o.devnetErr), orOK(o.bankErr)))
	}
	for i, k := range o.keys {
		if !o.devnet[i].same(o.bank[i]) {
			d = append(d, fmt.Sprintf("account %s: before %s; devnet after %s; bankrun after %s", k, o.pre[i], o.devnet[i], o.bank[i]))
		}
	}
	return d
}

func orOK(s string) string {
	if s == "" {
		return "ok"
	}
	return s
}

// proxy is the connector's RPC endpoint: it forwards every call to the
// devnet and runs each sendTransaction in bankrun too.
type proxy struct {
	t      *testing.T
	devURL string
	dev    *rpc.Client
	b      *bankrun
	signer *recSigner
	srv    *httptest.Server

	mu       sync.Mutex
	label    string
	tamper   bool                                       // the control: bankrun's fee payer gets one lamport more
	keys     map[solanago.PublicKey]solanago.PrivateKey // wallets' keys
	outcomes []outcome
	errs     []error
}

func newProxy(t *testing.T, devURL string, b *bankrun, s *recSigner) *proxy {
	p := &proxy{t: t, devURL: devURL, dev: rpc.New(devURL), b: b, signer: s, keys: map[solanago.PublicKey]solanago.PrivateKey{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *proxy) wallet(k solanago.PrivateKey) {
	p.mu.Lock()
	p.keys[k.PublicKey()] = k
	p.mu.Unlock()
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var call struct {
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &call) == nil && call.Method == "sendTransaction" {
		p.mu.Lock()
		defer p.mu.Unlock()
		resp, err := p.send(r.Context(), body, call.Params)
		if err != nil {
			p.errs = append(p.errs, err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(resp)
		return
	}
	resp, err := p.forward(r.Context(), body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

func (p *proxy) forward(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.devURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// send runs one sendTransaction: the accounts it names are read from the
// devnet, bankrun runs the bankrun twin from that state, the devnet the
// original; both outcomes are recorded.
func (p *proxy) send(ctx context.Context, body []byte, params []json.RawMessage) ([]byte, error) {
	if len(params) == 0 {
		return nil, errors.New("sendTransaction without params")
	}
	var enc string
	var opts struct {
		Encoding      string `json:"encoding"`
		SkipPreflight bool   `json:"skipPreflight"`
	}
	if err := json.Unmarshal(params[0], &enc); err != nil {
		return nil, err
	}
	if len(params) > 1 {
		if err := json.Unmarshal(params[1], &opts); err != nil {
			return nil, err
		}
	}
	var raw []byte
	var err error
	if opts.Encoding == "base64" {
		raw, err = base64.StdEncoding.DecodeString(enc)
	} else {
		raw, err = base58.Decode(enc)
	}
	if err != nil {
		return nil, err
	}
	tx, err := solanago.TransactionFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("decode the transaction: %w", err)
	}
	programs := map[uint16]bool{}
	for _, ix := range tx.Message.Instructions {
		programs[ix.ProgramIDIndex] = true
	}
	var keys []solanago.PublicKey
	for i, k := range tx.Message.AccountKeys {
		if !programs[uint16(i)] && !builtin[k] {
			keys = append(keys, k)
		}
	}
	pre, err := p.devAccounts(ctx, keys)
	if err != nil {
		return nil, err
	}
	bpre := append([]acct(nil), pre...)
	if p.tamper {
		var l uint64
		_, _ = fmt.Sscan(bpre[0].Lamports, &l)
		bpre[0].Lamports = fmt.Sprint(l + 1)
	}
	var br execResult
	for {
		twin, err := p.twin(ctx, tx)
		if err != nil {
			return nil, err
		}
		err = p.b.call(map[string]any{"op": "exec", "tx": base64.StdEncoding.EncodeToString(twin), "skipPreflight": opts.SkipPreflight, "accounts": bpre}, &br)
		if errors.Is(err, errRestarted) {
			continue // a new bank: a new blockhash, so a new twin
		}
		if err != nil {
			return nil, err
		}
		break
	}
	resp, err := p.forward(ctx, body)
	if err != nil {
		return nil, err
	}
	o := outcome{label: p.label, signature: tx.Signatures[0].String(), skip: opts.SkipPreflight, pre: pre, bank: br.Post, logs: br.Logs}
	for _, k := range keys {
		o.keys = append(o.keys, k.String())
	}
	if br.Err != nil {
		o.bankErr = *br.Err
	}
	var answer struct {
		Error *struct {
			Message string `json:"message"`
			Data    struct {
				Err any `json:"err"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp, &answer); err != nil {
		return nil, fmt.Errorf("devnet's answer %s: %w", resp, err)
	}
	switch {
	case answer.Error != nil && answer.Error.Data.Err != nil:
		o.devnetErr = txErrorString(answer.Error.Data.Err)
	case answer.Error != nil:
		o.devnetErr = "rpc: " + answer.Error.Message
	default:
		// Landed: a transaction sent with skipPreflight may have failed.
		st, err := p.dev.GetSignatureStatuses(ctx, true, tx.Signatures[0])
		if err != nil || len(st.Value) != 1 || st.Value[0] == nil {
			return nil, fmt.Errorf("devnet status of %s: %v", tx.Signatures[0], err)
		}
		if st.Value[0].Err != nil {
			o.devnetErr = txErrorString(st.Value[0].Err)
		}
	}
	if o.devnet, err = p.devAccounts(ctx, keys); err != nil {
		return nil, err
	}
	p.outcomes = append(p.outcomes, o)
	return resp, nil
}

// builtin are the programs and sysvars a transaction may name as plain
// accounts (the ATA program's instruction lists the system and token
// programs): they are the runtime's own, never copied from the devnet.
var builtin = map[solanago.PublicKey]bool{
	solanago.SystemProgramID: true, solanago.TokenProgramID: true, solanago.Token2022ProgramID: true,
	solanago.SPLAssociatedTokenAccountProgramID: true, solanago.MemoProgramID: true,
	solanago.MustPublicKeyFromBase58("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"): true,
	solanago.ComputeBudget: true, solanago.SysVarRentPubkey: true, solanago.SysVarClockPubkey: true,
}

// twin is tx with bankrun's latest blockhash, signed by the same keys: a
// wallet's by the proxy, the enclave's under the requests recSigner
// recorded for tx's message.
func (p *proxy) twin(ctx context.Context, tx *solanago.Transaction) ([]byte, error) {
	orig, err := tx.Message.MarshalBinary()
	if err != nil {
		return nil, err
	}
	p.signer.mu.Lock()
	reqs := p.signer.reqs[string(orig)]
	p.signer.mu.Unlock()
	var m solanago.Message
	if err := m.UnmarshalWithDecoder(binDecoder(orig)); err != nil {
		return nil, err
	}
	if m.RecentBlockhash, err = p.b.blockhash(); err != nil {
		return nil, err
	}
	msg, err := m.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var enclaveSigs [][]byte
	for _, r := range reqs {
		r.Payload = msg
		sig, err := p.signer.Signer.Sign(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("sign the bankrun twin: %w", err)
		}
		enclaveSigs = append(enclaveSigs, sig)
	}
	out := &solanago.Transaction{Message: m}
	for i := 0; i < int(m.Header.NumRequiredSignatures); i++ {
		k := m.AccountKeys[i]
		if priv, ok := p.keys[k]; ok {
			s, err := priv.Sign(msg)
			if err != nil {
				return nil, err
			}
			out.Signatures = append(out.Signatures, s)
			continue
		}
		found := false
		for _, s := range enclaveSigs {
			if ed25519.Verify(ed25519.PublicKey(k[:]), msg, s) {
				out.Signatures = append(out.Signatures, solanago.SignatureFromBytes(s))
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no bankrun signature of %s for %s (%q): a key the test does not know signed it outside recSigner", k, tx.Signatures[0], p.label)
		}
	}
	return out.MarshalBinary()
}

// devAccounts reads keys from the devnet.
func (p *proxy) devAccounts(ctx context.Context, keys []solanago.PublicKey) ([]acct, error) {
	r, err := p.dev.GetMultipleAccountsWithOpts(ctx, keys, &rpc.GetMultipleAccountsOpts{Encoding: solanago.EncodingBase64, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		return nil, fmt.Errorf("devnet getMultipleAccounts: %w", err)
	}
	out := make([]acct, len(keys))
	for i, k := range keys {
		a := acct{Address: k.String(), Lamports: "0", Owner: solanago.SystemProgramID.String()}
		if v := r.Value[i]; v != nil {
			a = acct{Address: k.String(), Exists: true, Lamports: fmt.Sprint(v.Lamports), Owner: v.Owner.String(),
				Data: base64.StdEncoding.EncodeToString(v.Data.GetBinary()), Executable: v.Executable}
		}
		out[i] = a
	}
	return out, nil
}

// txErrorString is the Display form (solana-sdk's TransactionError and
// InstructionError) of a TransactionError in its JSON form, as bankrun
// reports errors. An error not listed here reads "unmapped: …", which no
// bankrun error equals.
func txErrorString(e any) string {
	switch v := e.(type) {
	case string:
		if s, ok := txErrors[v]; ok {
			return s
		}
	case map[string]any:
		if r, ok := v["InsufficientFundsForRent"].(map[string]any); ok {
			return fmt.Sprintf("Transaction results in an account (%v) with insufficient funds for rent", r["account_index"])
		}
		if ie, ok := v["InstructionError"].([]any); ok && len(ie) == 2 {
			idx, _ := number(ie[0])
			switch x := ie[1].(type) {
			case string:
				if s, ok := instructionErrors[x]; ok {
					return fmt.Sprintf("Error processing Instruction %d: %s", idx, s)
				}
			case map[string]any:
				if c, ok := number(x["Custom"]); ok {
					return fmt.Sprintf("Error processing Instruction %d: custom program error: %#x", idx, c)
				}
			}
		}
	}
	b, _ := json.Marshal(e)
	return "unmapped: " + string(b)
}

func binDecoder(b []byte) *bin.Decoder { return bin.NewBinDecoder(b) }

func number(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

var txErrors = map[string]string{
	"AccountNotFound":         "Attempt to debit an account but found no record of a prior credit.",
	"InsufficientFundsForFee": "Insufficient funds for fee",
	"InvalidAccountForFee":    "This account may not be used to pay transaction fees",
	"AlreadyProcessed":        "This transaction has already been processed",
	"BlockhashNotFound":       "Blockhash not found",
	"SignatureFailure":        "Transaction did not pass signature verification",
}

var instructionErrors = map[string]string{
	"GenericError":                "generic instruction error",
	"InvalidArgument":             "invalid program argument",
	"InvalidInstructionData":      "invalid instruction data",
	"InvalidAccountData":          "invalid account data for instruction",
	"AccountDataTooSmall":         "account data too small for instruction",
	"InsufficientFunds":           "insufficient funds for instruction",
	"IncorrectProgramId":          "incorrect program id for instruction",
	"MissingRequiredSignature":    "missing required signature for instruction",
	"AccountAlreadyInitialized":   "instruction requires an uninitialized account",
	"UninitializedAccount":        "instruction requires an initialized account",
	"ReadonlyLamportChange":       "instruction changed the balance of a read-only account",
	"ReadonlyDataModified":        "instruction modified data of a read-only account",
	"ExternalAccountLamportSpend": "instruction spent from the balance of an account it does not own",
	"InvalidSeeds":                "Provided seeds do not result in a valid address",
	"IllegalOwner":                "Provided owner is not allowed",
	"NotEnoughAccountKeys":        "insufficient account keys for instruction",
	"PrivilegeEscalation":         "Cross-program invocation with unauthorized signer or writable account",
}
