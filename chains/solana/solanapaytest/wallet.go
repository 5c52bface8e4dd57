// Package solanapaytest is a Solana Pay wallet for tests: it reads a
// transfer request URI (solana:<recipient>?amount=…&spl-token=…&reference=…)
// and pays it as the specification's reference wallet does (@solana/pay's
// createTransfer): a system transfer of the amount for SOL, a
// TransferChecked of the token's base units into the recipient's
// associated token account for an SPL token (created first, idempotently,
// as wallets do for a recipient that has none), each reference listed as
// a read-only, non-signing key of the transfer instruction. No memo, so
// the invoice's text never reaches the chain.
package solanapaytest

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/url"
	"strings"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/veilhq/veil/chains"
)

// Request is a parsed transfer request.
type Request struct {
	Recipient  solanago.PublicKey
	Amount     string             // decimal
	Token      solanago.PublicKey // zero for SOL
	References []solanago.PublicKey
	Label      string
	Message    string
}

// Parse reads a Solana Pay transfer request.
func Parse(uri string) (Request, error) {
	rest, ok := strings.CutPrefix(uri, "solana:")
	if !ok {
		return Request{}, fmt.Errorf("not a solana: URI: %q", uri)
	}
	addr, query, _ := strings.Cut(rest, "?")
	var r Request
	var err error
	if r.Recipient, err = solanago.PublicKeyFromBase58(addr); err != nil {
		return Request{}, fmt.Errorf("recipient %q: %w", addr, err)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Request{}, err
	}
	r.Amount, r.Label, r.Message = q.Get("amount"), q.Get("label"), q.Get("message")
	if t := q.Get("spl-token"); t != "" {
		if r.Token, err = solanago.PublicKeyFromBase58(t); err != nil {
			return Request{}, fmt.Errorf("spl-token %q: %w", t, err)
		}
	}
	for _, s := range q["reference"] {
		k, err := solanago.PublicKeyFromBase58(s)
		if err != nil {
			return Request{}, fmt.Errorf("reference %q: %w", s, err)
		}
		r.References = append(r.References, k)
	}
	return r, nil
}

// Instructions builds the transfer of r from payer; decimals is the
// token's (9 for SOL).
func (r Request) Instructions(payer solanago.PublicKey, decimals int) ([]solanago.Instruction, error) {
	units, err := chains.ParseAmount(r.Amount, decimals)
	if err != nil || units.Sign() <= 0 || !units.IsUint64() {
		return nil, fmt.Errorf("amount %q: %v", r.Amount, err)
	}
	refs := func(m solanago.AccountMetaSlice) solanago.AccountMetaSlice {
		for _, k := range r.References {
			m = append(m, solanago.Meta(k))
		}
		return m
	}
	if r.Token.IsZero() {
		data := make([]byte, 12)
		binary.LittleEndian.PutUint32(data, 2)
		binary.LittleEndian.PutUint64(data[4:], units.Uint64())
		return []solanago.Instruction{solanago.NewInstruction(solanago.SystemProgramID,
			refs(solanago.AccountMetaSlice{solanago.Meta(payer).SIGNER().WRITE(), solanago.Meta(r.Recipient).WRITE()}), data)}, nil
	}
	src, _, err := solanago.FindAssociatedTokenAddress(payer, r.Token)
	if err != nil {
		return nil, err
	}
	dst, _, err := solanago.FindAssociatedTokenAddress(r.Recipient, r.Token)
	if err != nil {
		return nil, err
	}
	create := solanago.NewInstruction(solanago.SPLAssociatedTokenAccountProgramID, solanago.AccountMetaSlice{
		solanago.Meta(payer).SIGNER().WRITE(), solanago.Meta(dst).WRITE(), solanago.Meta(r.Recipient), solanago.Meta(r.Token),
		solanago.Meta(solanago.SystemProgramID), solanago.Meta(solanago.TokenProgramID),
	}, []byte{1})
	data := make([]byte, 10)
	data[0] = 12 // TransferChecked
	binary.LittleEndian.PutUint64(data[1:], units.Uint64())
	data[9] = byte(decimals)
	transfer := solanago.NewInstruction(solanago.TokenProgramID,
		refs(solanago.AccountMetaSlice{solanago.Meta(src).WRITE(), solanago.Meta(r.Token), solanago.Meta(dst).WRITE(), solanago.Meta(payer).SIGNER()}), data)
	return []solanago.Instruction{create, transfer}, nil
}

// Send signs ixs with key and sends them (skipPreflight lets a failing
// transaction land and fail on chain), answering the signature.
func Send(ctx context.Context, cl *rpc.Client, key solanago.PrivateKey, skipPreflight bool, ixs ...solanago.Instruction) (string, error) {
	bh, err := cl.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return "", err
	}
	tx, err := solanago.NewTransaction(ixs, bh.Value.Blockhash, solanago.TransactionPayer(key.PublicKey()))
	if err != nil {
		return "", err
	}
	if _, err := tx.Sign(func(k solanago.PublicKey) *solanago.PrivateKey {
		if k.Equals(key.PublicKey()) {
			return &key
		}
		return nil
	}); err != nil {
		return "", err
	}
	sig, err := cl.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{SkipPreflight: skipPreflight, PreflightCommitment: rpc.CommitmentConfirmed})
	if err != nil {
		return "", err
	}
	return sig.String(), nil
}

// Pay pays uri from key: decimals is the asset's (9 for SOL).
func Pay(ctx context.Context, cl *rpc.Client, key solanago.PrivateKey, uri string, decimals int) (string, error) {
	r, err := Parse(uri)
	if err != nil {
		return "", err
	}
	ixs, err := r.Instructions(key.PublicKey(), decimals)
	if err != nil {
		return "", err
	}
	return Send(ctx, cl, key, false, ixs...)
}
