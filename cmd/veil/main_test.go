package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests drive the real binaries as a person or a script would: veil
// and veild are built once, veild runs as a child process on a temporary
// data directory, veil is run per command.
var veilBin, veildBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "veil-cli-test")
	if err != nil {
		panic(err)
	}
	veilBin = filepath.Join(dir, "veil")
	veildBin = filepath.Join(dir, "veild")
	for bin, pkg := range map[string]string{veilBin: ".", veildBin: "../veild"} {
		out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
		if err != nil {
			os.Stderr.Write(out)
			panic(err)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running veild.
type server struct {
	url string
	key string
}

var servingRE = regexp.MustCompile(`msg="veild serving" addr=(\S+)`)
var keyRE = regexp.MustCompile(`veil_live_[A-Za-z0-9_-]{43}`)

// syncBuf is a bytes.Buffer written by a process and read by the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startVeild(t *testing.T) *server {
	t.Helper()
	cmd := exec.Command(veildBin, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--shutdown-grace", "2s", "--devnet-base-port", "0", "--metrics-addr", "127.0.0.1:0")
	cmd.Env = os.Environ()
	stdout := &syncBuf{}
	cmd.Stdout = stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	logs := &syncBuf{}
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(logs, sc.Text())
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		// The bootstrap key is printed before the server starts serving,
		// and before its "Serving the API" line; stdout's pipe is copied
		// apart from stderr's, so wait for that line.
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "Serving the API on") && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond) // polling a condition, not timing it
		}
		key := keyRE.FindString(stdout.String())
		if key == "" {
			t.Fatalf("no bootstrap key on stdout: %q", stdout.String())
		}
		return &server{url: "http://" + a, key: key}
	case <-time.After(60 * time.Second):
		t.Fatalf("veild did not start; stderr: %s", logs.String())
	}
	return nil
}

// result is one finished veil run.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
}

// veilEnv is the environment of a veil run: no inherited VEIL_ settings,
// a private config directory.
func veilEnv(t *testing.T, s *server, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VEIL_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_CONFIG_HOME="+t.TempDir())
	if s != nil {
		env = append(env, "VEIL_URL="+s.url, "VEIL_API_KEY="+s.key)
	}
	return append(env, extra...)
}

// veil runs the CLI with env and optional standard input.
func veil(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(veilBin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("veil %v did not finish; stdout %s stderr %s", args, out.String(), errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// ok runs veil and requires exit 0.
func ok(t *testing.T, env []string, args ...string) result {
	t.Helper()
	r := veil(t, env, "", args...)
	if r.code != 0 {
		t.Fatalf("veil %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// fails runs veil and requires the exit code.
func fails(t *testing.T, env []string, code int, args ...string) result {
	t.Helper()
	r := veil(t, env, "", args...)
	if r.code != code {
		t.Fatalf("veil %s: want exit %d, got %s", strings.Join(args, " "), code, r)
	}
	return r
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON for %T: %v\n%s", v, err, s)
	}
	return v
}

// jsonError decodes the --json error body on stderr.
type jsonError struct {
	Message    string `json:"message"`
	StatusCode int    `json:"statusCode"`
	ExitCode   int    `json:"exitCode"`
}

// execVeil starts veil in the background; Stdout and Stderr are *syncBuf.
func execVeil(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(veilBin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &syncBuf{}, &syncBuf{}
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	return cmd
}
