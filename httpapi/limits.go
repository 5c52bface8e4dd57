package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Limits bound what a slow, idle or oversized client can hold: the
// request's headers and body must arrive in time, replies must be taken in
// time, idle keep-alive connections close, and headers are capped. Zero
// fields take DefaultLimits' value. docs/api.md, "Limits".
type Limits struct {
	// ReadHeaderTimeout: the request line and headers must arrive within it.
	ReadHeaderTimeout time.Duration
	// BodyTimeout: a request's body must arrive within it, counted from
	// when the handler starts (right after the headers). Past it the read
	// fails, the client gets a 408 when it can still read one, and the
	// connection is closed. Requests without a body are not affected, so
	// a long answer (chat, the notification stream) is never cut by it.
	BodyTimeout time.Duration
	// WriteTimeout: an ordinary reply must be written within it, counted
	// from the end of the request's headers.
	WriteTimeout time.Duration
	// ChatWriteTimeout replaces WriteTimeout on POST /agent/:id/chat, whose
	// answer waits for a hosted model.
	ChatWriteTimeout time.Duration
	// IdleTimeout: a keep-alive connection with no request for this long
	// is closed.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers (net/http answers
	// 431 above it).
	MaxHeaderBytes int
}

// DefaultLimits are veild's defaults (its --*-timeout flags change them).
// The body deadline allows 64 KiB (the body cap) at about 2 KiB/s; the
// write deadline exceeds the 60 s an agent is given to answer.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 10 * time.Second,
	BodyTimeout:       30 * time.Second,
	WriteTimeout:      90 * time.Second,
	ChatWriteTimeout:  5 * time.Minute,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    64 << 10,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *time.Duration }{
		{&l.ReadHeaderTimeout, &d.ReadHeaderTimeout}, {&l.BodyTimeout, &d.BodyTimeout}, {&l.WriteTimeout, &d.WriteTimeout},
		{&l.ChatWriteTimeout, &d.ChatWriteTimeout}, {&l.IdleTimeout, &d.IdleTimeout},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	return l
}

// HTTPServer returns an http.Server that serves s with s's limits. Serve
// it on a listener: veild does, and so do the tests of the limits.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.bounds.ReadHeaderTimeout,
		WriteTimeout:      s.bounds.WriteTimeout,
		IdleTimeout:       s.bounds.IdleTimeout,
		MaxHeaderBytes:    s.bounds.MaxHeaderBytes,
		// No ReadTimeout: the body deadline is set per request by
		// bodyDeadline, which can answer a clear 408 in the error format
		// (a ReadTimeout only makes the JSON decoder fail).
	}
}

// errBodyTimeout: the request body did not arrive within BodyTimeout.
var errBodyTimeout = errors.New("request body timed out")

// bodyDeadline gives a request's body BodyTimeout to arrive by setting the
// connection's read deadline. net/http lifts it itself once the body has
// been read to its end (its background read for the next request clears
// the deadline), so the rest of the request — a model's answer — is not
// bound by it; TestBodyDeadlineDoesNotCutALongAnswer keeps that true. A
// request without a body gets no deadline.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// An error means the writer cannot set deadlines (not a net/http
		// connection, e.g. httptest.ResponseRecorder): nothing to bound.
		if err := rc.SetReadDeadline(time.Now().Add(s.bounds.BodyTimeout)); err == nil {
			b := &deadlineBody{ReadCloser: r.Body, w: w, timeout: s.bounds.BodyTimeout}
			r.Body = b
			r = r.WithContext(context.WithValue(r.Context(), keyBody, b))
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody turns a deadline error into errBodyTimeout and asks for the
// connection to close.
type deadlineBody struct {
	io.ReadCloser
	w       http.ResponseWriter
	timeout time.Duration
	// timedOut is set when the deadline cut the body: json.Decoder.More
	// reports an I/O error as "no more data", so decodeJSON asks here.
	timedOut bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.w.Header().Set("Connection", "close")
		b.timedOut = true
		return n, errBodyTimeout
	}
	return n, err
}

// bodyTimeout returns the request's BodyTimeout and whether its body was
// cut by it.
func bodyTimeout(r *http.Request) (limit time.Duration, cut bool) {
	b, _ := r.Context().Value(keyBody).(*deadlineBody)
	if b == nil {
		return 0, false
	}
	return b.timeout, b.timedOut
}

// bodyError maps a failure to read the request body: over the cap is a
// 413, too slow a 408; nil for anything else.
func bodyError(err error, limit time.Duration) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return Errorf(http.StatusRequestEntityTooLarge, "%s", tooLargeMessage(mbe.Limit))
	case errors.Is(err, errBodyTimeout):
		return Errorf(http.StatusRequestTimeout, "request body did not arrive within %s: send the whole body at once", strconv.FormatFloat(limit.Seconds(), 'f', -1, 64)+" s")
	}
	return nil
}

// extendWrite gives the current reply d to be written instead of the
// server's WriteTimeout (a long route such as chat).
func extendWrite(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}
