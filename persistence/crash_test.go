package persistence_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// The crash test runs the store in a child process (this test binary,
// re-executed) and kills it with SIGKILL while 32 writers are committing.
// SIGKILL loses the process, not the page cache, so this proves atomicity
// and "acknowledged means committed" against a crash of veild; durability
// against power loss rests on bbolt's fsync, which NoSync=false keeps.
const (
	crashPathEnv  = "VEIL_PERSISTENCE_CRASH_DB"
	crashRoundEnv = "VEIL_PERSISTENCE_CRASH_ROUND"
	crashWriters  = 32
)

// TestCrashChild is the child's body; it only runs when the parent sets the
// environment. It acknowledges a write on stdout only after Apply returned.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashPathEnv)
	if path == "" {
		t.Skip("child of TestCrashKeepsAcknowledgedWrites")
	}
	round := os.Getenv(crashRoundEnv)
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	var out sync.Mutex
	for w := range crashWriters {
		go func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("r%s-w%02d-%07d", round, w, i)
				val := crashValue(key)
				_, err := s.Apply(context.Background(),
					persistence.Put("a", key, val, persistence.Absent()),
					persistence.Put("b", key, val, persistence.Absent()),
				)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child:", err)
					os.Exit(3)
				}
				out.Lock()
				// One write(2) per line: a line is whole or absent when
				// the process dies.
				os.Stdout.WriteString("ack " + key + "\n")
				out.Unlock()
			}
		}()
	}
	select {} // until killed
}

// crashValue is a payload derived from the key (so a value written under
// the wrong key is caught) of varying size, followed by its SHA-256.
func crashValue(key string) []byte {
	seed := sha256.Sum256([]byte(key))
	r := rand.New(rand.NewChaCha8(seed))
	payload := make([]byte, 16+r.IntN(4096))
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(payload)
	return append(payload, sum[:]...)
}

func checkCrashValue(key string, val []byte) error {
	if len(val) < sha256.Size {
		return fmt.Errorf("%s: value of %d bytes", key, len(val))
	}
	payload, sum := val[:len(val)-sha256.Size], val[len(val)-sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return fmt.Errorf("%s: checksum mismatch", key)
	}
	if !bytes.Equal(val, crashValue(key)) {
		return fmt.Errorf("%s: intact value of another key", key)
	}
	return nil
}

func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills a child process")
	}
	path := filepath.Join(t.TempDir(), "veil.db")
	acked := map[string]bool{}
	// Several rounds: each crash lands on a file that already went through
	// a crash and recovery.
	for round, killAfter := range []int{400, 1500, 3000} {
		n := crashRound(t, path, round, killAfter, acked)
		present := verifyCrashFile(t, path, acked)
		t.Logf("round %d: %d acknowledged (%d in total), %d pairs on disk", round, n, len(acked), present)
	}
}

// crashRound starts a child on path, kills it after killAfter
// acknowledgements, and records every acknowledgement it printed.
func crashRound(t *testing.T, path string, round, killAfter int, acked map[string]bool) int {
	t.Helper()
	// The child's own timeout ends it should this test die without killing it.
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), crashPathEnv+"="+path, fmt.Sprintf("%s=%d", crashRoundEnv, round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	n, killed := 0, false
	for !killed {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("child exited after %d acknowledgements: %s", n, stderr.String())
			}
			if key, isAck := strings.CutPrefix(line, "ack "); isAck {
				acked[key] = true
				n++
			}
			if n == 1 {
				// The live child holds the file: a second process must be
				// turned away quickly, naming the file.
				_, err := persistence.OpenBolt(path, persistence.BoltOptions{LockTimeout: 100 * time.Millisecond})
				if !errors.Is(err, persistence.ErrLocked) || !strings.Contains(err.Error(), path) {
					cmd.Process.Kill()
					t.Fatalf("open while the child runs = %v, want ErrLocked naming %s", err, path)
				}
			}
			if n >= killAfter {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		case <-deadline.C:
			cmd.Process.Kill()
			t.Fatalf("only %d acknowledgements before the deadline: %s", n, stderr.String())
		}
	}
	// Lines already in the pipe were printed before the kill: they count.
	for line := range lines {
		if key, isAck := strings.CutPrefix(line, "ack "); isAck {
			acked[key] = true
			n++
		}
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child ended with %v, want killed; stderr: %s", err, stderr.String())
	}
	return n
}

// verifyCrashFile checks that every acknowledged write is on disk intact and
// that tables a and b hold the same keys (no batch half applied). It
// returns the number of pairs on disk.
func verifyCrashFile(t *testing.T, path string, acked map[string]bool) int {
	t.Helper()
	ctx := context.Background()
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	defer s.Close()
	for key := range acked {
		for _, table := range []string{"a", "b"} {
			rec, err := s.Get(ctx, table, key)
			if err != nil {
				t.Fatalf("acknowledged %s/%s lost: %v", table, key, err)
			}
			if rec.Version != 1 {
				t.Fatalf("%s/%s at version %d, want 1", table, key, rec.Version)
			}
			if err := checkCrashValue(key, rec.Value); err != nil {
				t.Fatalf("table %s: %v", table, err)
			}
		}
	}
	as, err := s.List(ctx, "a", persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := s.List(ctx, "b", persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	inB := make(map[string]bool, len(bs))
	for _, r := range bs {
		inB[r.Key] = true
		if err := checkCrashValue(r.Key, r.Value); err != nil {
			t.Fatalf("table b: %v", err)
		}
	}
	for _, r := range as {
		if !inB[r.Key] {
			t.Fatalf("half-applied batch: a/%s without b/%s", r.Key, r.Key)
		}
		if err := checkCrashValue(r.Key, r.Value); err != nil {
			t.Fatalf("table a: %v", err)
		}
	}
	if len(as) != len(bs) {
		t.Fatalf("half-applied batch: %d records in a, %d in b", len(as), len(bs))
	}
	return len(as)
}

func TestOpenLockedFileFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "veil.db")
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	// Default options: the production lock timeout is what must be short.
	s2, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	elapsed := time.Since(start)
	if err == nil {
		s2.Close()
		t.Fatal("a second open of a held file succeeded")
	}
	if !errors.Is(err, persistence.ErrLocked) {
		t.Errorf("err = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	if elapsed > 5*time.Second {
		t.Errorf("open took %v to fail", elapsed)
	}
	t.Log(err)
}

func TestOpenCorruptFile(t *testing.T) {
	dir := t.TempDir()
	valid := filepath.Join(dir, "valid.db")
	s, err := persistence.OpenBolt(valid, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := s.Apply(context.Background(), persistence.Put("t", fmt.Sprint(i), bytes.Repeat([]byte{byte(i)}, 500), persistence.Any())); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(valid)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"random bytes", garbage(64 << 10)},
		{"short random bytes", garbage(100)},
		{"text file", []byte("this is not a database\n")},
		{"meta pages overwritten", append(garbage(2*4096), good[2*4096:]...)},
		// Well below the pages the 200 records use; past the end the
		// file is bbolt's preallocation, which may be cut harmlessly.
		{"truncated to 3 pages", good[:3*4096]},
		{"truncated to 8 pages", good[:8*4096]},
		{"data pages overwritten", append(slices.Clone(good[:2*4096]), garbage(len(good)-2*4096)...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".db")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
			if err == nil {
				s.Close()
				t.Fatal("opened a corrupt file")
			}
			if !errors.Is(err, persistence.ErrCorrupt) {
				t.Errorf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			t.Log(err)
		})
	}
}
