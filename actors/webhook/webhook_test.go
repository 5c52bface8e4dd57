package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/internal/fakeclock"
	"github.com/veilhq/veil/internal/netguard"
	"github.com/veilhq/veil/persistence"
)

// received is one request a test receiver saw.
type received struct {
	eventID   string
	signature string
	body      []byte
}

// receiver answers the statuses of codes in turn (then 200) and records
// every request.
type receiver struct {
	mu    sync.Mutex
	codes []int
	got   []received
	srv   *httptest.Server
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	r := &receiver{codes: codes}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Get(HeaderEventID), req.Header.Get(HeaderSignature), body})
		code := http.StatusOK
		if len(r.codes) > 0 {
			code, r.codes = r.codes[0], r.codes[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func openStore(t *testing.T, path string) *persistence.Bolt {
	t.Helper()
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// notify writes what the agent actor writes: a notification and, in the
// same batch, its outbox record.
func notify(t *testing.T, st persistence.Store, account, agentID, typ string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	note := map[string]any{"id": 1, "type": typ, "title": "t", "body": "b", "read": false, "createdAt": at}
	ops, err := OutboxOps(ctx, st, account, agentID, typ, at, note)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(note)
	ops = append(ops, persistence.Put("notifications", agentID+"/"+typ+"/"+at.Format(time.RFC3339Nano), raw, persistence.Absent()))
	if _, err := st.Apply(ctx, ops...); err != nil {
		t.Fatal(err)
	}
}

// verifyWithPython checks every signature with the independent script.
func verifyWithPython(t *testing.T, secret string, reqs []received) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is required for the independent signature check")
		}
		t.Skip("python3 not installed")
	}
	var in bytes.Buffer
	for _, r := range reqs {
		line, _ := json.Marshal(map[string]string{"secret": secret, "signature": r.signature, "body": base64.StdEncoding.EncodeToString(r.body)})
		in.Write(append(line, '\n'))
	}
	cmd := exec.Command(py, filepath.Join("testdata", "verify.py"))
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("verify.py: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(reqs) {
		t.Fatalf("verify.py answered %d lines for %d requests: %s", len(lines), len(reqs), out)
	}
	for i, l := range lines {
		if l != "ok "+reqs[i].eventID {
			t.Errorf("request %d: python says %q, want ok %s", i, l, reqs[i].eventID)
		}
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestRetriesWithBackoffUntilDelivered(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "v.db"))
	defer st.Close()
	clk := fakeclock.New(t0)
	rcv := newReceiver(t, 500, 503, 404)
	reg := NewRegistry(st, clk.Now)
	hook, err := reg.Create(ctx, "acct", rcv.srv.URL+"/hook", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	notify(t, st, "acct", "agent-1", "payment_received", t0)
	d := NewDeliverer(Options{Store: st, AllowPrivate: true, Now: clk.Now, Jitter: func() float64 { return 0.5 }})

	// Each pass at the due time makes one attempt; the backoff doubles.
	wantWaits := []time.Duration{0, 7500 * time.Millisecond, 15 * time.Second, 30 * time.Second}
	at := t0
	for i, wait := range wantWaits {
		at = at.Add(wait)
		if i > 0 {
			// One tick before the due time: nothing is sent.
			clk.Set(at.Add(-time.Millisecond))
			if _, err := d.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(rcv.requests()); n != i {
				t.Fatalf("attempt %d came early: %d requests", i+1, n)
			}
		}
		clk.Set(at)
		rep, err := d.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(rcv.requests()); n != i+1 {
			t.Fatalf("after pass %d: %d requests, want %d (report %+v)", i, n, i+1, rep)
		}
	}
	reqs := rcv.requests()
	for _, r := range reqs[1:] {
		if r.eventID != reqs[0].eventID || !bytes.Equal(r.body, reqs[0].body) {
			t.Fatalf("attempts differ: %q vs %q", r.eventID, reqs[0].eventID)
		}
	}
	verifyWithPython(t, hook.Secret, reqs)

	ds, err := reg.Deliveries(ctx, "acct", hook.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Status != StatusDelivered || ds[0].Attempts != 4 || ds[0].EventID != reqs[0].eventID {
		t.Fatalf("deliveries = %+v", ds)
	}
	// Nothing more is sent.
	clk.Set(at.Add(time.Hour))
	rep, err := d.RunOnce(ctx)
	if err != nil || rep.Backlog != 0 || len(rcv.requests()) != 4 {
		t.Fatalf("after delivery: %+v %v, %d requests", rep, err, len(rcv.requests()))
	}
}

func TestFailsAfterMaxAge(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "v.db"))
	defer st.Close()
	clk := fakeclock.New(t0)
	codes := make([]int, 1000)
	for i := range codes {
		codes[i] = 500
	}
	rcv := newReceiver(t, codes...)
	reg := NewRegistry(st, clk.Now)
	hook, err := reg.Create(ctx, "acct", rcv.srv.URL, []string{"payment_sent"}, "")
	if err != nil {
		t.Fatal(err)
	}
	notify(t, st, "acct", "a", "payment_received", t0) // not subscribed
	notify(t, st, "acct", "a", "payment_sent", t0)
	d := NewDeliverer(Options{Store: st, AllowPrivate: true, Now: clk.Now, Jitter: func() float64 { return 0.99 }})
	var last Report
	for i := 0; i < 100; i++ {
		if last, err = d.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if last.Failed == 1 {
			break
		}
		ds, _ := reg.Deliveries(ctx, "acct", hook.ID, 1)
		clk.Set(*ds[0].NextAttemptAt)
	}
	ds, _ := reg.Deliveries(ctx, "acct", hook.ID, 10)
	if last.Failed != 1 || len(ds) != 1 || ds[0].Status != StatusFailed || ds[0].Type != "payment_sent" {
		t.Fatalf("report %+v, deliveries %+v", last, ds)
	}
	if age := clk.Now().Sub(t0); age < MaxAge || age > MaxAge+time.Minute {
		t.Fatalf("failed after %v, want %v", age, MaxAge)
	}
	if ds[0].Attempts < 10 || ds[0].LastStatusCode != 500 {
		t.Fatalf("attempts %d, last status %d", ds[0].Attempts, ds[0].LastStatusCode)
	}
}

// A crash after the notification's commit, before anything was sent: the
// next process delivers it.
func TestCrashBetweenCommitAndDelivery(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	st := openStore(t, path)
	clk := fakeclock.New(t0)
	rcv := newReceiver(t)
	hook, err := NewRegistry(st, clk.Now).Create(ctx, "acct", rcv.srv.URL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	notify(t, st, "acct", "a", "invoice_paid", t0)
	crash := errors.New("crash")
	d := NewDeliverer(Options{Store: st, AllowPrivate: true, Now: clk.Now, Failpoint: func(name string) error {
		if name == FailBeforeSend {
			return crash
		}
		return nil
	}})
	if _, err := d.RunOnce(ctx); !errors.Is(err, crash) {
		t.Fatalf("RunOnce = %v, want the failpoint", err)
	}
	if n := len(rcv.requests()); n != 0 {
		t.Fatalf("%d requests before the crash", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, path)
	defer st.Close()
	rep, err := NewDeliverer(Options{Store: st, AllowPrivate: true, Now: clk.Now}).RunOnce(ctx)
	if err != nil || rep.Delivered != 1 {
		t.Fatalf("after restart: %+v %v", rep, err)
	}
	reqs := rcv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	verifyWithPython(t, hook.Secret, reqs)
	var p Payload
	if err := json.Unmarshal(reqs[0].body, &p); err != nil || p.Type != "invoice_paid" || p.AgentID != "a" {
		t.Fatalf("payload %+v %v", p, err)
	}
}

func TestFanOutScope(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "v.db"))
	defer st.Close()
	clk := fakeclock.New(t0)
	rcv := newReceiver(t)
	reg := NewRegistry(st, clk.Now)
	all, _ := reg.Create(ctx, "acct", rcv.srv.URL+"/all", nil, "")
	one, _ := reg.Create(ctx, "acct", rcv.srv.URL+"/one", nil, "agent-1")
	other, _ := reg.Create(ctx, "other", rcv.srv.URL+"/other", nil, "")
	notify(t, st, "acct", "agent-1", "payment_sent", t0)
	notify(t, st, "acct", "agent-2", "payment_sent", t0.Add(time.Second))
	if ops, _ := OutboxOps(ctx, st, "nobody", "x", "payment_sent", t0, 1); len(ops) != 0 {
		t.Fatalf("an account without webhooks queues %d ops", len(ops))
	}
	if _, err := NewDeliverer(Options{Store: st, AllowPrivate: true, Now: clk.Now}).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(w *Webhook) int {
		ds, err := reg.Deliveries(ctx, w.AccountID, w.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(ds)
	}
	if a, o, x := count(all), count(one), count(other); a != 2 || o != 1 || x != 0 {
		t.Fatalf("deliveries all=%d one=%d other=%d, want 2 1 0", a, o, x)
	}
	if _, err := reg.Get(ctx, "other", all.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another account's webhook: %v", err)
	}
	if err := reg.Delete(ctx, "acct", one.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Deliveries(ctx, "acct", one.ID, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted webhook's deliveries: %v", err)
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url, want    string
		allowPrivate bool
		ok           bool
	}{
		{url: "https://example.com/hook", ok: true, want: "https://example.com/hook"},
		{url: "HTTP://example.com:8080/x?y=1", ok: true, want: "http://example.com:8080/x?y=1"},
		{url: "ftp://example.com/"},
		{url: "file:///etc/passwd"},
		{url: "gopher://example.com"},
		{url: "example.com/hook"},
		{url: "https:///nohost"},
		{url: "https://example.com/#frag"},
		{url: ""},
		{url: "http://127.0.0.1:8080/"},
		{url: "http://[::1]/"},
		{url: "http://169.254.169.254/latest/meta-data/"},
		{url: "http://localhost:9000/"},
		{url: "http://api.localhost/"},
		{url: "http://10.0.0.5/hook"},
		{url: "http://[::1%25lo]:8080/x"}, // the zone bypass of round three
		{url: "http://[::1%251]:8080/x"},
		{url: "http://[fe80::1%25lo]/x"},
		{url: "http://[fd00:ec2::254%25lo]/latest"},
		{url: "http://[::ffff:127.0.0.1]/"},
		{url: "http://[64:ff9b::a9fe:a9fe]/"},
		{url: "http://[2002:7f00:1::]/"},
		{url: "http://2130706433/"},
		{url: "http://0177.0.0.1/"},
		{url: "http://0x7f.1/"},
		{url: "http://127.0.0.1./"},
		{url: "http://localhost./"},
		{url: "http://100.64.0.1/"},
		{url: "http://198.18.0.1/"},
		{url: "http://192.0.2.1/"},
		{url: "http://224.0.0.1/"},
		{url: "http://255.255.255.255/"},
		{url: "http://0.0.0.0/"},
		{url: "http://[::]/"},
		{url: "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/"},
		{url: "https://example.com./hook", ok: true, want: "https://example.com./hook"},
		{url: "https://[2606:4700:4700::1111]/hook", ok: true, want: "https://[2606:4700:4700::1111]/hook"},
		{url: "http://127.0.0.1:8080/", allowPrivate: true, ok: true, want: "http://127.0.0.1:8080/"},
		{url: "https://example.com/" + strings.Repeat("a", MaxURLLen)},
	} {
		got, err := CheckURL(tc.url, tc.allowPrivate)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("CheckURL(%q, %v) = %q, %v", tc.url, tc.allowPrivate, got, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckURL(%q): %v does not match ErrInvalid", tc.url, err)
		}
	}
}

// The dialer refuses private addresses after DNS, so a name that resolves
// to loopback is refused as the literal is; redirects are not followed.
func TestDialRefusesPrivateAfterDNS(t *testing.T) {
	rcv := newReceiver(t)
	_, port, _ := strings.Cut(strings.TrimPrefix(rcv.srv.URL, "http://"), ":")
	for _, target := range []string{
		rcv.srv.URL,                      // 127.0.0.1 literal
		"http://localhost:" + port + "/", // a name resolving to loopback
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://[::1%25lo]:" + port + "/",
		"http://[::1%251]:" + port + "/",
		"http://2130706433:" + port + "/",
		"http://0x7f.1:" + port + "/",
		"http://127.0.0.1.:" + port + "/",
		"http://localhost.:" + port + "/",
	} {
		resp, err := NewClient(false, 5*time.Second).Post(target, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: reached (status %d)", target, resp.StatusCode)
			continue
		}
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("%s: %v, want ErrForbiddenAddress", target, err)
		}
	}
	if n := len(rcv.requests()); n != 0 {
		t.Fatalf("receiver got %d requests", n)
	}

	// Allowed (development): reachable, and a redirect is an answer, not
	// followed.
	redirect := httptest.NewServer(http.RedirectHandler(rcv.srv.URL, http.StatusFound))
	defer redirect.Close()
	resp, err := NewClient(true, 5*time.Second).Post(redirect.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || len(rcv.requests()) != 0 {
		t.Fatalf("redirect: status %d, receiver got %d", resp.StatusCode, len(rcv.requests()))
	}
}

// dnsAnswers is a resolver with fixed answers.
type dnsAnswers map[string][]string

func (d dnsAnswers) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range d[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if out == nil {
		return nil, errors.New("no such host")
	}
	return out, nil
}

// TestDeliveryRefusesEveryClassAtDialTime: a webhook whose name later
// resolves to an address of each refused class (or to a public and a
// private one at once) is never delivered: every attempt fails with the
// classifier's reason and the receiver sees nothing.
func TestDeliveryRefusesEveryClassAtDialTime(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "v.db"))
	defer st.Close()
	clk := fakeclock.New(t0)
	rcv := newReceiver(t)
	_, port, _ := strings.Cut(strings.TrimPrefix(rcv.srv.URL, "http://"), ":")
	classes := dnsAnswers{
		"loopback.test": {"127.0.0.1"}, "loopback6.test": {"::1"}, "private.test": {"10.0.0.1"},
		"linklocal.test": {"169.254.169.254"}, "ula.test": {"fd00:ec2::254"}, "zoned.test": {"fe80::1%lo"},
		"mapped.test": {"::ffff:127.0.0.1"}, "compat.test": {"::7f00:1"}, "nat64.test": {"64:ff9b::7f00:1"},
		"sixtofour.test": {"2002:7f00:1::1"}, "teredo.test": {"2001:0:4136:e378:8000:63bf:3fff:fdd2"},
		"unspecified.test": {"0.0.0.0"}, "broadcast.test": {"255.255.255.255"}, "multicast.test": {"224.0.0.1"},
		"cgnat.test": {"100.64.0.1"}, "bench.test": {"198.18.0.1"}, "doc.test": {"192.0.2.1"}, "doc6.test": {"2001:db8::1"},
		"mixed.test": {"8.8.8.8", "127.0.0.1"},
	}
	reg := NewRegistry(st, clk.Now)
	hooks := map[string]string{}
	for name := range classes {
		h, err := reg.Create(ctx, "acct", "http://"+name+":"+port+"/", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		hooks[h.ID] = name
	}
	notify(t, st, "acct", "a", "withdrawal", t0)
	client := newClient(&netguard.Dialer{Resolver: classes, Timeout: 5 * time.Second}, 5*time.Second)
	rep, err := NewDeliverer(Options{Store: st, Now: clk.Now, Client: client}).RunOnce(ctx)
	if err != nil || rep.Retry != len(classes) {
		t.Fatalf("%+v %v: want %d retries", rep, err, len(classes))
	}
	for id, name := range hooks {
		ds, _ := reg.Deliveries(ctx, "acct", id, 1)
		if len(ds) != 1 || !strings.Contains(ds[0].LastError, "not on the public internet") {
			t.Errorf("%s: deliveries %+v", name, ds)
		}
	}
	if len(rcv.requests()) != 0 {
		t.Fatal("the receiver was reached")
	}
}

// A delivery to a refused address is a failed attempt with a reason the
// owner can read, retried like any other.
func TestDeliveryToForbiddenAddressIsRetried(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "v.db"))
	defer st.Close()
	clk := fakeclock.New(t0)
	rcv := newReceiver(t)
	reg := NewRegistry(st, clk.Now)
	// Stored through the registry directly: the API would refuse the
	// literal, but a name can resolve to anything later.
	hook, _ := reg.Create(ctx, "acct", strings.Replace(rcv.srv.URL, "127.0.0.1", "localhost", 1), nil, "")
	notify(t, st, "acct", "a", "withdrawal", t0)
	rep, err := NewDeliverer(Options{Store: st, Now: clk.Now}).RunOnce(ctx)
	if err != nil || rep.Retry != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	ds, _ := reg.Deliveries(ctx, "acct", hook.ID, 1)
	if !strings.Contains(ds[0].LastError, "not on the public internet") || strings.Contains(ds[0].LastError, "localhost:") {
		t.Fatalf("last error %q", ds[0].LastError)
	}
	if len(rcv.requests()) != 0 {
		t.Fatal("the receiver was reached")
	}
}

// Delivered deliveries older than Retention are removed; newer ones stay.
func TestOldDeliveriesAreTrimmed(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "v.db"))
	defer st.Close()
	clk := fakeclock.New(t0)
	rcv := newReceiver(t)
	reg := NewRegistry(st, clk.Now)
	hook, _ := reg.Create(ctx, "acct", rcv.srv.URL, nil, "")
	d := NewDeliverer(Options{Store: st, AllowPrivate: true, Now: clk.Now})
	notify(t, st, "acct", "a", "payment_sent", t0)
	if rep, err := d.RunOnce(ctx); err != nil || rep.Delivered != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	later := t0.Add(Retention - time.Hour)
	clk.Set(later)
	notify(t, st, "acct", "a", "payment_received", later)
	if rep, err := d.RunOnce(ctx); err != nil || rep.Delivered != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	clk.Set(t0.Add(Retention + time.Hour))
	if _, err := d.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	ds, err := reg.Deliveries(ctx, "acct", hook.ID, 10)
	if err != nil || len(ds) != 1 || ds[0].Type != "payment_received" {
		t.Fatalf("after trimming: %+v %v", ds, err)
	}
}

// Webhooks created in one millisecond (the clock stands still) are listed
// in the order they were created, as the API promises (oldest first).
func TestListKeepsCreationOrderWithinAMillisecond(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "v.db"))
	defer st.Close()
	reg := NewRegistry(st, fakeclock.New(t0).Now)
	var want []string
	for i := range 20 {
		w, err := reg.Create(ctx, "acct", fmt.Sprintf("https://example.com/%d", i), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, w.ID)
	}
	list, err := reg.List(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range list {
		got = append(got, w.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, created %v", got, want)
	}
}
