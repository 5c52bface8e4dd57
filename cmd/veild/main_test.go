package main

import (
	"bufio"
	"bytes"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests run the real binary: built once, started as a child process.
var veildBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "veild-test")
	if err != nil {
		panic(err)
	}
	veildBin = filepath.Join(dir, "veild")
	out, err := exec.Command("go", "build", "-o", veildBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	evmtest.StopHardhat()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lockedBuffer is a bytes.Buffer that the child's stdout copier writes
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type proc struct {
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *syncBuffer
	addr   string
	// metrics is the metrics listener's address.
	metrics string
}

// syncBuffer is written by the stderr copier and read by the test.
type syncBuffer struct {
	lines chan string
	all   bytes.Buffer
}

var (
	servingRE = regexp.MustCompile(`msg="veild serving" addr=(\S+)`)
	metricsRE = regexp.MustCompile(`msg="metrics serving" addr=(\S+)`)
)

func start(t *testing.T, data string, extra ...string) *proc {
	t.Helper()
	return startEnv(t, data, nil, extra...)
}

// startEnv is start with env added to veild's environment.
func startEnv(t *testing.T, data string, env []string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--shutdown-grace", "5s", "--devnet-base-port", "0", "--metrics-addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(veildBin, args...)
	cmd.Env = append(append(os.Environ(), "VEIL_DATA="+data), env...)
	p := &proc{cmd: cmd, stdout: &lockedBuffer{}, stderr: &syncBuffer{lines: make(chan string, 1000)}}
	cmd.Stdout = p.stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.stderr.lines <- sc.Text()
		}
		close(p.stderr.lines)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-p.stderr.lines:
			if !ok {
				t.Fatalf("veild exited before serving; stdout: %s\nstderr: %s", p.stdout, p.stderr.all.String())
			}
			p.stderr.all.WriteString(line + "\n")
			if m := metricsRE.FindStringSubmatch(line); m != nil {
				p.metrics = m[1]
			}
			if m := servingRE.FindStringSubmatch(line); m != nil {
				p.addr = m[1]
				p.awaitStdout(t)
				return p
			}
		case <-deadline:
			t.Fatalf("veild did not start; stderr: %s", p.stderr.all.String())
		}
	}
}

// awaitStdout waits for veild's "Serving the API" line on stdout, which
// it prints (after any bootstrap key) just before the serving log line on
// stderr: the two pipes are copied by different goroutines, so the log
// line can arrive first.
func (p *proc) awaitStdout(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.stdout.String(), "Serving the API on"); {
		if time.Now().After(deadline) {
			t.Fatalf("no \"Serving the API\" line on stdout: %q", p.stdout.String())
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not timing it
	}
}

// stop sends sig and waits for a clean exit, returning the rest of stderr.
func (p *proc) stop(t *testing.T, sig os.Signal) string {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	for line := range p.stderr.lines {
		p.stderr.all.WriteString(line + "\n")
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("veild exit: %v; stderr: %s", err, p.stderr.all.String())
	}
	return p.stderr.all.String()
}

var keyRE = regexp.MustCompile(`veil_live_[A-Za-z0-9_-]{43}`)

func TestServeBootstrapsOnceAndDrainsOnSignal(t *testing.T) {
	data := t.TempDir()
	p := start(t, data)
	resp, err := http.Get("http://" + p.addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Fatalf("health = %d %s", resp.StatusCode, body)
	}
	key := keyRE.FindString(p.stdout.String())
	if key == "" {
		t.Fatalf("no bootstrap key printed; stdout: %q", p.stdout.String())
	}
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/agents", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("bootstrap key rejected: %d", resp.StatusCode)
	}
	logs := p.stop(t, syscall.SIGTERM)
	if !strings.Contains(logs, "veild stopped") {
		t.Fatalf("no clean stop in logs: %s", logs)
	}
	if strings.Contains(logs, key) {
		t.Fatal("the API key appeared in a log line")
	}

	// Second start on the same data: no new bootstrap key, old key works.
	p2 := start(t, data)
	if k := keyRE.FindString(p2.stdout.String()); k != "" {
		t.Fatalf("second start printed a key again")
	}
	req, _ = http.NewRequest("GET", "http://"+p2.addr+"/agents", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("key lost across restart: %d", resp.StatusCode)
	}
	p2.stop(t, os.Interrupt)
}

func TestApikeyCreate(t *testing.T) {
	data := t.TempDir()
	out, err := exec.Command(veildBin, "apikey", "create", "--account", "acme", "--data", data).Output()
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(out))
	if !keyRE.MatchString(key) || key != keyRE.FindString(key) {
		t.Fatalf("stdout = %q, want only the key", out)
	}
	// The key works against a server on that data directory.
	p := start(t, data)
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/agents", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("created key rejected: %d", resp.StatusCode)
	}
	// While the server holds the file, apikey create fails clearly.
	cmd := exec.Command(veildBin, "apikey", "create", "--account", "acme", "--data", data)
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("apikey create succeeded on a locked data file")
	}
	if !strings.Contains(string(msg), filepath.Join(data, "veil.db")) || !strings.Contains(string(msg), "veil keys create") {
		t.Fatalf("error does not name the file and the way to make a key while serving: %s", msg)
	}
	p.stop(t, syscall.SIGTERM)

	if err := exec.Command(veildBin, "apikey", "create", "--data", data).Run(); err == nil {
		t.Fatal("apikey create without --account succeeded")
	}
}

// TestNoBootstrapKeyOnAFailedStart: a start that fails before serving
// (here its port is taken) prints no key and spends none: the next start
// that serves prints the first one.
func TestNoBootstrapKeyOnAFailedStart(t *testing.T) {
	data := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(veildBin, "serve", "--addr", ln.Addr().String(), "--devnet-base-port", "0", "--metrics-addr", "off")
	cmd.Env = append(os.Environ(), "VEIL_DATA="+data)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("serve started on a taken port")
	}
	if keyRE.Match(out) || strings.Contains(string(out), "Bootstrap API key") {
		t.Fatalf("a start that never served printed a key:\n%s", out)
	}
	p := start(t, data)
	if !strings.Contains(p.stderr.all.String(), "console=http://"+p.addr+"/console") {
		t.Fatalf("the serving line does not say where the console is: %s", p.stderr.all.String())
	}
	if keyRE.FindString(p.stdout.String()) == "" {
		t.Fatalf("the first start that serves printed no key: %q", p.stdout.String())
	}
	p.stop(t, syscall.SIGTERM)
}

func TestCorruptDataFileIsAClearStartupError(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(data, "veil.db")
	if err := os.WriteFile(file, bytes.Repeat([]byte("garbage!"), 1024), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(veildBin, "serve", "--addr", "127.0.0.1:0", "--data", data)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("serve started on a corrupt file")
	}
	if !strings.Contains(string(out), file) {
		t.Fatalf("error does not name the file: %s", out)
	}
	if strings.Contains(string(out), "goroutine ") {
		t.Fatalf("startup panicked: %s", out)
	}
}

func TestBadEnvIsAUsageError(t *testing.T) {
	cmd := exec.Command(veildBin, "serve", "--data", t.TempDir())
	cmd.Env = append(os.Environ(), "VEIL_PASSIVATE_AFTER=soon")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want 2; %s", err, out)
	}
	if !strings.Contains(string(out), "VEIL_PASSIVATE_AFTER") {
		t.Fatalf("message does not name the variable: %s", out)
	}
}
