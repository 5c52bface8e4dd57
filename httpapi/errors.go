package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/runtime/host"
)

// Error is a user-facing error: its Message goes to the client as is, in the
// spec's body {message, statusCode}. Anything that is not an *Error (or does
// not wrap one) is internal: the client sees a generic 500 and the log keeps
// the detail.
type Error struct {
	Status  int
	Message string
	// Err is the internal cause, logged but never sent.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Status, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds a user-facing error.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the spec's error format.
type errorBody struct {
	Message    string `json:"message"`
	StatusCode int    `json:"statusCode"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v == nil {
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Message: msg, StatusCode: status})
}

// classify maps any error to what the client may see.
func classify(err error) (int, string) {
	var he *Error
	var down *chains.DownError
	switch {
	case errors.As(err, &he):
		return he.Status, he.Message
	case errors.As(err, &down):
		return http.StatusServiceUnavailable, down.Error()
	case errors.Is(err, host.ErrStopping):
		return http.StatusServiceUnavailable, "the server is shutting down; retry on another instance or in a moment"
	case errors.Is(err, host.ErrFenced):
		return http.StatusServiceUnavailable, "this cluster member cannot serve agents right now (it is cut off from most of the cluster, or restarting to rejoin it); nothing was done: retry through another member or in a moment"
	case errors.Is(err, host.ErrStale):
		return http.StatusServiceUnavailable, "another cluster member took this agent over during the request; retry it (chat: with the same Idempotency-Key, so that nothing is done twice)"
	case errors.Is(err, host.ErrMemberLost):
		return http.StatusServiceUnavailable, "the cluster member hosting this agent failed during the request; retry it (chat: with the same Idempotency-Key, so that nothing is done twice)"
	case errors.Is(err, host.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the agent did not answer in time; retry the request"
	case errors.Is(err, context.Canceled):
		// The client went away; whatever we write is not read.
		return 499, "request cancelled"
	default:
		return http.StatusInternalServerError, "internal server error"
	}
}

// handler is an http.HandlerFunc that returns its error instead of writing it.
type handler func(w http.ResponseWriter, r *http.Request) error

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	err := h(w, r)
	if err == nil {
		return
	}
	status, msg := classify(err)
	log := loggerFrom(r.Context())
	if status >= 500 {
		log.Error("request failed", slog.Int("status", status), slog.Any("err", err))
		if status == http.StatusInternalServerError {
			msg = fmt.Sprintf("%s (request id %s)", msg, requestIDFrom(r.Context()))
		}
	} else {
		log.Debug("request rejected", slog.Int("status", status), slog.Any("err", err))
	}
	var down *chains.DownError
	if status == http.StatusServiceUnavailable && errors.As(err, &down) && down.RetryAfter > 0 {
		// A degraded chain's next connection attempt.
		w.Header().Set("Retry-After", strconv.Itoa(int(down.RetryAfter.Round(time.Second)/time.Second)))
	}
	noteFailure(r, msg)
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		// Every 503 here is retriable, most within a second or two.
		w.Header().Set("Retry-After", "1")
	}
	writeError(w, status, msg)
}
