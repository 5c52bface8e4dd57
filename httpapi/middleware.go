package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/runtime/host"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyLogger
	keyAccount
	keyKeyHash
	keyBody      // *deadlineBody (limits.go)
	keyKeyRecord // apikey.Key of the request's key
)

// HeaderRequestID carries the request id in both directions.
const HeaderRequestID = "X-Request-Id"

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(keyLogger).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// accountFrom returns the authenticated account; auth guarantees it exists
// on every route behind it.
func accountFrom(ctx context.Context) apikey.Account {
	acc, _ := ctx.Value(keyAccount).(apikey.Account)
	return acc
}

func keyHashFrom(ctx context.Context) string {
	h, _ := ctx.Value(keyKeyHash).(string)
	return h
}

// keyFrom returns the record of the request's key (its scope included).
func keyFrom(ctx context.Context) apikey.Key {
	k, _ := ctx.Value(keyKeyRecord).(apikey.Key)
	return k
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe assigns the request id, puts a logger carrying it into the
// context, recovers panics into the error format and writes the access log.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(HeaderRequestID)
		if !requestIDRE.MatchString(id) {
			id = newRequestID()
		}
		w.Header().Set(HeaderRequestID, id)
		log := s.log.With(slog.String("request_id", id))
		ctx := context.WithValue(r.Context(), keyRequestID, id)
		ctx = context.WithValue(ctx, keyLogger, log)
		ctx = host.WithLogger(ctx, log)
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				// The stack goes to the log, never to the client.
				log.Error("handler panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				if sw.status == 0 {
					writeError(sw, http.StatusInternalServerError, "internal server error (request id "+id+")")
				}
			}
			route := chi.RouteContext(r.Context())
			pattern := ""
			if route != nil {
				pattern = route.RoutePattern()
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			log.Info("http request",
				slog.String("method", r.Method),
				slog.String("route", pattern),
				slog.Int("status", status),
				slog.Int("bytes", sw.bytes),
				slog.Duration("duration", time.Since(start)))
			if s.onRequest != nil {
				s.onRequest(r.Method, pattern, status, time.Since(start))
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// drain answers 503 once shutdown has begun, so that requests arriving on
// kept-alive connections are told to go elsewhere instead of being cut.
func (s *Server) drain(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
			// Retriable like every other 503 of a member that cannot serve
			// now: a client (or a balancer that has not yet noticed the
			// drain) sends it again elsewhere.
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "the server is shutting down; retry on another instance or in a moment")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody caps request bodies. A declared length over the cap is refused
// before reading; an undeclared one is cut by MaxBytesReader and reported by
// decodeJSON.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.maxBody {
			writeError(w, http.StatusRequestEntityTooLarge, tooLargeMessage(s.maxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		next.ServeHTTP(w, r)
	})
}

func tooLargeMessage(max int64) string {
	return "request body too large: the limit is " + strconv.FormatInt(max/1024, 10) + " KiB"
}

// authenticate requires a valid bearer key whose scope reaches the route
// (routeRules), puts its account and record in the context, and audits
// the request when it may change state. Every failure to authenticate is
// a 401 whose message says what to send instead; a known key refused
// (revoked, expired: 401; out of scope: 403) is audited too.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			writeError(w, http.StatusUnauthorized, "missing Authorization header: send Authorization: Bearer <API key>")
			return
		}
		scheme, key, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
			writeError(w, http.StatusUnauthorized, "malformed Authorization header: expected Bearer <API key>")
			return
		}
		key = strings.TrimSpace(key)
		acc, k, err := s.keys.Lookup(r.Context(), s.store, key)
		switch {
		case errors.Is(err, apikey.ErrMalformed):
			writeError(w, http.StatusUnauthorized, "malformed API key: expected veil_live_ followed by 43 base64url characters")
			return
		case errors.Is(err, apikey.ErrUnknown):
			writeError(w, http.StatusUnauthorized, "invalid API key")
			return
		case errors.Is(err, apikey.ErrRevoked):
			msg := "this API key (" + k.ID + ") was revoked at " + k.RevokedAt.UTC().Format(time.RFC3339) + "; use another key"
			s.auditRefused(r, acc, k, http.StatusUnauthorized, "key revoked")
			writeError(w, http.StatusUnauthorized, msg)
			return
		case errors.Is(err, apikey.ErrExpired):
			msg := "this API key (" + k.ID + ") expired at " + k.ExpiresAt.UTC().Format(time.RFC3339) + "; use another key"
			s.auditRefused(r, acc, k, http.StatusUnauthorized, "key expired")
			writeError(w, http.StatusUnauthorized, msg)
			return
		case err != nil:
			loggerFrom(r.Context()).Error("api key lookup failed", slog.Any("err", err))
			writeError(w, http.StatusInternalServerError, "internal server error (request id "+requestIDFrom(r.Context())+")")
			return
		}
		pattern := ""
		if rc := chi.RouteContext(r.Context()); rc != nil {
			pattern = rc.RoutePattern()
		}
		if need := ruleFor(r.Method, pattern).scope; !k.Scope.Allows(need) {
			msg := "this API key's scope is " + string(k.Scope) + "; " + r.Method + " " + pattern + " needs " + string(need) + " (docs/api.md, Key scopes)"
			s.auditRefused(r, acc, k, http.StatusForbidden, "scope "+string(k.Scope)+" below "+string(need))
			writeError(w, http.StatusForbidden, msg)
			return
		}
		ctx := context.WithValue(r.Context(), keyAccount, acc)
		ctx = context.WithValue(ctx, keyKeyHash, apikey.Hash(key))
		ctx = context.WithValue(ctx, keyKeyRecord, k)
		r = r.WithContext(ctx)
		if mutating(r.Method) {
			s.audited(w, r, acc, k, next)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decodeJSON reads one JSON value into v. Oversized bodies are 413, anything
// else that is not a single well-typed JSON object is 400.
func decodeJSON(r *http.Request, v any) error {
	dec := jsonDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		limit, _ := bodyTimeout(r)
		if berr := bodyError(err, limit); berr != nil {
			return berr
		}
		// Before a 400 for what arrived, the rest of the body must
		// arrive too: a body trickled past BodyTimeout is a 408 whatever
		// its first bytes were (net/http would otherwise wait for it
		// anyway before sending the 400).
		if _, derr := io.Copy(io.Discard, r.Body); derr != nil {
			if berr := bodyError(derr, limit); berr != nil {
				return berr
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return Errorf(http.StatusBadRequest, "request body is empty: expected a JSON object")
		default:
			return Errorf(http.StatusBadRequest, "request body is not valid JSON for this endpoint: %s", jsonErrorText(err))
		}
	}
	more := dec.More()
	if limit, cut := bodyTimeout(r); cut {
		return bodyError(errBodyTimeout, limit)
	}
	if more {
		return Errorf(http.StatusBadRequest, "request body has data after the JSON object")
	}
	return nil
}
