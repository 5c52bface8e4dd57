package solana

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/veilhq/veil/chains"
)

var _ chains.ReferenceScanner = (*Connector)(nil)

// watchDepth is how many of an account's latest signatures TransfersTo
// reads: a pending invoice's accounts see a handful of transactions.
const watchDepth = 1000

// TransfersTo finds the payments of pending invoices as the Solana Pay
// specification describes (findReference, then validateTransfer): the
// signatures of each invoice's reference key and of the account its
// payment reaches — the one-time address for SOL, its associated token
// account for a token, so that a wallet that left the reference out (or a
// Veil agent's plain transfer) is found too — in one JSON-RPC batch, then
// each new successful transaction read once and its balance changes taken
// as TransfersIn does: the lamports the one-time address gained, the
// tokens of a configured mint its owner gained. What is kept is what
// reached a watched address; the caller compares asset and amount with
// the invoice. read lists every signature read (failed ones included),
// for the caller's seen.
func (c *Connector) TransfersTo(ctx context.Context, watches []chains.Watch, seen func(string) bool) (out []chains.Transfer, read []string, err error) {
	var accounts []solanago.PublicKey
	payTo := map[string]bool{}
	for _, w := range watches {
		to, err := parseAddress(w.PayTo)
		if err != nil {
			continue
		}
		payTo[to.String()] = true
		d, err := c.Asset(w.Asset) // a watch's asset, from outside a payment request
		if err != nil {
			continue
		}
		a := mintOf(d)
		if a.Native() {
			accounts = append(accounts, to)
		} else {
			accounts = append(accounts, ata(to, a.mint))
		}
		if ref, err := parseAddress(w.Reference); err == nil && w.Reference != "" {
			accounts = append(accounts, ref)
		}
	}
	sigs, err := c.signaturesOf(ctx, accounts)
	if err != nil {
		return nil, nil, err
	}
	done := map[string]bool{}
	for _, s := range sigs {
		h := s.Signature.String()
		if done[h] || seen != nil && seen(h) {
			continue
		}
		done[h] = true
		if s.Err != nil {
			read = append(read, h)
			continue
		}
		ts, err := c.TransfersIn(ctx, h)
		if err != nil {
			// Not yet visible at our commitment: read again next time.
			if errors.Is(err, chains.ErrNotFound) {
				continue
			}
			return out, read, err
		}
		read = append(read, h)
		for _, t := range ts {
			if payTo[t.To] {
				out = append(out, t)
			}
		}
	}
	return out, read, nil
}

// signaturesOf asks getSignaturesForAddress for each account (the latest
// watchDepth, confirmed) in JSON-RPC batches of batchSize; a node that
// refuses batches is asked one account at a time.
func (c *Connector) signaturesOf(ctx context.Context, accounts []solanago.PublicKey) ([]*rpc.TransactionSignature, error) {
	var out []*rpc.TransactionSignature
	limit := watchDepth
	opts := map[string]any{"limit": limit, "commitment": "confirmed"}
	for start := 0; start < len(accounts); start += batchSize {
		part := accounts[start:min(start+batchSize, len(accounts))]
		reqs := make(jsonrpc.RPCRequests, len(part))
		for i, a := range part {
			reqs[i] = jsonrpc.NewRequest("getSignaturesForAddress", a.String(), opts)
		}
		resps, err := c.jrpc.CallBatch(ctx, reqs)
		if err != nil || len(resps) != len(part) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			for _, a := range part {
				page, err := c.rpc.GetSignaturesForAddressWithOpts(ctx, a, &rpc.GetSignaturesForAddressOpts{Limit: &limit, Commitment: rpc.CommitmentConfirmed})
				if err != nil {
					return nil, c.Unavailable("getSignaturesForAddress", err)
				}
				out = append(out, page...)
			}
			continue
		}
		for _, r := range resps {
			if i, err := strconv.Atoi(fmt.Sprint(r.ID)); err != nil || i < 0 || i >= len(part) {
				return nil, fmt.Errorf("%w: solana: batch answer with id %v", chains.ErrUnavailable, r.ID)
			}
			if r.Error != nil {
				return nil, c.Unavailable("getSignaturesForAddress", r.Error)
			}
			var page []*rpc.TransactionSignature
			if err := json.Unmarshal(r.Result, &page); err != nil {
				return nil, fmt.Errorf("%w: solana: getSignaturesForAddress answer: %v", chains.ErrUnavailable, err)
			}
			out = append(out, page...)
		}
	}
	return out, nil
}
