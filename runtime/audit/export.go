package audit

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/veilhq/veil/persistence"
)

// CSVHeader is the first line of a CSV export; the columns are Record's
// fields in this order.
var CSVHeader = []string{"id", "time", "accountId", "keyId", "keyName", "requestId", "source", "method", "route", "path", "agentId", "action", "status", "outcome", "detail", "paymentIds"}

// WriteCSV writes the header (when header) and one line per record.
// Payment ids are joined with spaces.
func WriteCSV(w io.Writer, recs []Record, header bool) error {
	cw := csv.NewWriter(w)
	if header {
		if err := cw.Write(CSVHeader); err != nil {
			return err
		}
	}
	for _, r := range recs {
		if err := cw.Write([]string{r.ID, r.Time.UTC().Format(time.RFC3339Nano), r.AccountID, r.KeyID, r.KeyName, r.RequestID, r.Source,
			r.Method, r.Route, r.Path, r.AgentID, r.Action, strconv.Itoa(r.Status), r.Outcome, csvSafe(r.Detail), strings.Join(r.PaymentIDs, " ")}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe keeps a spreadsheet from reading a cell as a formula (CSV
// injection): a detail can quote what a client sent.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// WriteJSONL writes one JSON object per line.
func WriteJSONL(w io.Writer, recs []Record) error {
	enc := json.NewEncoder(w)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Pruner deletes records older than Retention every Every, for the
// accounts Accounts names.
type Pruner struct {
	Retention time.Duration
	Every     time.Duration
	Accounts  func(ctx context.Context) ([]string, error)
	Now       func() time.Time
	Log       *slog.Logger
}

// Run prunes once at start and then every p.Every (default an hour) until
// ctx ends. A retention of zero or less keeps everything: Run returns at
// once. In a cluster every member prunes; deleting a deleted record is a
// no-op, so they need not agree on who.
func (p Pruner) Run(ctx context.Context, st persistence.Store) {
	if p.Retention <= 0 {
		return
	}
	every := p.Every
	if every <= 0 {
		every = time.Hour
	}
	now := p.Now
	if now == nil {
		now = time.Now
	}
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if accs, err := p.Accounts(ctx); err != nil {
			log.Warn("audit prune: list accounts", slog.Any("err", err))
		} else if n, err := Prune(ctx, st, accs, now().Add(-p.Retention)); err != nil {
			log.Warn("audit prune", slog.Any("err", err))
		} else if n > 0 {
			log.Info("audit prune", slog.Int("deleted", n), slog.Duration("retention", p.Retention))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
