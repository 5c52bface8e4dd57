//go:build !nodevnet

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	solanago "github.com/gagliardetto/solana-go"
	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/internal/npmtest"
	"github.com/veilhq/veil/persistence"
)

// walletPay runs testdata/wallets/pay.mjs: a wallet made only of
// independent libraries (viem, @solana/pay + @solana/kit, the Stellar
// SDKs) pays uri from key on the node at rpc; on Stellar it takes the
// network from the URI's network_passphrase. It answers the script's
// JSON (txHash and what it checked).
func walletPay(t *testing.T, dir, uri, rpc, key string, env ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "pay.mjs")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "URI="+uri, "RPC="+rpc, "KEY="+key), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node pay.mjs %s: %v\n%s", uri, err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil || got["txHash"] == nil {
		t.Fatalf("pay.mjs output %q: %v", out, err)
	}
	return got
}

// paymentURI is the pay page's payment URI of an invoice (its status JSON).
func (e *moneyEnv) paymentURI(t *testing.T, id string) string {
	t.Helper()
	var v struct {
		PaymentURI string `json:"paymentUri"`
	}
	e.do("GET", "/pay/"+id+"/status", "", nil).decode(t, &v)
	if v.PaymentURI == "" {
		t.Fatalf("invoice %s has no payment URI", id)
	}
	return v.PaymentURI
}

// settledOnce waits until the payee's scanner settled the invoice by
// itself, runs one more pass, and checks that the invoice is paid by txHash
// and that the payee got one invoice_paid and one payment_received per
// invoice paid so far (n).
func (e *moneyEnv) settledOnce(t *testing.T, s *scanner.Scanner, payeeID, id, txHash string, n int) {
	t.Helper()
	e.waitPaid(t, id)
	if _, err := s.ScanOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got invoiceJSON
	e.do("GET", "/invoice/"+id, e.key, nil).decode(t, &got)
	if got.Status != "paid" || got.TxHash == nil || !strings.EqualFold(*got.TxHash, txHash) {
		t.Fatalf("invoice %s after the wallet paid %s: %+v", id, txHash, got)
	}
	in := e.notes(t, payeeID)
	if countType(in, agent.NoteInvoicePaid) != n || countType(in, agent.NotePaymentReceived) != n {
		t.Fatalf("after %d invoices paid: %d invoice_paid, %d payment_received: %+v", n,
			countType(in, agent.NoteInvoicePaid), countType(in, agent.NotePaymentReceived), in.Notifications)
	}
}

// TestWalletInterop: on each chain's devnet, a wallet built from the pay
// page's payment URI with independent libraries (testdata/wallets/pay.mjs,
// pinned by its package-lock.json) pays the invoice — EIP-681 with
// eth-url-parser and viem (ETH and USDC), Solana Pay with @solana/pay and
// @solana/kit (SOL and USDC; the script also runs findReference and
// validateTransfer on the payment), SEP-7 with the Stellar wallet SDK and
// the Stellar SDK (0.5 XLM and USDC by a plain payment, the server's
// sponsor having activated each invoice's account; withdrawing everything
// gives the sponsor its reserves back) — and the payee's scanner settles it
// by itself, once, with one invoice_paid and one payment_received per
// invoice.
func TestWalletInterop(t *testing.T) {
	dir := npmtest.Install(t, filepath.Join("testdata", "wallets"))
	ctx := context.Background()

	t.Run("ethereum", func(t *testing.T) {
		e := newMoneyEnv(t)
		payee := e.create(t, newEVMOwner(t), "payee", "ethereum")
		s := e.startScanner(t)
		p := e.newPayer(t)
		for i, msg := range []string{`create an invoice for 0.04 ETH for "design"`, `create an invoice for 2.5 USDC for "hosting"`} {
			inv := e.createInvoice(t, payee.ID, msg)
			got := walletPay(t, dir, e.paymentURI(t, inv.ID), e.cfg.RPCURL, hexutil.Encode(crypto.FromECDSA(p.key)))
			if got["status"] != "success" {
				t.Fatalf("viem: %v", got)
			}
			e.settledOnce(t, s, payee.ID, inv.ID, got["txHash"].(string), i+1)
		}
	})

	t.Run("solana", func(t *testing.T) {
		e, conn := newLedgerServer(t, chains.Solana, 51, ledgerDevnet(t, chains.Solana))
		payee := e.create(t, newEdOwner(t, "solana"), "payee", "solana")
		s := e.startScanner(t)
		w := solanago.NewWallet().PrivateKey
		if _, err := conn.Fund(ctx, w.PublicKey().String()); err != nil {
			t.Fatal(err)
		}
		rpcURL := conn.(*solana.Connector).Config().RPCURL
		for i, msg := range []string{"create an invoice for 0.25 SOL for the design", "create an invoice for 2.5 USDC for the logo"} {
			inv := e.createInvoice(t, payee.ID, msg)
			got := walletPay(t, dir, e.paymentURI(t, inv.ID), rpcURL, w.String())
			t.Logf("%s: %v", msg, got)
			if got["validated"] != true || got["found"] != got["txHash"] {
				t.Fatalf("@solana/pay: %v", got)
			}
			if strings.Contains(msg, "USDC") && got["refusedBeforeTokenAccount"] == "" {
				t.Fatalf("createTransfer paid a recipient without a token account: %v", got)
			}
			e.settledOnce(t, s, payee.ID, inv.ID, got["txHash"].(string), i+1)
		}
	})

	t.Run("stellar", func(t *testing.T) {
		var seed [32]byte
		seed[0] = 35
		sp := stellar.KeySponsor(seed)
		connect := ledgerDevnet(t, chains.Stellar)
		e, conn := newLedgerServer(t, chains.Stellar, 52, func(st persistence.Store, signer chains.Signer) (fundedConnector, error) {
			c, err := connect(st, signer)
			if err != nil {
				return nil, err
			}
			// The server's sponsor (the relayer): invoice addresses are
			// activated before they are shown.
			if _, err := c.Fund(ctx, sp.Address()); err != nil {
				return nil, err
			}
			c.(*stellar.Connector).SetSponsor(sp)
			return c, nil
		})
		payee := e.create(t, newEdOwner(t, "stellar"), "payee", "stellar")
		s := e.startScanner(t)
		sc := conn.(*stellar.Connector)
		cfg := sc.Config()
		w := keypair.MustRandom()
		if _, err := conn.Fund(ctx, w.Address()); err != nil {
			t.Fatal(err)
		}
		trustAndClaim(t, sc, w)
		sponsorBefore := xlmOf(t, sc, sp.Address())
		// A plain-payment wallet: 0.5 XLM (below the 1 XLM a payment that
		// creates the account needs) and USDC, which needs a trustline.
		for i, msg := range []string{"create an invoice for 0.5 XLM for the design", "create an invoice for 5 USDC on stellar for the logo"} {
			inv := e.createInvoice(t, payee.ID, msg)
			got := walletPay(t, dir, e.paymentURI(t, inv.ID), cfg.HorizonURL, w.Seed(), "PASSPHRASE="+cfg.NetworkPassphrase)
			if got["operation"] != "payment" || got["networkPassphrase"] != cfg.NetworkPassphrase {
				t.Fatalf("stellar SDK: %v (want the URI's network_passphrase %q)", got, cfg.NetworkPassphrase)
			}
			e.settledOnce(t, s, payee.ID, inv.ID, got["txHash"].(string), i+1)
		}
		// Withdrawing everything closes both one-time accounts (the
		// sponsor pays the fees) and gives the sponsor its reserves back.
		e.steps(t, payee.ID, []step{{"withdraw everything to " + w.Address(), "withdraw_all", "success", ""}})
		acc, err := sc.Client().AccountDetail(horizonclient.AccountRequest{AccountID: sp.Address()})
		if err != nil || acc.NumSponsoring != 0 {
			t.Fatalf("the sponsor still sponsors %d entries after the withdrawals: %v", acc.NumSponsoring, err)
		}
		// Fees only: activations of 3 and 4 operations, withdrawals of 1
		// (merge) and 3 (payment, trustline removed, merge).
		if spent := new(big.Int).Sub(sponsorBefore, xlmOf(t, sc, sp.Address())); spent.Int64() != 1100 {
			t.Fatalf("the sponsor spent %s stroops, want 1100 (fees only)", spent)
		}
	})
}

// xlmOf is addr's XLM in stroops.
func xlmOf(t *testing.T, c *stellar.Connector, addr string) *big.Int {
	t.Helper()
	b, err := c.Balance(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	v, err := chains.ParseAmount(b.Native, stellar.Decimals)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// trustAndClaim gives the wallet w a USDC trustline and claims the USDC
// friendbot left it as a claimable balance.
func trustAndClaim(t *testing.T, c *stellar.Connector, w *keypair.Full) {
	t.Helper()
	hc := c.Client()
	cbs, err := hc.ClaimableBalances(horizonclient.ClaimableBalanceRequest{Claimant: w.Address()})
	if err != nil || len(cbs.Embedded.Records) == 0 {
		t.Fatalf("friendbot's USDC: %v", err)
	}
	acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: w.Address()})
	if err != nil {
		t.Fatal(err)
	}
	a := c.Config().Assets[0]
	ops := []txnbuild.Operation{&txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: txnbuild.CreditAsset{Code: a.Code, Issuer: a.Issuer}}, Limit: "1000000"}}
	for _, cb := range cbs.Embedded.Records {
		ops = append(ops, &txnbuild.ClaimClaimableBalance{BalanceID: cb.BalanceID})
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &acc, IncrementSequenceNum: true, BaseFee: 100,
		Operations: ops, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)}})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign(c.Config().NetworkPassphrase, w); err != nil {
		t.Fatal(err)
	}
	env, err := tx.Base64()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hc.SubmitTransactionXDR(env); err != nil {
		t.Fatal(err)
	}
}
