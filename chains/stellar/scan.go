package stellar

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/network"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/internal/names"
	"github.com/veilhq/veil/chains/stealth/edstealth"
)

// page reads one page of account's successful transactions after cursor,
// oldest first.
func (c *Connector) page(ctx context.Context, account, cursor string, limit int) ([]hProtocol.Transaction, error) {
	v, err := c.call(ctx, func() (any, error) {
		return c.hc.Transactions(horizonclient.TransactionRequest{ForAccount: account, Cursor: cursor, Order: horizonclient.OrderAsc, Limit: uint(limit)})
	})
	if err != nil {
		if horizonclient.IsNotFoundError(err) {
			return nil, nil // the index account does not exist yet
		}
		return nil, c.Unavailable("transactions of "+account, err)
	}
	return v.(hProtocol.TransactionsPage).Embedded.Records, nil
}

// Scan returns the announcements in the history of the announcement
// account after cursor (a Horizon paging token; "" = from the start), at
// most limit (default 1000), and the cursor to resume from. A transaction
// whose operations do not form a valid announcement (docs/stealth.md) is
// skipped.
func (c *Connector) Scan(ctx context.Context, cursor string, limit int) ([]chains.Announcement, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []chains.Announcement
	for len(out) < limit {
		n := min(200, limit-len(out))
		txs, err := c.page(ctx, c.cfg.AnnouncementAccount, cursor, n)
		if err != nil {
			return out, cursor, err
		}
		for _, t := range txs {
			cursor = t.PT
			if a, ok := c.DecodeAnnouncement(t); ok {
				out = append(out, a)
			}
		}
		if len(txs) < n {
			break
		}
	}
	return out, cursor, nil
}

// DecodeAnnouncement reads a Veil announcement from a transaction: a
// ManageData op named AnnouncementData with a 33-byte value, and the op
// that funds the one-time account (createAccount, or
// createClaimableBalance with that account as sole claimant for a token).
func (c *Connector) DecodeAnnouncement(t hProtocol.Transaction) (chains.Announcement, bool) {
	if !t.Successful {
		return chains.Announcement{}, false
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(t.EnvelopeXdr, &env); err != nil {
		return chains.Announcement{}, false
	}
	var payload []byte
	var dest string
	var amt int64
	assetSym := "XLM"
	for _, op := range env.Operations() {
		switch op.Body.Type {
		case xdr.OperationTypeManageData:
			o := op.Body.MustManageDataOp()
			if string(o.DataName) == AnnouncementData && o.DataValue != nil && len(*o.DataValue) == edstealth.PayloadSize && payload == nil {
				payload = append([]byte(nil), (*o.DataValue)...)
			}
		case xdr.OperationTypeCreateAccount:
			o := op.Body.MustCreateAccountOp()
			if d := o.Destination.Address(); d != c.cfg.AnnouncementAccount && dest == "" {
				dest, amt = d, int64(o.StartingBalance)
			}
		case xdr.OperationTypeCreateClaimableBalance:
			o := op.Body.MustCreateClaimableBalanceOp()
			if len(o.Claimants) != 1 || o.Asset.Type == xdr.AssetTypeAssetTypeNative {
				continue
			}
			d := o.Claimants[0].MustV0().Destination.Address()
			if d == dest || dest == "" {
				sym := ""
				for _, a := range c.cfg.Assets {
					if a.Code == o.Asset.GetCode() && a.Issuer == o.Asset.GetIssuer() {
						sym = a.Code
					}
				}
				if sym == "" {
					return chains.Announcement{}, false // an asset this connector does not carry
				}
				dest, amt, assetSym = d, int64(o.Amount), sym
			}
		}
	}
	if payload == nil || dest == "" {
		return chains.Announcement{}, false
	}
	pub := pubKey(dest)
	ann, err := edstealth.DecodeAnnouncement(pub, payload)
	if err != nil {
		return chains.Announcement{}, false
	}
	pos, _ := strconv.ParseUint(t.PT, 10, 64)
	return chains.Announcement{
		StealthAddress: dest, EphemeralPubKey: ann.EphemeralPub[:], ViewTag: ann.ViewTag,
		Asset: assetSym, Amount: amountString(big.NewInt(amt)), TxHash: t.Hash, Position: pos,
	}, true
}

// verifiedSource checks the envelope's signature by its source account
// (with this network's passphrase) and returns that account: resolution
// trusts only what the owner signed, never Horizon's word.
func (c *Connector) verifiedSource(env xdr.TransactionEnvelope) (string, bool) {
	if env.IsFeeBump() {
		return "", false
	}
	h, err := network.HashTransactionInEnvelope(env, c.cfg.NetworkPassphrase)
	if err != nil {
		return "", false
	}
	src := env.SourceAccount().ToAccountId().Address()
	pub := pubKey(src)
	for _, s := range env.Signatures() {
		if len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, h[:], s.Signature) {
			return src, true
		}
	}
	return "", false
}

// registrations is the name index's Page: the registry account's
// history after cursor, every registration decoded.
func (c *Connector) registrations(ctx context.Context, cursor string) ([]names.Entry, bool, error) {
	const page = 200
	txs, err := c.page(ctx, c.cfg.RegistryAccount, cursor, page)
	if err != nil {
		return nil, false, err
	}
	out := make([]names.Entry, len(txs))
	for i, t := range txs {
		out[i].Cursor = t.PT
		out[i].Name, out[i].Record, _ = c.decodeRegistration(t)
	}
	return out, len(txs) == page, nil
}

// decodeRegistration reads a registration: the ManageData entries
// veil.name and veil.meta set by the envelope's source, whose signature
// is verified here.
func (c *Connector) decodeRegistration(t hProtocol.Transaction) (string, names.Record, bool) {
	if !t.Successful {
		return "", names.Record{}, false
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(t.EnvelopeXdr, &env); err != nil {
		return "", names.Record{}, false
	}
	src, ok := c.verifiedSource(env)
	if !ok {
		return "", names.Record{}, false
	}
	var name string
	var meta []byte
	for _, op := range env.Operations() {
		if op.Body.Type != xdr.OperationTypeManageData || op.SourceAccount != nil && op.SourceAccount.ToAccountId().Address() != src {
			continue
		}
		o := op.Body.MustManageDataOp()
		if o.DataValue == nil {
			continue
		}
		switch string(o.DataName) {
		case NameData:
			name = string(*o.DataValue)
		case MetaData:
			meta = append([]byte(nil), (*o.DataValue)...)
		}
	}
	if !names.Valid(name, meta, edstealth.Stellar) {
		return "", names.Record{}, false
	}
	return name, names.Record{Owner: src, Meta: hex.EncodeToString(meta), TxHash: t.Hash, PT: t.PT}, true
}

// RegisterName publishes name → metaAddress, signed by ownerAddress: one
// transaction that sets the owner's data entries veil.name and veil.meta
// and pays the registry account 1 stroop so that its history lists the
// registration. The first registration of a name owns it; registering the
// same name to the same owner and meta-address again returns the original
// registration; the owner may re-register to replace the meta-address.
func (c *Connector) RegisterName(ctx context.Context, owner chains.KeyRef, ownerAddress, name, metaAddress string) (chains.TxResult, error) {
	r, err := c.reqs.Register(ownerAddress, name, metaAddress)
	if err != nil {
		return chains.TxResult{}, err
	}
	n, src, meta := r.Name, r.Owner, r.Meta
	raw := append(meta.Spend[:], meta.View[:]...)
	if h, err := c.registry.Check(ctx, n, src, hex.EncodeToString(raw)); err != nil || h != "" {
		return c.Result(h), err
	}
	key, it := intents.Registration[attempt](n, src, hex.EncodeToString(raw), meta.String(), owner)
	return c.run(ctx, key, it, func(ctx context.Context) ([]txnbuild.Operation, txnbuild.Memo, error) {
		idx, err := c.indexOp(ctx, c.cfg.RegistryAccount)
		if err != nil {
			return nil, nil, err
		}
		return []txnbuild.Operation{
			&txnbuild.ManageData{Name: NameData, Value: []byte(n)},
			&txnbuild.ManageData{Name: MetaData, Value: raw},
			idx,
		}, nil, nil
	})
}

// ResolveName returns the meta-address registered for name, or an error
// matching chains.ErrNotFound.
func (c *Connector) ResolveName(ctx context.Context, name string) (string, error) {
	return c.registry.Resolve(ctx, name)
}

var (
	_ chains.PaymentVerifier    = (*Connector)(nil)
	_ chains.AnnouncementReader = (*Connector)(nil)
)

// TransfersIn returns what the successful transaction txHash delivered:
// createAccount and payment operations (XLM and the configured assets),
// claimable balances with a single claimant (a token stealth payment, to
// that claimant) and account merges (the merged balance, read from the
// result). An unknown or failed transaction matches chains.ErrNotFound.
func (c *Connector) TransfersIn(ctx context.Context, txHash string) ([]chains.Transfer, error) {
	t, err := c.successfulTx(ctx, txHash)
	if err != nil {
		return nil, err
	}
	return c.transfersOf(t)
}

// AnnouncementsIn implements chains.AnnouncementReader: the announcement
// of the successful transaction txHash, decoded as Scan decodes it (none
// when it announced nothing). Horizon lists closed ledgers only, so a
// transaction it returns is confirmed.
func (c *Connector) AnnouncementsIn(ctx context.Context, txHash string) ([]chains.Announcement, error) {
	t, err := c.successfulTx(ctx, txHash)
	if err != nil {
		return nil, err
	}
	if a, ok := c.DecodeAnnouncement(t); ok {
		return []chains.Announcement{a}, nil
	}
	return nil, nil
}

// successfulTx reads transaction txHash from Horizon; one that is not in
// the ledger or failed is an error matching chains.ErrNotFound.
func (c *Connector) successfulTx(ctx context.Context, txHash string) (hProtocol.Transaction, error) {
	if len(txHash) != 64 {
		return hProtocol.Transaction{}, fmt.Errorf("%w: transaction hash %q: want 64 hex digits", chains.ErrNotFound, txHash)
	}
	if _, err := hex.DecodeString(txHash); err != nil {
		return hProtocol.Transaction{}, fmt.Errorf("%w: transaction hash %q: want 64 hex digits", chains.ErrNotFound, txHash)
	}
	v, err := c.call(ctx, func() (any, error) { return c.hc.TransactionDetail(txHash) })
	if horizonclient.IsNotFoundError(err) {
		return hProtocol.Transaction{}, fmt.Errorf("%w: transaction %s is not in the stellar ledger", chains.ErrNotFound, txHash)
	}
	if err != nil {
		return hProtocol.Transaction{}, c.Unavailable("transaction", err)
	}
	t := v.(hProtocol.Transaction)
	if !t.Successful {
		return hProtocol.Transaction{}, fmt.Errorf("%w: transaction %s failed on stellar and moved nothing", chains.ErrNotFound, txHash)
	}
	return t, nil
}

// transfersOf decodes what a successful transaction delivered.
func (c *Connector) transfersOf(t hProtocol.Transaction) ([]chains.Transfer, error) {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(t.EnvelopeXdr, &env); err != nil {
		return nil, fmt.Errorf("stellar: transaction %s: envelope: %w", t.Hash, err)
	}
	var res xdr.TransactionResult
	_ = xdr.SafeUnmarshalBase64(t.ResultXdr, &res)
	pos, _ := strconv.ParseUint(t.PT, 10, 64)
	sym := func(a xdr.Asset) string {
		if a.Type == xdr.AssetTypeAssetTypeNative {
			return "XLM"
		}
		for _, ca := range c.cfg.Assets {
			if ca.Code == a.GetCode() && ca.Issuer == a.GetIssuer() {
				return ca.Code
			}
		}
		return ""
	}
	out := []chains.Transfer{}
	add := func(to, asset string, amt int64) {
		if asset != "" && amt > 0 {
			out = append(out, chains.Transfer{To: to, Asset: asset, Amount: amountString(big.NewInt(amt)), TxHash: t.Hash, Position: pos})
		}
	}
	for i, op := range env.Operations() {
		switch op.Body.Type {
		case xdr.OperationTypeCreateAccount:
			o := op.Body.MustCreateAccountOp()
			add(o.Destination.Address(), "XLM", int64(o.StartingBalance))
		case xdr.OperationTypePayment:
			o := op.Body.MustPaymentOp()
			add(o.Destination.ToAccountId().Address(), sym(o.Asset), int64(o.Amount))
		case xdr.OperationTypeCreateClaimableBalance:
			o := op.Body.MustCreateClaimableBalanceOp()
			if len(o.Claimants) == 1 {
				add(o.Claimants[0].MustV0().Destination.Address(), sym(o.Asset), int64(o.Amount))
			}
		case xdr.OperationTypeAccountMerge:
			d := op.Body.MustDestination()
			if rs, ok := res.OperationResults(); ok && i < len(rs) && rs[i].Tr != nil && rs[i].Tr.AccountMergeResult != nil && rs[i].Tr.AccountMergeResult.SourceAccountBalance != nil {
				add(d.ToAccountId().Address(), "XLM", int64(*rs[i].Tr.AccountMergeResult.SourceAccountBalance))
			}
		}
	}
	return out, nil
}

var _ chains.TransferScanner = (*Connector)(nil)

// ScanTransfers returns the transfers (as TransfersIn reads them) of every
// successful transaction after cursor (a Horizon paging token), at least
// limit when there are that many, ending on a transaction boundary, and
// the cursor to resume from. The empty cursor starts at the latest
// transaction: nothing older is returned.
func (c *Connector) ScanTransfers(ctx context.Context, cursor string, limit int) ([]chains.Transfer, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	if cursor == "" {
		v, err := c.call(ctx, func() (any, error) {
			return c.hc.Transactions(horizonclient.TransactionRequest{Order: horizonclient.OrderDesc, Limit: 1})
		})
		if err != nil {
			return nil, "", c.Unavailable("transactions", err)
		}
		recs := v.(hProtocol.TransactionsPage).Embedded.Records
		if len(recs) == 0 {
			return nil, "0", nil
		}
		return nil, recs[0].PT, nil
	}
	out := []chains.Transfer{}
	for len(out) < limit {
		v, err := c.call(ctx, func() (any, error) {
			return c.hc.Transactions(horizonclient.TransactionRequest{Cursor: cursor, Order: horizonclient.OrderAsc, Limit: 200})
		})
		if err != nil {
			return out, cursor, c.Unavailable("transactions", err)
		}
		recs := v.(hProtocol.TransactionsPage).Embedded.Records
		for _, t := range recs {
			if t.Successful {
				tr, err := c.transfersOf(t)
				if err != nil {
					return out, cursor, err
				}
				out = append(out, tr...)
			}
			cursor = t.PT
			if len(out) >= limit {
				break
			}
		}
		if len(recs) < 200 {
			break
		}
	}
	return out, cursor, nil
}
