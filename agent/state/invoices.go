package state

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/mr-tron/base58"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Invoice statuses.
const (
	InvoicePending = "pending"
	InvoicePaid    = "paid"
)

// AddressGenerator derives a fresh one-time stealth address of the agent on
// chain, and the ephemeral public key that lets the agent's enclave derive
// its private key. StealthAddresses builds one from meta-addresses.
type AddressGenerator func(ctx context.Context, chain chains.ID) (address string, ephemeralPub []byte, err error)

// DestinationPrep prepares an invoice's fresh one-time address on chain
// before the invoice is stored and shown (chains.DestinationPreparer: on
// Stellar the sponsor activates the account so a plain payment reaches
// it). An error stores nothing.
type DestinationPrep func(ctx context.Context, chain chains.ID, asset, address string, ephemeralPub []byte) error

// InvoiceRecord is an invoice as stored: the spec's Invoice plus the agent
// it belongs to and the ephemeral key of its one-time address.
type InvoiceRecord struct {
	tools.Invoice
	AgentID string `json:"agentId"`
	// EphemeralPubKey (hex) derives the key of PayTo with the agent's
	// viewing and spending keys.
	EphemeralPubKey string     `json:"ephemeralPubKey"`
	PaidAt          *time.Time `json:"paidAt,omitempty"`
	// Reference is the invoice's Solana Pay reference (base58 public key,
	// a fresh random one per invoice; Solana only): the payment URI asks
	// the payer's wallet to list it in the transfer, and the scanner finds
	// the payment with getSignaturesForAddress(reference).
	Reference string `json:"reference,omitempty"`
}

// InvoiceWatch is what the scanner of a chain watched by reference needs
// to find an invoice's payment (table invoice_watch, while it is pending).
type InvoiceWatch struct {
	AgentID   string     `json:"agentId"`
	InvoiceID string     `json:"invoiceId"`
	PayTo     string     `json:"payTo"`
	Asset     string     `json:"asset"`
	Reference string     `json:"reference"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// watchedByReference: chains whose payments are found per invoice (the
// Solana Pay reference and the one-time address's history), not by a
// chain-wide scan of transfers.
func watchedByReference(c chains.ID) bool { return c.Family() == chains.FamilySolana }

// newReference is a fresh Solana Pay reference: the public key of a
// random ed25519 key pair (the private key is dropped; nobody signs with
// it), base58.
func newReference() (string, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("random reference: %w", err)
	}
	return base58.Encode(pub), nil
}

func (s *Invoices) watchKey(c chains.ID, id string) string {
	return string(c) + "/" + s.agentID + "/" + id
}

// Invoices is one agent's invoices. It implements tools.Invoices.
type Invoices struct {
	store     persistence.Store
	agentID   string
	now       func() time.Time
	agentName string
	publicURL string
	gen       AddressGenerator
	prep      DestinationPrep
	// prepares: the chains whose prep activates the address (WithPrepares).
	prepares func(chains.ID) bool
}

// WithPrep makes prep run on every new invoice's address before it is
// stored (nil: none).
func (s *Invoices) WithPrep(prep DestinationPrep) *Invoices {
	s.prep = prep
	return s
}

var _ tools.Invoices = (*Invoices)(nil)

// NewInvoices serves the invoices of agentID (named agentName). publicURL
// is the base of payment links (paymentLink = publicURL + "/pay/" + id);
// gen gives each invoice its own one-time stealth address.
func NewInvoices(store persistence.Store, agentID string, now func() time.Time, agentName, publicURL string, gen AddressGenerator) *Invoices {
	return &Invoices{store: store, agentID: agentID, now: clock(now), agentName: agentName, publicURL: strings.TrimRight(publicURL, "/"), gen: gen}
}

func (s *Invoices) key(id string) string { return s.agentID + "/" + id }

// addressKey is the invoice_address key of an address on chain.
func addressKey(c chains.ID, addr string) string {
	if c.Family() == chains.FamilyEVM {
		addr = strings.ToLower(addr)
	}
	return string(c) + "/" + addr
}

// MaxIdempotencyKeyLen bounds an invoice's idempotency key.
const MaxIdempotencyKeyLen = 200

// Create stores a pending invoice with a fresh one-time address on
// inv.Chain under a new random id (a UUIDv4: 122 random bits from
// crypto/rand). The id is public — the pay page is /pay/<id> — so nothing
// about it follows from the agent, the message or the arguments; inv.ID
// must be empty. With a non-empty key, the first create stores
// <agentID>/<key> → id in the same atomic batch as the invoice, and a
// later create with that key returns the stored invoice (ErrIDReused when
// it asks for a different one).
func (s *Invoices) Create(ctx context.Context, inv tools.Invoice, key string) (tools.Invoice, error) {
	if err := checkAgentID(s.agentID); err != nil {
		return tools.Invoice{}, err
	}
	if inv.ID != "" {
		return tools.Invoice{}, fmt.Errorf("%w: an invoice's id is chosen by the store (random); pass an idempotency key to make a retry return the same invoice", ErrInvalid)
	}
	if len(key) > MaxIdempotencyKeyLen {
		return tools.Invoice{}, fmt.Errorf("%w: idempotency key longer than %d bytes", ErrInvalid, MaxIdempotencyKeyLen)
	}
	c, asset, amount, err := checkSpend(inv.Chain, inv.Asset, inv.Amount)
	if err != nil {
		return tools.Invoice{}, err
	}
	memo := strings.TrimSpace(inv.Memo)
	if memo == "" || len([]rune(memo)) > tools.MaxMemoLen {
		return tools.Invoice{}, fmt.Errorf("%w: memo must be 1 to %d characters", ErrInvalid, tools.MaxMemoLen)
	}
	if inv.ExpiresAt != nil && !inv.ExpiresAt.After(s.now()) {
		return tools.Invoice{}, fmt.Errorf("%w: the expiry %s is not in the future", ErrInvalid, inv.ExpiresAt.UTC().Format(time.RFC3339))
	}
	want := tools.Invoice{Invoice: client.Invoice{Amount: amount, Asset: asset.Symbol, Memo: memo}, Chain: c}
	if key != "" {
		if got, err := s.byKey(ctx, key); err == nil {
			return sameInvoice(got, want, key)
		} else if !errors.Is(err, ErrNotFound) {
			return tools.Invoice{}, err
		}
	}
	if s.gen == nil {
		return tools.Invoice{}, fmt.Errorf("%w: no stealth address generator", ErrInvalid)
	}
	var (
		addr string
		eph  []byte
		dest *Destination // recorded before the address is activated
		dv   uint64
	)
	if s.prep != nil && s.prepares != nil && s.prepares(c) {
		addr, eph, dest, dv, err = s.destination(ctx, c, asset.Symbol, key)
	} else if addr, eph, err = s.gen(ctx, c); err != nil {
		err = fmt.Errorf("one-time address for the invoice on %s: %w", c, err)
	}
	if err != nil {
		return tools.Invoice{}, err
	}
	if addr == "" || strings.Contains(addr, "/") {
		return tools.Invoice{}, fmt.Errorf("%w: generator returned address %q", ErrInvalid, addr)
	}
	if s.prep != nil {
		if err := s.prep(ctx, c, asset.Symbol, addr, eph); err != nil {
			return tools.Invoice{}, fmt.Errorf("preparing the invoice's one-time address on %s: %w", c, err)
		}
	}
	id, err := randomID()
	if err != nil {
		return tools.Invoice{}, err
	}
	rec := InvoiceRecord{
		Invoice: tools.Invoice{
			Invoice: client.Invoice{
				ID: id, AgentName: s.agentName, Amount: amount, Asset: asset.Symbol, Memo: memo,
				Status: InvoicePending, PaymentLink: s.publicURL + "/pay/" + id, CreatedAt: s.now().UTC(),
			},
			AgentID: s.agentID, Chain: c, PayTo: addr, ExpiresAt: utcPtr(inv.ExpiresAt),
		},
		AgentID:         s.agentID,
		EphemeralPubKey: hex.EncodeToString(eph),
	}
	ops := []persistence.Op{
		persistence.Put(TableInvoiceIndex, id, []byte(s.agentID), persistence.Absent()),
		persistence.Put(TableInvoiceAddress, addressKey(c, addr), []byte(s.key(id)), persistence.Absent()),
	}
	if watchedByReference(c) {
		if rec.Reference, err = newReference(); err != nil {
			return tools.Invoice{}, err
		}
		w := InvoiceWatch{AgentID: s.agentID, InvoiceID: id, PayTo: addr, Asset: asset.Symbol, Reference: rec.Reference, ExpiresAt: rec.ExpiresAt}
		ops = append(ops, persistence.Put(TableInvoiceWatch, s.watchKey(c, id), mustJSON(w), persistence.Absent()))
	}
	ops = append(ops, persistence.Put(TableInvoices, s.key(id), mustJSON(rec), persistence.Absent()))
	if key != "" {
		ops = append(ops, persistence.Put(TableInvoiceKeys, s.key(key), []byte(id), persistence.Absent()))
	}
	if dest != nil {
		// The activated address is the invoice's from now on; a reclaim
		// already started (Reclaiming) makes this batch conflict.
		d := *dest
		d.InvoiceID = id
		d.NextAt = time.Time{} // due: its reclaim follows the invoice now
		ops = append(ops, persistence.Put(TableInvoiceDestinations, d.key(), mustJSON(d), persistence.AtVersion(dv)))
	}
	_, err = s.store.Apply(ctx, ops...)
	var ce *persistence.ConflictError
	if key != "" && errors.As(err, &ce) && ce.Table == TableInvoiceKeys {
		// A concurrent create with the same key won.
		if got, gerr := s.byKey(ctx, key); gerr == nil {
			return sameInvoice(got, want, key)
		}
	}
	if err != nil {
		return tools.Invoice{}, fmt.Errorf("store invoice: %w", err)
	}
	return rec.Invoice, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// byKey returns the invoice first created with idempotency key key.
func (s *Invoices) byKey(ctx context.Context, key string) (tools.Invoice, error) {
	rec, err := s.store.Get(ctx, TableInvoiceKeys, s.key(key))
	if errors.Is(err, persistence.ErrNotFound) {
		return tools.Invoice{}, ErrNotFound
	}
	if err != nil {
		return tools.Invoice{}, err
	}
	return s.Get(ctx, string(rec.Value))
}

// randomID is a UUIDv4 read from crypto/rand.
func randomID() (string, error) {
	u, err := uuid.NewRandomFromReader(rand.Reader)
	if err != nil {
		return "", fmt.Errorf("random invoice id: %w", err)
	}
	return u.String(), nil
}

// checkSpend checks the chain, asset and amount of an invoice or a
// schedule (Schedules.Create) to be stored (ErrInvalid) and answers them
// canonical: the chain's id, the asset, the amount as its decimal.
func checkSpend(chain chains.ID, symbol, amount string) (chains.ID, tools.Asset, string, error) {
	c, err := chains.Parse(string(chain))
	if err != nil {
		return "", tools.Asset{}, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	asset, err := tools.LookupAsset(c, symbol)
	if err != nil {
		return "", tools.Asset{}, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	v, err := tools.ParseAmount(amount, asset)
	if err != nil {
		return "", tools.Asset{}, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return c, asset, v, nil
}

func sameInvoice(got, want tools.Invoice, key string) (tools.Invoice, error) {
	if got.Chain != want.Chain || got.Amount != want.Amount || got.Asset != want.Asset || got.Memo != want.Memo {
		return tools.Invoice{}, fmt.Errorf("%w: idempotency key %q already created invoice %s for other terms", ErrIDReused, key, got.ID)
	}
	return got, nil
}

// List returns the agent's invoices, newest first.
func (s *Invoices) List(ctx context.Context) ([]tools.Invoice, error) {
	recs, err := jsonrec.List[InvoiceRecord](ctx, s.store, TableInvoices, persistence.Query{Prefix: s.agentID + "/"})
	if err != nil {
		return nil, err
	}
	out := make([]tools.Invoice, len(recs))
	for i, rec := range recs {
		out[i] = rec.invoice()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

func (r InvoiceRecord) invoice() tools.Invoice {
	inv := r.Invoice
	inv.AgentID = r.AgentID
	return inv
}

// Get returns one of the agent's invoices.
func (s *Invoices) Get(ctx context.Context, id string) (tools.Invoice, error) {
	rec, _, err := s.record(ctx, id)
	if err != nil {
		return tools.Invoice{}, err
	}
	return rec.invoice(), nil
}

// Record returns the stored record of one of the agent's invoices.
func (s *Invoices) Record(ctx context.Context, id string) (InvoiceRecord, error) {
	rec, _, err := s.record(ctx, id)
	return rec, err
}

func (s *Invoices) record(ctx context.Context, id string) (InvoiceRecord, uint64, error) {
	var rec InvoiceRecord
	v, err := getJSON(ctx, s.store, TableInvoices, s.key(id), &rec)
	if errors.Is(err, ErrNotFound) {
		return rec, 0, fmt.Errorf("%w: invoice %s", ErrNotFound, id)
	}
	rec.Invoice.AgentID = rec.AgentID
	return rec, v, err
}

// MarkPaid flips a pending invoice to paid with txHash. It is idempotent:
// an invoice already paid is returned unchanged with changed false (raise
// invoice_paid only when changed is true). A pending invoice past its
// expiry is refused with ErrExpired: this is the one place the rule is
// checked, whichever path (scanner, POST /paid, scan) settles.
func (s *Invoices) MarkPaid(ctx context.Context, id, txHash string) (inv tools.Invoice, changed bool, err error) {
	if strings.TrimSpace(txHash) == "" {
		return tools.Invoice{}, false, fmt.Errorf("%w: empty transaction hash", ErrInvalid)
	}
	err = retry(ctx, func() error {
		rec, v, err := s.record(ctx, id)
		if err != nil {
			return err
		}
		if rec.Status == InvoicePaid {
			inv, changed = rec.invoice(), false
			return nil
		}
		now := s.now().UTC()
		if rec.Expired(now) {
			return fmt.Errorf("%w: invoice %s %s; it can no longer be paid, ask the payee for a new invoice", ErrExpired, id, rec.Closed())
		}
		h := txHash
		rec.Status, rec.TxHash, rec.PaidAt = InvoicePaid, &h, &now
		ops := []persistence.Op{persistence.Put(TableInvoices, s.key(id), mustJSON(rec), persistence.AtVersion(v))}
		if watchedByReference(rec.Chain) {
			// Paid: nothing more to watch for (Any: older invoices have no entry).
			ops = append(ops, persistence.Delete(TableInvoiceWatch, s.watchKey(rec.Chain, id), persistence.Any()))
		}
		if _, err := s.store.Apply(ctx, ops...); err != nil {
			return err
		}
		inv, changed = rec.invoice(), true
		return nil
	})
	return inv, changed, err
}

// GetInvoice finds any agent's invoice by id (GET /invoice/:id). The
// record's AgentID says whose it is.
func GetInvoice(ctx context.Context, store persistence.Store, id string) (InvoiceRecord, error) {
	rec, err := store.Get(ctx, TableInvoiceIndex, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return InvoiceRecord{}, fmt.Errorf("%w: invoice %s", ErrNotFound, id)
	}
	if err != nil {
		return InvoiceRecord{}, err
	}
	return NewInvoices(store, string(rec.Value), nil, "", "", nil).Record(ctx, id)
}

// InvoiceWatches lists the pending invoices watched by reference on chain
// (the scanner of a chain that implements chains.ReferenceScanner).
func InvoiceWatches(ctx context.Context, store persistence.Store, chain chains.ID) ([]InvoiceWatch, error) {
	return jsonrec.List[InvoiceWatch](ctx, store, TableInvoiceWatch, persistence.Query{Prefix: string(chain) + "/"})
}

// ForgetInvoiceWatch stops watching an invoice (one that expired long
// ago and was never paid: the scanner's clean-up).
func ForgetInvoiceWatch(ctx context.Context, store persistence.Store, chain chains.ID, w InvoiceWatch) error {
	_, err := store.Apply(ctx, persistence.Delete(TableInvoiceWatch, string(chain)+"/"+w.AgentID+"/"+w.InvoiceID, persistence.Any()))
	return err
}

// InvoiceByAddress finds the invoice whose one-time address is addr on
// chain (for the scanner).
func InvoiceByAddress(ctx context.Context, store persistence.Store, chain chains.ID, addr string) (InvoiceRecord, error) {
	rec, err := store.Get(ctx, TableInvoiceAddress, addressKey(chain, addr))
	if errors.Is(err, persistence.ErrNotFound) {
		return InvoiceRecord{}, fmt.Errorf("%w: no invoice pays to %s on %s", ErrNotFound, addr, chain)
	}
	if err != nil {
		return InvoiceRecord{}, err
	}
	agentID, id, ok := strings.Cut(string(rec.Value), "/")
	if !ok {
		return InvoiceRecord{}, fmt.Errorf("corrupt invoice_address entry %q", rec.Value)
	}
	return NewInvoices(store, agentID, nil, "", "", nil).Record(ctx, id)
}
