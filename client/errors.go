package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Error is a non-2xx answer of the server: the spec's error body
// {message, statusCode}. Match it with errors.As or the Is… helpers.
type Error struct {
	// StatusCode is the HTTP status (the body's statusCode when the body
	// is the spec's error format, which repeats the wire status).
	StatusCode int
	// Message is the server's human-readable message.
	Message string
	// Method and Path name the request.
	Method, Path string
	// RequestID is the server's X-Request-Id, for its logs.
	RequestID string
	// RetryAfter is the server's Retry-After (0 when absent).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("veil: %s %s: %d %s", e.Method, e.Path, e.StatusCode, e.Message)
}

// errorBody is the spec's error format.
type errorBody struct {
	Message    *string `json:"message"`
	StatusCode *int    `json:"statusCode"`
}

func newError(method, path string, resp *http.Response, raw []byte, wait time.Duration) *Error {
	e := &Error{StatusCode: resp.StatusCode, Method: method, Path: path, RequestID: resp.Header.Get("X-Request-Id")}
	if wait > 0 {
		e.RetryAfter = wait
	}
	var b errorBody
	if json.Unmarshal(raw, &b) == nil && b.Message != nil {
		e.Message = *b.Message
		return e
	}
	// Not the spec's body (a proxy's page, say): keep a short, printable
	// excerpt, or the status text.
	text := strings.TrimSpace(string(raw))
	if !utf8.ValidString(text) || strings.HasPrefix(text, "<") {
		text = ""
	}
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		text = http.StatusText(resp.StatusCode)
	}
	e.Message = text
	return e
}

// StatusCode returns the HTTP status of an *Error in err's chain, or 0.
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// IsNotFound reports a 404: the agent, conversation or invoice does not
// exist or belongs to another account (the server does not tell which).
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsUnauthorized reports a 401: the API key is missing, malformed or
// unknown.
func IsUnauthorized(err error) bool { return StatusCode(err) == http.StatusUnauthorized }

// IsBadRequest reports a 400: invalid parameters or signature.
func IsBadRequest(err error) bool { return StatusCode(err) == http.StatusBadRequest }

// IsConflict reports a 409: the agent name is taken.
func IsConflict(err error) bool { return StatusCode(err) == http.StatusConflict }

// IsRateLimited reports a 429.
func IsRateLimited(err error) bool { return StatusCode(err) == http.StatusTooManyRequests }

// IsUnavailable reports a 503: the server is draining, an agent did not
// answer in time, or a chain is unreachable; retry later.
func IsUnavailable(err error) bool { return StatusCode(err) == http.StatusServiceUnavailable }
