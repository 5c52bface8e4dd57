package dstack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/veilhq/veil/enclave"
)

// Error kinds; match with errors.Is. Every *Error also matches
// enclave.ErrUnavailable (the provider cannot serve: HTTP 503).
var (
	// ErrUnreachable: the socket is missing, is not a socket, refuses the
	// connection, or the guest agent did not answer in time.
	ErrUnreachable = errors.New("dstack: guest agent unreachable")
	// ErrAgent: the guest agent answered with an error status (its RPC
	// errors are HTTP 400 with {"error": "…"}; an unknown path is 404).
	ErrAgent = errors.New("dstack: guest agent error")
	// ErrBadResponse: the guest agent answered 200 with something that is
	// not what its API promises (not JSON, a key that is not 32 bytes of
	// hex, a quote that does not carry the requested report data, …).
	ErrBadResponse = errors.New("dstack: unexpected guest agent response")
)

// Error is a failed request to the guest agent. Detail never carries key
// material: the guest agent's own error text is kept (it describes the
// request, never a key), reduced to printable ASCII and bounded; replies
// that fail to decode are described, not quoted.
type Error struct {
	Kind   error  // ErrUnreachable, ErrAgent or ErrBadResponse
	Socket string // the Unix socket path
	Method string // the RPC method, e.g. "GetKey"
	Status int    // HTTP status (ErrAgent)
	Detail string
	Err    error // the underlying I/O error (ErrUnreachable), if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("dstack: guest agent on unix socket ")
	b.WriteString(e.Socket)
	switch e.Kind {
	case ErrUnreachable:
		b.WriteString(" is unreachable")
	case ErrAgent:
		fmt.Fprintf(&b, ": %s answered HTTP %d", e.Method, e.Status)
	default:
		b.WriteString(": ")
		b.WriteString(e.Method)
		b.WriteString(": unexpected response")
	}
	if e.Kind == ErrUnreachable && e.Method != "" {
		b.WriteString(" (")
		b.WriteString(e.Method)
		b.WriteString(")")
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Is matches the error's kind and enclave.ErrUnavailable.
func (e *Error) Is(target error) bool { return target == e.Kind || target == enclave.ErrUnavailable }

// Unwrap returns the underlying I/O error, if any.
func (e *Error) Unwrap() error { return e.Err }

// maxReply bounds a reply body (a quote with its event log is tens of KiB).
const maxReply = 8 << 20

// maxDetail bounds the guest agent's error text kept in an Error.
const maxDetail = 300

// api is the set of paths of one guest agent interface.
type api struct {
	name                string
	getKey, quote, info string
}

var (
	apiDstack = api{name: APIDstack, getKey: "GetKey", quote: "GetQuote", info: "Info"}
	// The tappd interface that dstack's guest agent still serves on
	// tappd.sock (mounted under /prpc/, methods prefixed "Tappd.").
	apiTappd = api{name: APITappd, getKey: "Tappd.DeriveK256Key", quote: "Tappd.RawQuote", info: "Tappd.Info"}
)

func (a api) path(method string) string {
	if a.name == APITappd {
		return "/prpc/" + method
	}
	return "/" + method
}

// client speaks the guest agent's JSON RPC over its Unix socket: POST
// http://localhost/<Method> (dstack) or /prpc/Tappd.<Method> (tappd) with a
// JSON body and Content-Type application/json; bytes are hex strings.
type client struct {
	socket  string
	api     api
	timeout time.Duration
	http    *http.Client
}

func newClient(socket string, a api, timeout time.Duration) *client {
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:       4,
		IdleConnTimeout:    30 * time.Second,
		DisableCompression: true,
	}
	return &client{socket: socket, api: a, timeout: timeout, http: &http.Client{Transport: tr}}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// checkSocket reports a missing path, or one that is not a Unix socket,
// before the first request, so the error says what is wrong.
func (c *client) checkSocket() error {
	fi, err := os.Stat(c.socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Kind: ErrUnreachable, Socket: c.socket, Detail: "no such file (is the socket mounted into this container?)", Err: err}
	case err != nil:
		return &Error{Kind: ErrUnreachable, Socket: c.socket, Detail: err.Error(), Err: err}
	case fi.Mode().Type() != fs.ModeSocket:
		return &Error{Kind: ErrUnreachable, Socket: c.socket, Detail: "not a Unix socket"}
	}
	return nil
}

// call POSTs req as JSON to method and decodes the 200 reply into resp.
// Decoding failures are reported without the reply's content.
func (c *client) call(ctx context.Context, method string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("dstack: encode %s request: %w", method, err)
	}
	parent := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+c.api.path(method), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("dstack: %s request: %w", method, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("User-Agent", "veil-enclave")
	res, err := c.http.Do(hr)
	if err != nil {
		// The caller's cancellation or deadline is the caller's; our own
		// timeout is the guest agent's fault.
		if perr := parent.Err(); perr != nil {
			return perr
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return &Error{Kind: ErrUnreachable, Socket: c.socket, Method: method, Detail: fmt.Sprintf("no answer within %s", c.timeout), Err: ctxErr}
		}
		return &Error{Kind: ErrUnreachable, Socket: c.socket, Method: method, Detail: ioDetail(err), Err: err}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxReply+1))
	if err != nil {
		clear(data)
		if perr := parent.Err(); perr != nil {
			return perr
		}
		return &Error{Kind: ErrUnreachable, Socket: c.socket, Method: method, Detail: "reading the reply: " + ioDetail(err), Err: err}
	}
	if len(data) > maxReply {
		clear(data)
		return &Error{Kind: ErrBadResponse, Socket: c.socket, Method: method, Detail: fmt.Sprintf("reply larger than %d bytes", maxReply)}
	}
	if res.StatusCode != http.StatusOK {
		e := &Error{Kind: ErrAgent, Socket: c.socket, Method: method, Status: res.StatusCode}
		var ae struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &ae) == nil && ae.Error != "" {
			e.Detail = sanitize(ae.Error)
		} else if res.StatusCode == http.StatusNotFound {
			e.Detail = "no such method (is this the " + c.api.name + " API's socket?)"
		}
		clear(data)
		return e
	}
	err = json.Unmarshal(data, resp)
	clear(data)
	if err != nil {
		return &Error{Kind: ErrBadResponse, Socket: c.socket, Method: method, Detail: "the reply is not the JSON object the API describes"}
	}
	return nil
}

// ioDetail describes an I/O error by its cause (net errors repeat the
// socket path, which Error already names).
func ioDetail(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) && se.Err != nil {
		return se.Syscall + ": " + se.Err.Error()
	}
	return sanitize(err.Error())
}

// sanitize keeps printable ASCII and bounds the length.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxDetail {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\n' || r == '\t':
			b.WriteByte(' ')
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}

// Request and reply shapes (dstack guest agent, agent_rpc.proto; bytes are
// hex in JSON).

type getKeyArgs struct {
	Path      string `json:"path"`
	Purpose   string `json:"purpose"`
	Algorithm string `json:"algorithm,omitempty"`
}

// keyReply is GetKey's reply ({"key", "signature_chain"}) or
// Tappd.DeriveK256Key's ({"k256_key", "k256_signature_chain"}).
type keyReply struct {
	Key                string   `json:"key"`
	SignatureChain     []string `json:"signature_chain"`
	K256Key            string   `json:"k256_key"`
	K256SignatureChain []string `json:"k256_signature_chain"`
}

type quoteArgs struct {
	ReportData string `json:"report_data"`
}

type quoteReply struct {
	Quote      string `json:"quote"`
	EventLog   string `json:"event_log"`
	ReportData string `json:"report_data"` // GetQuote only
}

// appInfoReply is the guest agent's Info reply (the fields Veil uses).
type appInfoReply struct {
	AppID           string `json:"app_id"`
	InstanceID      string `json:"instance_id"`
	AppName         string `json:"app_name"`
	TCBInfo         string `json:"tcb_info"`
	ComposeHash     string `json:"compose_hash"`
	OSImageHash     string `json:"os_image_hash"`
	MRAggregated    string `json:"mr_aggregated"`
	KeyProviderInfo string `json:"key_provider_info"`
}

type tcbInfo struct {
	MRTD        string `json:"mrtd"`
	ComposeHash string `json:"compose_hash"`
}
