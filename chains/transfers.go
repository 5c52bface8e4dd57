package chains

import "context"

// Transfer is value that reached an address in a confirmed, successful
// transaction: the native asset or a token, sent plainly (a wallet paying an
// invoice's address) or through a stealth payment.
type Transfer struct {
	To     string `json:"to"`
	Asset  string `json:"asset"`
	Amount string `json:"amount"` // decimal, whole units
	TxHash string `json:"txHash"`
	// Position orders transfers on the chain (block, index).
	Position uint64 `json:"position"`
}

// PaymentVerifier is implemented by connectors that can say what a given
// transaction paid (POST /invoice/:id/paid with a txHash). It is optional:
// a chain without it cannot verify invoice payments by hash.
type PaymentVerifier interface {
	// TransfersIn returns the transfers of the confirmed, successful
	// transaction txHash (an empty list when it moved no value). A
	// transaction that is unknown, not yet confirmed deeply enough, or that
	// failed answers an error matching ErrNotFound that says which.
	TransfersIn(ctx context.Context, txHash string) ([]Transfer, error)
}

// AnnouncementReader is implemented by connectors that can list the
// stealth announcements of one transaction, exactly as Scan lists them, so
// that a payment between two agents of one Veil is delivered to the payee
// as soon as it is confirmed instead of at the next scan
// (actors/scanner.Instant). It is optional.
type AnnouncementReader interface {
	// AnnouncementsIn returns the announcements of the confirmed,
	// successful transaction txHash. A transaction that is unknown, not
	// yet confirmed deeply enough, or that failed answers an error
	// matching ErrNotFound that says which.
	AnnouncementsIn(ctx context.Context, txHash string) ([]Announcement, error)
}

// TransferScanner is implemented by connectors that can list every plain
// transfer the chain confirms, so that payments to an invoice's one-time
// address are found although nobody announced them. It is optional.
type TransferScanner interface {
	// ScanTransfers returns the transfers after cursor and the cursor to
	// resume from. The empty cursor starts at the chain's current confirmed
	// head (nothing older is returned). A page ends on a block boundary and
	// may hold somewhat more than limit transfers.
	ScanTransfers(ctx context.Context, cursor string, limit int) ([]Transfer, string, error)
}
