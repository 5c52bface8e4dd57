//go:build !nodevnet

package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/evm"
)

// stellarGraph reads every successful transaction of the devnet (Horizon's
// /transactions): a transaction's parties are the known accounts among its
// source (the fee payer) and everything its operations name — their
// sources, destinations, the account a sponsorship begins for, a merge's
// target, a claimable balance's claimants.
func stellarGraph(t *testing.T, hc *horizonclient.Client, known []string) graph {
	t.Helper()
	g := graph{}
	read, cursor := 0, ""
	for {
		page, err := hc.Transactions(horizonclient.TransactionRequest{Limit: 200, Cursor: cursor, Order: horizonclient.OrderAsc})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range page.Embedded.Records {
			cursor = rec.PagingToken()
			if !rec.Successful {
				continue
			}
			read++
			gtx, err := txnbuild.TransactionFromXDR(rec.EnvelopeXdr)
			if err != nil {
				t.Fatal(err)
			}
			tx, ok := gtx.Transaction()
			if !ok {
				t.Fatalf("%s is not a plain transaction", rec.Hash)
			}
			named := []string{tx.SourceAccount().AccountID}
			for _, op := range tx.Operations() {
				b, err := json.Marshal(op)
				if err != nil {
					t.Fatal(err)
				}
				named = append(named, string(b))
			}
			all := strings.Join(named, " ")
			var parties []string
			for _, k := range known {
				if strings.Contains(all, k) {
					parties = append(parties, k)
				}
			}
			g.link(parties)
		}
		if len(page.Embedded.Records) < 200 {
			break
		}
	}
	if read == 0 {
		t.Fatal("no Stellar transaction read")
	}
	return g
}

// x402 has payer sign an EIP-3009 authorization of 1 USDC to the invoice
// address `to` and the payee settle it (the connector has its relayer
// submit it).
func x402(ctx context.Context, t *testing.T, c *evm.Connector, payer chains.KeyRef, payerAddr string, payee chains.KeyRef, payeeAddr, to, key string) {
	t.Helper()
	auth, err := c.AuthorizationDomain(ctx, "USDC")
	if err != nil {
		t.Fatal(err)
	}
	auth.From, auth.To, auth.Value = payerAddr, to, big.NewInt(1_000_000)
	auth.ValidAfter, auth.ValidBefore = big.NewInt(0), big.NewInt(time.Now().Add(time.Hour).Unix())
	_, _ = rand.Read(auth.Nonce[:])
	sig, err := c.SignAuthorization(ctx, payer, auth, "x402-pay/"+key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SettleAuthorization(ctx, payee, payeeAddr, auth, sig, key); err != nil {
		t.Fatalf("settle %s: %v", key, err)
	}
}

var transferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

// evmGraph reads every block of the devnet: a transaction's parties are
// its sender, its recipient when it moves ETH, and both ends of every
// token Transfer it logs.
func evmGraph(ctx context.Context, t *testing.T, url string) graph {
	t.Helper()
	cl, err := ethclient.DialContext(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	head, err := cl.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chainID, err := cl.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(chainID)
	g := graph{}
	for n := uint64(0); n <= head; n++ {
		b, err := cl.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range b.Transactions() {
			from, err := types.Sender(signer, tx)
			if err != nil {
				t.Fatal(err)
			}
			parties := []string{from.Hex()}
			if tx.To() != nil && tx.Value().Sign() > 0 {
				parties = append(parties, tx.To().Hex())
			}
			rc, err := cl.TransactionReceipt(ctx, tx.Hash())
			if err != nil {
				t.Fatal(err)
			}
			if rc.Status != types.ReceiptStatusSuccessful {
				continue
			}
			for _, l := range rc.Logs {
				if len(l.Topics) == 3 && l.Topics[0] == transferTopic {
					parties = append(parties, common.BytesToAddress(l.Topics[1][:]).Hex(), common.BytesToAddress(l.Topics[2][:]).Hex())
				}
			}
			g.link(parties)
		}
	}
	return g
}

// solanaGraph reads every transaction that touches one of the known
// accounts (or its USDC account) from the devnet: a transaction's parties
// are the known owners among its accounts (signers, fee payer, token
// accounts created, moved from or to, closed).
func solanaGraph(ctx context.Context, t *testing.T, url string, known []string) graph {
	t.Helper()
	cl := rpc.New(url)
	owner := map[solanago.PublicKey]string{}
	for _, k := range known {
		pk := solanago.MustPublicKeyFromBase58(k)
		owner[pk] = k
		a, _, err := solanago.FindAssociatedTokenAddress(pk, solanadev.USDCMint)
		if err != nil {
			t.Fatal(err)
		}
		owner[a] = k
	}
	seen := map[solanago.Signature]bool{}
	g := graph{}
	for acct := range owner {
		sigs, err := cl.GetSignaturesForAddress(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sigs {
			if seen[s.Signature] || s.Err != nil {
				continue
			}
			seen[s.Signature] = true
			v := uint64(0)
			tx, err := cl.GetTransaction(ctx, s.Signature, &rpc.GetTransactionOpts{Encoding: solanago.EncodingBase64, Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &v})
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := tx.Transaction.GetTransaction()
			if err != nil {
				t.Fatal(err)
			}
			var parties []string
			has := map[string]bool{}
			for _, k := range parsed.Message.AccountKeys {
				if o, ok := owner[k]; ok && !has[o] {
					has[o] = true
					parties = append(parties, o)
				}
			}
			g.link(parties)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no Solana transaction read")
	}
	return g
}
