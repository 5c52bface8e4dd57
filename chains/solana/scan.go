package solana

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/internal/names"
	"github.com/veilhq/veil/chains/stealth/edstealth"
)

// history returns the successful transactions of account after cursor (a
// signature; "" = from the start), oldest first, at most limit.
func (c *Connector) history(ctx context.Context, account solanago.PublicKey, cursor string, limit int) ([]*rpc.TransactionSignature, error) {
	var until solanago.Signature
	if cursor != "" {
		s, err := solanago.SignatureFromBase58(cursor)
		if err != nil {
			return nil, fmt.Errorf("solana: bad scan cursor %q", cursor)
		}
		until = s
	}
	var all []*rpc.TransactionSignature
	var before solanago.Signature
	for {
		n := 1000
		page, err := c.rpc.GetSignaturesForAddressWithOpts(ctx, account, &rpc.GetSignaturesForAddressOpts{
			Limit: &n, Before: before, Until: until, Commitment: rpc.CommitmentConfirmed,
		})
		if err != nil {
			return nil, c.Unavailable("getSignaturesForAddress", err)
		}
		all = append(all, page...)
		if len(page) < n {
			break
		}
		before = page[len(page)-1].Signature
	}
	// Oldest first; keep the first `limit` (the rest is read next time).
	out := make([]*rpc.TransactionSignature, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		out = append(out, all[i])
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (c *Connector) fetch(ctx context.Context, sig solanago.Signature) (*solanago.Transaction, *rpc.GetTransactionResult, error) {
	v := uint64(0)
	r, err := c.rpc.GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Encoding: solanago.EncodingBase64, Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &v})
	if errors.Is(err, rpc.ErrNotFound) {
		return nil, nil, fmt.Errorf("%w: transaction %s", chains.ErrNotFound, sig)
	}
	if err != nil {
		return nil, nil, c.Unavailable("getTransaction", err)
	}
	if r == nil || r.Transaction == nil {
		return nil, nil, fmt.Errorf("%w: transaction %s", chains.ErrNotFound, sig)
	}
	tx, err := r.Transaction.GetTransaction()
	if err != nil {
		return nil, nil, fmt.Errorf("solana: decode transaction %s: %w", sig, err)
	}
	return tx, r, nil
}

// batchSize is the number of getTransaction calls per JSON-RPC batch.
const batchSize = 100

// fetchBatch reads transactions in JSON-RPC batches of batchSize; a node
// that refuses batches is asked one transaction at a time.
func (c *Connector) fetchBatch(ctx context.Context, sigs []solanago.Signature) (map[solanago.Signature]*solanago.Transaction, error) {
	out := make(map[solanago.Signature]*solanago.Transaction, len(sigs))
	opts := map[string]any{"encoding": "base64", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}
	for start := 0; start < len(sigs); start += batchSize {
		part := sigs[start:min(start+batchSize, len(sigs))]
		reqs := make(jsonrpc.RPCRequests, len(part))
		for i, s := range part {
			reqs[i] = jsonrpc.NewRequest("getTransaction", s.String(), opts)
		}
		resps, err := c.jrpc.CallBatch(ctx, reqs)
		if err != nil || len(resps) != len(part) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			for _, s := range part {
				tx, _, err := c.fetch(ctx, s)
				if err != nil {
					return nil, err
				}
				out[s] = tx
			}
			continue
		}
		for _, r := range resps {
			i, err := strconv.Atoi(fmt.Sprint(r.ID))
			if err != nil || i < 0 || i >= len(part) {
				return nil, fmt.Errorf("%w: solana: batch answer with id %v", chains.ErrUnavailable, r.ID)
			}
			if r.Error != nil {
				return nil, c.Unavailable("getTransaction", r.Error)
			}
			var res rpc.GetTransactionResult
			if err := json.Unmarshal(r.Result, &res); err != nil || res.Transaction == nil {
				return nil, fmt.Errorf("%w: solana: transaction %s: %v", chains.ErrNotFound, part[i], err)
			}
			tx, err := res.Transaction.GetTransaction()
			if err != nil {
				return nil, fmt.Errorf("solana: decode transaction %s: %w", part[i], err)
			}
			out[part[i]] = tx
		}
	}
	return out, nil
}

// Scan returns the announcements in the signature history of the
// announcement account after cursor (a signature; "" = from the start), at
// most limit (default 1000), and the cursor to resume from.
func (c *Connector) Scan(ctx context.Context, cursor string, limit int) ([]chains.Announcement, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []chains.Announcement
	var lastSlot, idx uint64
	for len(out) < limit {
		n := limit - len(out)
		sigs, err := c.history(ctx, c.ann, cursor, n)
		if err != nil {
			return out, cursor, err
		}
		var ok []solanago.Signature
		for _, s := range sigs {
			if s.Err == nil {
				ok = append(ok, s.Signature)
			}
		}
		txs, err := c.fetchBatch(ctx, ok)
		if err != nil {
			return out, cursor, err
		}
		for _, s := range sigs {
			if s.Err == nil {
				tx := txs[s.Signature]
				if s.Slot != lastSlot {
					lastSlot, idx = s.Slot, 0
				}
				if a, ok := c.DecodeAnnouncement(tx); ok {
					a.Position = s.Slot<<20 | idx
					idx++
					out = append(out, a)
				}
			}
			cursor = s.Signature.String()
		}
		if len(sigs) < n {
			break
		}
	}
	return out, cursor, nil
}

// DecodeAnnouncement reads a Veil announcement from a transaction: a memo
// "veil:stealth:1:<66 hex>" and the system transfer that lists the
// announcement account (its destination is the one-time address), plus,
// for a token, the TransferChecked into the one-time address's associated
// token account.
func (c *Connector) DecodeAnnouncement(tx *solanago.Transaction) (chains.Announcement, bool) {
	m := &tx.Message
	keys := m.AccountKeys
	var payload []byte
	var dest solanago.PublicKey
	var lamports uint64
	var tokAmt uint64
	var tokMint solanago.PublicKey
	var tokDest solanago.PublicKey
	for _, ix := range m.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) {
			return chains.Announcement{}, false
		}
		prog := keys[ix.ProgramIDIndex]
		acct := func(i int) (solanago.PublicKey, bool) {
			if i >= len(ix.Accounts) || int(ix.Accounts[i]) >= len(keys) {
				return solanago.PublicKey{}, false
			}
			return keys[ix.Accounts[i]], true
		}
		switch {
		case prog.Equals(solanago.MemoProgramID):
			if s := string(ix.Data); strings.HasPrefix(s, AnnouncementMemo) && payload == nil {
				b, err := hex.DecodeString(s[len(AnnouncementMemo):])
				if err == nil && len(b) == edstealth.PayloadSize {
					payload = b
				}
			}
		case prog.Equals(solanago.SystemProgramID):
			idx, ok := acct(2)
			if !ok || !idx.Equals(c.ann) || len(ix.Data) != 12 || binary.LittleEndian.Uint32(ix.Data) != 2 {
				continue
			}
			if to, ok := acct(1); ok && dest.IsZero() {
				dest, lamports = to, binary.LittleEndian.Uint64(ix.Data[4:])
			}
		case prog.Equals(solanago.TokenProgramID):
			if len(ix.Data) != 10 || ix.Data[0] != 12 {
				continue
			}
			mint, ok1 := acct(1)
			to, ok2 := acct(2)
			if ok1 && ok2 {
				tokAmt, tokMint, tokDest = binary.LittleEndian.Uint64(ix.Data[1:9]), mint, to
			}
		}
	}
	if payload == nil || dest.IsZero() {
		return chains.Announcement{}, false
	}
	ann, err := edstealth.DecodeAnnouncement(dest[:], payload)
	if err != nil {
		return chains.Announcement{}, false
	}
	out := chains.Announcement{
		StealthAddress: dest.String(), EphemeralPubKey: ann.EphemeralPub[:], ViewTag: ann.ViewTag,
		Asset: "SOL", Amount: format(lamports, Decimals), TxHash: tx.Signatures[0].String(),
	}
	if !tokMint.IsZero() && tokDest.Equals(ata(dest, tokMint)) {
		t, ok := c.tokenByMint(tokMint)
		if !ok {
			return chains.Announcement{}, false
		}
		out.Asset, out.Amount = strings.ToUpper(t.Symbol), format(tokAmt, t.Decimals)
	}
	return out, true
}

// registrations is the name index's Page: the registry account's
// signature history after cursor, every successful transaction read and
// its registration decoded.
func (c *Connector) registrations(ctx context.Context, cursor string) ([]names.Entry, bool, error) {
	const page = 500
	sigs, err := c.history(ctx, c.reg, cursor, page)
	if err != nil {
		return nil, false, err
	}
	out := make([]names.Entry, 0, len(sigs))
	for _, s := range sigs {
		e := names.Entry{Cursor: s.Signature.String()}
		if s.Err == nil {
			tx, _, err := c.fetch(ctx, s.Signature)
			if err != nil {
				return nil, false, err
			}
			e.Name, e.Record, _ = c.decodeRegistration(tx)
		}
		out = append(out, e)
	}
	return out, len(sigs) == page, nil
}

// decodeRegistration reads a registration: the memo
// "veil:name:1:<name>:<128 hex>" signed by the fee payer, its owner.
// Every signature is verified here, over the message bytes the RPC
// returned: a lying node can hide a registration, never forge one.
func (c *Connector) decodeRegistration(tx *solanago.Transaction) (string, names.Record, bool) {
	if tx.VerifySignatures() != nil || len(tx.Message.AccountKeys) == 0 {
		return "", names.Record{}, false
	}
	keys := tx.Message.AccountKeys
	owner := keys[0]
	for _, ix := range tx.Message.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) || !keys[ix.ProgramIDIndex].Equals(solanago.MemoProgramID) {
			continue
		}
		s := string(ix.Data)
		if !strings.HasPrefix(s, NameMemo) {
			continue
		}
		signedByOwner := false
		for _, a := range ix.Accounts {
			signedByOwner = signedByOwner || int(a) < len(keys) && keys[a].Equals(owner)
		}
		name, metaHex, ok := strings.Cut(s[len(NameMemo):], ":")
		if !ok || !signedByOwner {
			continue
		}
		raw, err := hex.DecodeString(metaHex)
		if err != nil || !names.Valid(name, raw, edstealth.Solana) {
			continue
		}
		return name, names.Record{Owner: owner.String(), Meta: hex.EncodeToString(raw), TxHash: tx.Signatures[0].String()}, true
	}
	return "", names.Record{}, false
}

// RegisterName publishes name → metaAddress, signed by ownerAddress: one
// transaction with the memo "veil:name:1:<name>:<128 hex>" signed by the
// owner and a transfer of 0 lamports to the registry account, so that its
// history lists the registration. The first registration of a name owns
// it; the owner may re-register to replace the meta-address; registering
// the same again returns the original registration.
func (c *Connector) RegisterName(ctx context.Context, owner chains.KeyRef, ownerAddress, name, metaAddress string) (chains.TxResult, error) {
	r, err := c.reqs.Register(ownerAddress, name, metaAddress)
	if err != nil {
		return chains.TxResult{}, err
	}
	n, src, meta := r.Name, r.Owner, r.Meta
	raw := hex.EncodeToString(append(meta.Spend[:], meta.View[:]...))
	if h, err := c.registry.Check(ctx, n, src.String(), raw); err != nil || h != "" {
		return c.Result(h), err
	}
	key, it := intents.Registration[attempt](n, src.String(), raw, meta.String(), owner)
	return c.run(ctx, key, it, func(ctx context.Context) ([]solanago.Instruction, error) {
		return []solanago.Instruction{
			memo(src, NameMemo+n+":"+raw),
			system.NewTransferInstruction(0, src, c.reg).Build(),
		}, nil
	})
}

// ResolveName returns the meta-address registered for name, or an error
// matching chains.ErrNotFound.
func (c *Connector) ResolveName(ctx context.Context, name string) (string, error) {
	return c.registry.Resolve(ctx, name)
}

var _ chains.PaymentVerifier = (*Connector)(nil)

// TransfersIn returns what the successful, confirmed transaction txHash
// (a base58 signature) delivered, from its balances before and after:
// every account whose lamports grew (SOL) and every owner whose token
// balance of a configured mint grew. An unknown or failed transaction
// matches chains.ErrNotFound.
func (c *Connector) TransfersIn(ctx context.Context, txHash string) ([]chains.Transfer, error) {
	tx, r, err := c.successfulTx(ctx, txHash)
	if err != nil {
		return nil, err
	}
	keys := tx.Message.AccountKeys
	out := []chains.Transfer{}
	pos := r.Slot << 20
	for i := range keys {
		if i < len(r.Meta.PreBalances) && i < len(r.Meta.PostBalances) && r.Meta.PostBalances[i] > r.Meta.PreBalances[i] {
			out = append(out, chains.Transfer{To: keys[i].String(), Asset: "SOL", Amount: format(r.Meta.PostBalances[i]-r.Meta.PreBalances[i], Decimals), TxHash: txHash, Position: pos})
		}
	}
	pre := map[string]uint64{}
	for _, b := range r.Meta.PreTokenBalances {
		if b.Owner != nil && b.UiTokenAmount != nil {
			pre[b.Owner.String()+"/"+b.Mint.String()] += u64(b.UiTokenAmount.Amount)
		}
	}
	post := map[string]uint64{}
	for _, b := range r.Meta.PostTokenBalances {
		if b.Owner != nil && b.UiTokenAmount != nil {
			post[b.Owner.String()+"/"+b.Mint.String()] += u64(b.UiTokenAmount.Amount)
		}
	}
	ks := make([]string, 0, len(post))
	for k := range post {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		v := post[k]
		owner, mint, _ := strings.Cut(k, "/")
		t, ok := c.tokenByMint(solanago.MustPublicKeyFromBase58(mint))
		if ok && v > pre[k] {
			out = append(out, chains.Transfer{To: owner, Asset: strings.ToUpper(t.Symbol), Amount: format(v-pre[k], t.Decimals), TxHash: txHash, Position: pos})
		}
	}
	return out, nil
}
