package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// The lists people page through (docs/api.md, "Lists and paging"): one
// page per request, newest first, with an opaque cursor to the next.

func (s *Server) listRoutes(r chi.Router) {
	r.Method(http.MethodGet, "/agent/{id}/invoices", asks(s, http.StatusOK, listInvoices))
	r.Method(http.MethodGet, "/agent/{id}/payments", asks(s, http.StatusOK, listPayments))
	r.Method(http.MethodGet, "/agent/{id}/payments/received", asks(s, http.StatusOK, listReceived))
	r.Method(http.MethodGet, "/agent/{id}/payments/{paymentId}", asks(s, http.StatusOK, func(r *http.Request, acc string) (*agent.GetPayment, error) {
		id, err := pathID(r, "paymentId", "payment")
		return &agent.GetPayment{AccountID: acc, PaymentID: id}, err
	}))
}

// listInvoices reads GET /agent/:id/invoices?status=&since=&limit=&cursor=.
// A bad filter is a 400 that asks nothing of the agent.
func listInvoices(r *http.Request, acc string) (*agent.ListInvoices, error) {
	q := r.URL.Query()
	status := q.Get("status")
	if err := state.CheckInvoiceStatus(status); err != nil {
		return nil, Errorf(http.StatusBadRequest, "status %q is not one of pending, paid, expired (pending: can still be paid; expired: unpaid past its expiresAt)", truncate(status, 40))
	}
	page, after, err := readPositionPage(q)
	if err != nil {
		return nil, err
	}
	return &agent.ListInvoices{AccountID: acc, Filter: state.InvoiceFilter{Status: status, Since: page.since, After: after, Limit: page.limit}}, nil
}

// listPayments reads GET /agent/:id/payments?status=&chain=&since=&limit=&cursor=.
// A payment's cursor is the id of the previous page's last record (the
// records' ids are time-ordered); it is opaque to clients all the same.
func listPayments(r *http.Request, acc string) (*agent.ListPayments, error) {
	q := r.URL.Query()
	status := tools.PaymentStatus(q.Get("status"))
	if status != "" && !status.Valid() {
		return nil, Errorf(http.StatusBadRequest, "status %q is not one of pending, broadcast, confirmed, failed, refused", truncate(string(status), 40))
	}
	chain, err := readChain(q)
	if err != nil {
		return nil, err
	}
	page, err := readPage(q)
	if err != nil {
		return nil, err
	}
	if page.cursor != "" && !isUUID(page.cursor) {
		return nil, errBadCursor()
	}
	return &agent.ListPayments{AccountID: acc, Filter: state.PaymentFilter{
		Status: status, Chain: chain, Since: page.since, Cursor: page.cursor, Limit: page.limit,
	}}, nil
}

// listReceived reads GET /agent/:id/payments/received?status=&chain=&since=&limit=&cursor=:
// the stealth payments the agent received, newest first, paged like the
// invoices (a position cursor).
func listReceived(r *http.Request, acc string) (*agent.ListReceived, error) {
	q := r.URL.Query()
	status := q.Get("status")
	if err := state.CheckReceivedStatus(status); err != nil {
		return nil, Errorf(http.StatusBadRequest, "status %q is not one of held, withdrawn (held: some of it is still at its one-time address; withdrawn: none is)", truncate(status, 40))
	}
	chain, err := readChain(q)
	if err != nil {
		return nil, err
	}
	page, after, err := readPositionPage(q)
	if err != nil {
		return nil, err
	}
	return &agent.ListReceived{AccountID: acc, Filter: state.ReceivedFilter{
		Chain: chain, Status: status, Since: page.since, After: after, Limit: page.limit,
	}}, nil
}

// readChain reads the chain filter ("" every chain); an unknown one is a
// 400 naming the chains.
func readChain(q url.Values) (chains.ID, error) {
	v := q.Get("chain")
	if v == "" {
		return "", nil
	}
	c, err := chains.Parse(v)
	if err != nil {
		return "", Errorf(http.StatusBadRequest, "chain %q is not one of %s", truncate(v, 40), chainNames())
	}
	return c, nil
}

// chainNames lists the chains a filter accepts.
func chainNames() string {
	var names []string
	for _, c := range chains.Order() {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// readPositionPage reads a page (readPage) of a list paged by position
// (state.Cursor: the invoices, the received payments), its cursor parsed.
func readPositionPage(q url.Values) (pageQuery, state.Cursor, error) {
	page, err := readPage(q)
	if err != nil {
		return page, state.Cursor{}, err
	}
	after, err := state.ParseCursor(page.cursor)
	if err != nil {
		return page, state.Cursor{}, errBadCursor()
	}
	return page, after, nil
}

func errBadCursor() error {
	return Errorf(http.StatusBadRequest, "cursor is not one this API gave out: pass nextCursor from the previous page unchanged (or leave it out for the first page)")
}

// pageQuery is what every paged list reads from its query: since, limit
// and cursor.
type pageQuery struct {
	since  time.Time
	cursor string
	limit  int
}

// readPage reads since (RFC 3339, or a date: that day's midnight UTC),
// limit (1 to state.MaxPageLimit; absent: state.DefaultPageLimit) and
// cursor (each list checks its own). Each wrong one is a 400 naming it.
func readPage(q url.Values) (pageQuery, error) {
	var p pageQuery
	if v := q.Get("since"); v != "" {
		t, err := parseSince(v)
		if err != nil {
			return p, Errorf(http.StatusBadRequest, "since %q is not a time: send RFC 3339 (2026-01-02T15:04:05Z) or a date (2026-01-02, midnight UTC)", truncate(v, 40))
		}
		p.since = t
	}
	p.limit = state.DefaultPageLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > state.MaxPageLimit {
			return p, Errorf(http.StatusBadRequest, "limit %q is not a whole number from 1 to %d", truncate(v, 20), state.MaxPageLimit)
		}
		p.limit = n
	}
	p.cursor = q.Get("cursor")
	return p, nil
}

func parseSince(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	t, err := time.Parse(time.DateOnly, v)
	return t.UTC(), err
}
