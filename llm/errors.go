package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinels for errors.Is. A RequestError wraps ErrUnknownProvider or
// ErrMissingKey; a ProviderError wraps ErrProvider (and
// context.DeadlineExceeded when it timed out).
var (
	ErrUnknownProvider = errors.New("llm: unknown model provider")
	ErrMissingKey      = errors.New("llm: missing model API key")
	ErrProvider        = errors.New("llm: model provider failed")
)

// RequestError is a problem with the caller's model headers (X-AI-Provider,
// X-AI-Key): the HTTP layer answers 400 with Error() as the message.
type RequestError struct {
	msg string
	err error
}

func (e *RequestError) Error() string { return e.msg }

// Unwrap returns ErrUnknownProvider or ErrMissingKey.
func (e *RequestError) Unwrap() error { return e.err }

// HTTPStatus is 400.
func (e *RequestError) HTTPStatus() int { return http.StatusBadRequest }

// IsRequestError reports whether err is (or wraps) a RequestError.
func IsRequestError(err error) bool {
	var re *RequestError
	return errors.As(err, &re)
}

// ProviderError is a failure of the model provider: the key was rejected
// (401/403), the provider timed out or was unreachable, or it answered with
// an error status or a response we cannot use. The HTTP layer answers 502
// with Error() as the message. The text never contains the caller's key:
// authentication failures carry no upstream text at all, other upstream
// messages are redacted and cut to 200 characters, and the raw upstream
// error is not retained (Unwrap yields only sentinels).
type ProviderError struct {
	// Provider is who failed (veil means the hosted endpoint).
	Provider Provider
	// Status is the provider's HTTP status, 0 when there was no response.
	Status int
	// Timeout is set when the call ran out of time.
	Timeout bool
	msg     string
}

func (e *ProviderError) Error() string { return e.msg }

// HTTPStatus is 502.
func (e *ProviderError) HTTPStatus() int { return http.StatusBadGateway }

// Unwrap returns ErrProvider, and context.DeadlineExceeded for a timeout.
func (e *ProviderError) Unwrap() []error {
	if e.Timeout {
		return []error{ErrProvider, context.DeadlineExceeded}
	}
	return []error{ErrProvider}
}

// IsProviderError reports whether err is (or wraps) a ProviderError.
func IsProviderError(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe)
}

func (p Provider) display() string {
	switch p {
	case OpenAI:
		return "OpenAI"
	case Anthropic:
		return "Anthropic"
	default:
		return "the hosted model endpoint"
	}
}

// callInfo is what the HTTP client saw during one model call; the adapter
// puts it in the call's context and the client fills it in.
type callInfo struct {
	requested bool // an HTTP request was attempted
	status    int
	transport error
}

// providerError turns whatever langchaingo returned into a ProviderError
// whose text is safe to show: key redacted, upstream text bounded.
func providerError(p Provider, key string, timeout time.Duration, info *callInfo, timedOut bool, err error) *ProviderError {
	pe := &ProviderError{Provider: p, Status: info.status}
	who := p.display()
	switch {
	case timedOut:
		pe.Timeout = true
		pe.msg = fmt.Sprintf("%s did not answer within %s", who, timeout)
	case info.status == http.StatusUnauthorized || info.status == http.StatusForbidden:
		if p == Veil {
			pe.msg = fmt.Sprintf("%s rejected the configured key (HTTP %d)", who, info.status)
		} else {
			pe.msg = fmt.Sprintf("%s rejected the API key given in X-AI-Key (HTTP %d)", who, info.status)
		}
	case info.status == http.StatusTooManyRequests:
		pe.msg = fmt.Sprintf("%s is rate limiting requests (HTTP 429); try again later", who)
	case info.status != 0 && info.status != http.StatusOK:
		pe.msg = fmt.Sprintf("%s answered with an error (HTTP %d)", who, info.status)
		if detail := upstreamDetail(err, key); detail != "" {
			pe.msg += ": " + detail
		}
	case info.transport != nil:
		pe.msg = fmt.Sprintf("%s could not be reached", who)
	default:
		pe.msg = fmt.Sprintf("%s sent a response Veil could not use", who)
		if detail := upstreamDetail(err, key); detail != "" {
			pe.msg += ": " + detail
		}
	}
	return pe
}

// upstreamDetail extracts the provider's own message from a langchaingo
// error ("... status code: 503: <message>"), redacted and bounded.
func upstreamDetail(err error, key string) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.Index(s, "status code: "); i >= 0 {
		s = s[i+len("status code: "):]
		if j := strings.Index(s, ": "); j >= 0 {
			s = s[j+2:]
		} else {
			s = ""
		}
	} else {
		for _, prefix := range []string{"anthropic: failed to create message: ", "anthropic: "} {
			s = strings.TrimPrefix(s, prefix)
		}
	}
	s = Redact(s, key)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// Redact removes a secret from text: the secret itself, any word sharing
// eight or more consecutive characters with it, and anything that looks
// like an API key (sk-…, key-…). It is used on every upstream message
// before it reaches an error.
func Redact(text, secret string) string {
	if secret != "" {
		text = strings.ReplaceAll(text, secret, "[redacted]")
	}
	words := strings.Fields(text)
	changed := false
	for i, w := range words {
		core := strings.Trim(w, ".,;:()[]{}\"'`")
		if core == "" || core == "[redacted]" {
			continue
		}
		lc := strings.ToLower(core)
		if strings.HasPrefix(lc, "sk-") || strings.HasPrefix(lc, "sk_") || strings.HasPrefix(lc, "key-") ||
			(secret != "" && sharesRun(core, secret, 8)) {
			words[i] = strings.Replace(w, core, "[redacted]", 1)
			changed = true
		}
	}
	if !changed {
		return text
	}
	return strings.Join(words, " ")
}

// sharesRun reports whether a and b have a common substring of n bytes.
func sharesRun(a, b string, n int) bool {
	if len(a) < n || len(b) < n {
		return false
	}
	for i := 0; i+n <= len(a); i++ {
		if strings.Contains(b, a[i:i+n]) {
			return true
		}
	}
	return false
}

// RebuildRequestError recreates a RequestError that another cluster member
// reported (actors/msg); kind is ErrUnknownProvider or ErrMissingKey.
func RebuildRequestError(msg string, kind error) *RequestError {
	return &RequestError{msg: msg, err: kind}
}

// RebuildProviderError recreates a ProviderError that another cluster
// member reported, with its already-redacted text.
func RebuildProviderError(p Provider, status int, timeout bool, msg string) *ProviderError {
	return &ProviderError{Provider: p, Status: status, Timeout: timeout, msg: msg}
}
