package httpapi_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/httpapi"
)

// serveLimited serves e's API through HTTPServer (the limits veild uses) on
// a loopback listener and returns its address.
func serveLimited(t *testing.T, e *env) string {
	addr, _ := serveLimitedCounting(t, e)
	return addr
}

// serveLimitedCounting is serveLimited that also counts the requests whose
// context net/http cancelled while their handler ran.
func serveLimitedCounting(t *testing.T, e *env) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := e.api.HTTPServer()
	var cancelled atomic.Int32
	inner := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			cancelled.Add(1)
		}
	})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), &cancelled
}

// raiseFileLimit lifts RLIMIT_NOFILE's soft limit to the hard one: the
// test holds both ends of ~1,000 connections in this process.
func raiseFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < need && lim.Max > lim.Cur {
		lim.Cur = min(lim.Max, need)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	if lim.Cur < need {
		t.Fatalf("RLIMIT_NOFILE is %d; the test needs %d descriptors", lim.Cur, need)
	}
}

// trickler is a client that sends a request's headers, declares a 64 KiB
// body and then sends it one byte at a time, forever.
type trickler struct {
	conn   net.Conn
	closed chan struct{} // closed when the server closed the connection
	status string        // the status line the server answered, if any
}

func trickle(t *testing.T, addr, key string, stop <-chan struct{}) *trickler {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	auth := ""
	if key != "" {
		auth = "Authorization: Bearer " + key + "\r\n"
	}
	head := "POST /agent/create HTTP/1.1\r\nHost: veil.test\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 65536\r\n\r\n{"
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	tr := &trickler{conn: c, closed: make(chan struct{})}
	go func() { // the writer: one byte every 50 ms until the connection breaks
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tr.closed:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	go func() { // the reader: what the server answers, then its close
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err == nil {
			tr.status = strings.TrimSpace(line)
			_, _ = io.Copy(io.Discard, br)
		}
		close(tr.closed)
	}()
	return tr
}

// get answers a normal request on a fresh connection.
func getStatus(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s while bodies trickle: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

const tricklers = 1000

// 1,000 connections trickling their bodies (half with an API key, half
// without) do not stop the server answering others: while all of them are
// held open (a body deadline far away), /health and an authenticated
// /agents are answered.
func TestTricklingBodiesDoNotStarveOthers(t *testing.T) {
	raiseFileLimit(t, 3*tricklers)
	e := newEnv(t, envOptions{limits: httpapi.Limits{BodyTimeout: time.Hour}})
	addr := serveLimited(t, e)
	stop := make(chan struct{})
	defer close(stop)
	var all []*trickler
	for i := range tricklers {
		key := ""
		if i%2 == 0 {
			key = e.key
		}
		all = append(all, trickle(t, addr, key, stop))
	}
	for i := range 20 {
		if s := getStatus(t, "http://"+addr+"/health", ""); s != 200 {
			t.Fatalf("health %d = %d", i, s)
		}
		if s := getStatus(t, "http://"+addr+"/agents", e.key); s != 200 {
			t.Fatalf("agents %d = %d", i, s)
		}
	}
	open := 0
	for _, tr := range all {
		select {
		case <-tr.closed:
		default:
			open++
		}
	}
	if open != tricklers {
		t.Fatalf("only %d of %d trickling connections were still held while the others were served", open, tricklers)
	}
	for _, tr := range all {
		tr.conn.Close()
	}
}

// With the body deadline (1 s here, 30 s by default), every one of 1,000
// trickling connections is closed by the server — the keyed ones after a
// 408 in the error format, the unkeyed ones after their 401 — and the
// server answers normally afterwards. Without the deadline they would be
// held for the 22 minutes their 64 KiB take.
func TestTricklingBodiesAreCut(t *testing.T) {
	raiseFileLimit(t, 3*tricklers)
	e := newEnv(t, envOptions{limits: httpapi.Limits{BodyTimeout: time.Second}})
	addr := serveLimited(t, e)
	stop := make(chan struct{})
	defer close(stop)
	var all []*trickler
	for i := range tricklers {
		key := ""
		if i%2 == 0 {
			key = e.key
		}
		all = append(all, trickle(t, addr, key, stop))
	}
	deadline := time.After(3 * time.Minute) // generous: a loaded machine
	for i, tr := range all {
		select {
		case <-tr.closed:
		case <-deadline:
			t.Fatalf("connection %d still open (answered %q)", i, tr.status)
		}
		want := "HTTP/1.1 401 Unauthorized"
		if i%2 == 0 {
			want = "HTTP/1.1 408 Request Timeout"
		}
		if tr.status != want {
			t.Fatalf("connection %d answered %q, want %q", i, tr.status, want)
		}
		tr.conn.Close()
	}
	if s := getStatus(t, "http://"+addr+"/agents", e.key); s != 200 {
		t.Fatalf("agents after = %d", s)
	}
}

// The 408 is in the spec's error format, and nothing of the cut request
// was acted on.
func TestBodyTimeoutIsA408AndChangesNothing(t *testing.T) {
	e := newEnv(t, envOptions{limits: httpapi.Limits{BodyTimeout: 200 * time.Millisecond}})
	addr := serveLimited(t, e)
	before := e.dumpTables(t)
	o := newEVMOwner(t)
	body := fmt.Sprintf(`{"name":"slow","chain":"ethereum","wallet":%q,"signature":%q}`, o.wallet(), o.sign("x"))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// All but the last byte: the body never completes.
	fmt.Fprintf(c, "POST /agent/create HTTP/1.1\r\nHost: veil.test\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", e.key, len(body), body[:len(body)-1])
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, body: raw}
	msg, code := r.errorBody(t)
	if resp.StatusCode != 408 || code != 408 || !strings.Contains(msg, "did not arrive") || !resp.Close {
		t.Fatalf("slow body = %d close=%v %s", resp.StatusCode, resp.Close, raw)
	}
	if after := e.dumpTables(t); after != before {
		t.Fatalf("a cut request changed the store")
	}
}

// A body that arrives in time lifts its deadline: a chat whose answer
// takes longer than the body deadline (here the agent is held 1 s, five
// times the deadline) is answered, not cut — net/http cancels a request's
// context when a read deadline expires after its body was read — and the
// kept-alive connection serves the next request.
func TestBodyDeadlineDoesNotCutALongAnswer(t *testing.T) {
	const bodyTimeout = 200 * time.Millisecond
	var hold atomic.Bool
	e := newEnv(t, envOptions{limits: httpapi.Limits{BodyTimeout: bodyTimeout}, failpoint: func(name string) error {
		if name == agent.FailAfterTools && hold.Load() {
			<-time.After(5 * bodyTimeout) // a slow model, on the server side
		}
		return nil
	}})
	addr, cancelled := serveLimitedCounting(t, e)
	a := e.create(t, newEVMOwner(t), "patient", "ethereum")
	hold.Store(true)
	client := &http.Client{Timeout: time.Minute}
	var conns atomic.Int32
	for i := range 2 {
		req, _ := http.NewRequest("POST", "http://"+addr+"/agent/"+a.ID+"/chat", strings.NewReader(`{"message":"what's my balance"}`))
		req.Header.Set("Authorization", "Bearer "+e.key)
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if !info.Reused {
				conns.Add(1)
			}
		}}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("chat %d = %d %s", i, resp.StatusCode, raw)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the two chats used %d connections; the first was not kept alive", n)
	}
	if n := cancelled.Load(); n != 0 {
		t.Fatalf("%d chats had their context cancelled by the body deadline", n)
	}
}

// Headers over MaxHeaderBytes are refused (431) and an idle keep-alive
// connection is closed by the server after IdleTimeout.
func TestHeaderCapAndIdleTimeout(t *testing.T) {
	e := newEnv(t, envOptions{limits: httpapi.Limits{IdleTimeout: 300 * time.Millisecond, MaxHeaderBytes: 8 << 10}})
	addr := serveLimited(t, e)
	req, _ := http.NewRequest("GET", "http://"+addr+"/health", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB header = %d", resp.StatusCode)
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: veil.test\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("keep-alive health: %v %+v", err, resp)
	}
	io.Copy(io.Discard, resp.Body)
	// Now idle: the server closes the connection (EOF), well before this
	// generous read deadline.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: read = %v, want EOF from the server's close", err)
	}
}

// The chat route gets its own write deadline: with an ordinary write
// deadline far shorter than the (held) agent's answer, a chat is still
// answered when ChatWriteTimeout covers it, and is cut when it does not.
func TestChatGetsItsOwnWriteDeadline(t *testing.T) {
	const short = 100 * time.Millisecond
	for _, tc := range []struct {
		name     string
		chat     time.Duration
		answered bool
	}{
		{"chat deadline covers the answer", time.Minute, true},
		{"chat deadline as short as the others", short, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hold atomic.Bool
			e := newEnv(t, envOptions{limits: httpapi.Limits{WriteTimeout: short, ChatWriteTimeout: tc.chat}, failpoint: func(name string) error {
				if name == agent.FailAfterTools && hold.Load() {
					<-time.After(5 * short) // a slow model, on the server side
				}
				return nil
			}})
			addr := serveLimited(t, e)
			a := e.create(t, newEVMOwner(t), "writer", "ethereum")
			hold.Store(true)
			req, _ := http.NewRequest("POST", "http://"+addr+"/agent/"+a.ID+"/chat", strings.NewReader(`{"message":"what's my balance"}`))
			req.Header.Set("Authorization", "Bearer "+e.key)
			resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
			if tc.answered {
				if err != nil {
					t.Fatalf("chat: %v", err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("chat = %d", resp.StatusCode)
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("chat past its write deadline was answered: %d", resp.StatusCode)
			}
		})
	}
}
