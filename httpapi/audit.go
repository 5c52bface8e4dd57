package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
)

// The audit trail (runtime/audit, docs/api.md "Audit trail"): every
// mutating request that passes authentication leaves exactly one record,
// written when its status is known and before the client sees it; every
// refused attempt of a known key (revoked, expired, out of scope) leaves
// one too. Handlers add what changed (auditNote).

const keyAudit ctxKey = 100 // *auditEntry

// auditEntry is the record of one request while it runs.
type auditEntry struct {
	mu   sync.Mutex
	rec  audit.Record
	done bool
}

// auditNote lets a handler say what its request changed: the agent it
// made, the payments it moved, a short description. It does nothing on a
// request that is not audited.
func auditNote(r *http.Request, f func(rec *audit.Record)) {
	e, _ := r.Context().Value(keyAudit).(*auditEntry)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f(&e.rec)
}

// baseRecord is the part of a record every request of this key shares.
func baseRecord(r *http.Request, acc apikey.Account, k apikey.Key, now time.Time) audit.Record {
	route := ""
	if rc := chi.RouteContext(r.Context()); rc != nil {
		route = rc.RoutePattern()
	}
	rec := audit.Record{
		Time:      now,
		AccountID: acc.ID,
		KeyID:     k.ID,
		KeyName:   k.Name,
		RequestID: requestIDFrom(r.Context()),
		Source:    sourceAddr(r),
		Method:    r.Method,
		Route:     route,
		Path:      r.URL.Path,
		Action:    ruleFor(r.Method, route).action,
	}
	for _, p := range []string{"id", "agentId"} {
		if id := chi.URLParam(r, p); isUUID(id) {
			rec.AgentID = id
			break
		}
	}
	return rec
}

func sourceAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// appendAudit writes rec; a failure is logged (the request's effect has
// happened and its answer is due) and counted by the log's error rate.
func (s *Server) appendAudit(ctx context.Context, rec audit.Record) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := audit.Append(ctx, s.store, rec)
	switch {
	case rec.ID != "" && errors.Is(err, persistence.ErrConflict):
		// A chat turn wrote this request's record with its answer
		// (chatAudit): it stands.
		loggerFrom(ctx).Debug("audit record already written by the chat turn", slog.String("id", rec.ID))
	case err != nil:
		loggerFrom(ctx).Error("audit record not written", slog.String("action", rec.Action), slog.Int("status", rec.Status), slog.Any("err", err))
	}
}

// auditRefused records a known key's refused attempt.
func (s *Server) auditRefused(r *http.Request, acc apikey.Account, k apikey.Key, status int, why string) {
	rec := baseRecord(r, acc, k, s.now())
	rec.Status, rec.Outcome, rec.Detail = status, audit.OutcomeRefused, why
	s.appendAudit(r.Context(), rec)
}

// audited wraps a mutating request so that its record is written once,
// when the status is first written (or when the handler returns without
// writing, or panics).
func (s *Server) audited(w http.ResponseWriter, r *http.Request, acc apikey.Account, k apikey.Key, next http.Handler) {
	e := &auditEntry{rec: baseRecord(r, acc, k, s.now())}
	r = r.WithContext(context.WithValue(r.Context(), keyAudit, e))
	aw := &auditWriter{ResponseWriter: w, flush: func(status int) { s.finishAudit(r.Context(), e, status) }}
	defer func() {
		if p := recover(); p != nil {
			aw.record(http.StatusInternalServerError)
			panic(p)
		}
		aw.record(http.StatusOK)
	}()
	next.ServeHTTP(aw, r)
}

func (s *Server) finishAudit(ctx context.Context, e *auditEntry, status int) {
	e.mu.Lock()
	if e.done {
		e.mu.Unlock()
		return
	}
	e.done = true
	e.rec.Status = status
	if e.rec.Outcome == "" {
		e.rec.Outcome = audit.OutcomeOK
		if status >= 400 {
			e.rec.Outcome = audit.OutcomeFailed
		}
	}
	rec := e.rec
	e.mu.Unlock()
	s.appendAudit(ctx, rec)
}

// auditWriter writes the audit record before the status goes out.
type auditWriter struct {
	http.ResponseWriter
	once  sync.Once
	flush func(status int)
}

func (w *auditWriter) record(status int) { w.once.Do(func() { w.flush(status) }) }

func (w *auditWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx informational answers are not the status
		w.record(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	w.record(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteFailure puts an error answer's message in the request's record.
func noteFailure(r *http.Request, msg string) {
	auditNote(r, func(rec *audit.Record) {
		if rec.Detail == "" {
			rec.Detail = truncate(msg, 300)
		}
	})
}

// listAudit is GET /audit: the account's trail, newest first, filtered by
// since, until, agent, key, action and outcome; format=csv or jsonl
// exports (one page of up to limit records; follow the cursor for more).
// The operator's key may read another account's with account=NAME.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	acc, err := s.accountParam(r)
	if err != nil {
		return err
	}
	f := audit.Filter{AgentID: q.Get("agent"), KeyID: q.Get("key"), Action: q.Get("action"), Outcome: q.Get("outcome"), After: q.Get("cursor")}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return Errorf(http.StatusBadRequest, "%s %q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", p.name, truncate(v, 40))
			}
			*p.to = t
		}
	}
	switch f.Outcome {
	case "", audit.OutcomeOK, audit.OutcomeFailed, audit.OutcomeRefused:
	default:
		return Errorf(http.StatusBadRequest, "outcome %q: want ok, failed or refused", truncate(f.Outcome, 40))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > audit.MaxLimit {
			return Errorf(http.StatusBadRequest, "limit %q: want 1 to %d", truncate(v, 20), audit.MaxLimit)
		}
		f.Limit = n
	}
	format := strings.ToLower(q.Get("format"))
	if format == "" {
		format = "json"
	}
	if format != "json" && format != "csv" && format != "jsonl" {
		return Errorf(http.StatusBadRequest, "format %q: want json, csv or jsonl", truncate(format, 20))
	}
	recs, next, err := audit.List(r.Context(), s.store, acc.ID, f)
	if errors.Is(err, audit.ErrInvalid) {
		return &Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(err.Error(), "audit: invalid: "), Err: err}
	}
	if err != nil {
		return err
	}
	if next != "" {
		w.Header().Set("X-Next-Cursor", next)
	}
	switch format {
	case "csv":
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="veil-audit.csv"`)
		return audit.WriteCSV(w, recs, f.After == "")
	case "jsonl":
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="veil-audit.jsonl"`)
		return audit.WriteJSONL(w, recs)
	}
	out := AuditPage{Records: make([]client.AuditRecord, 0, len(recs))}
	for _, r := range recs {
		out.Records = append(out.Records, client.AuditRecord(r))
	}
	if next != "" {
		out.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// AuditPage is GET /audit's JSON answer (the Go client's type: its
// records convert from runtime/audit's field for field).
type AuditPage = client.AuditPage

// auditChat notes what a chat did: the tools it ran and the payments
// (payment ids, transaction hashes, invoices, approvals) they reported.
func auditChat(r *http.Request, reply *agent.ChatReply) {
	if reply == nil {
		return
	}
	auditNote(r, func(rec *audit.Record) { agent.NoteChatAudit(rec, reply.ToolCalls) })
}

// chatAudit is the request's audit record as it will read if the chat
// succeeds, for the agent to write in the commit that stores the answer
// (agent.Chat.Audit); false when the request is not audited.
func chatAudit(r *http.Request) (*audit.Record, bool) {
	e, _ := r.Context().Value(keyAudit).(*auditEntry)
	if e == nil {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// The record's id is fixed here, so that if the turn wrote it and the
	// request still failed here (its context ended while the answer was
	// on its way), the middleware's write of the same id finds it written
	// and leaves it: one record per request whatever happens.
	prepared, _, err := audit.Prepare(e.rec)
	if err != nil {
		return nil, false
	}
	e.rec.ID, e.rec.Time = prepared.ID, prepared.Time
	rec := e.rec
	rec.Status, rec.Outcome = http.StatusOK, audit.OutcomeOK
	return &rec, true
}

// auditWritten marks the request's record as written by someone else (a
// chat turn wrote it with its answer), so that no second one is.
func auditWritten(r *http.Request) {
	e, _ := r.Context().Value(keyAudit).(*auditEntry)
	if e == nil {
		return
	}
	e.mu.Lock()
	e.done = true
	e.mu.Unlock()
}
