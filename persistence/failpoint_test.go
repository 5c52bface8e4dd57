package persistence_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// The failpoint test ends a child process from inside the group commit,
// with os.Exit as veild's VEIL_FAILPOINTS does, at a commit chosen at
// random: right before the shared transaction commits (the group is
// written into it, nothing is on disk) or right after (durable, nobody
// answered); or from inside the applier, before or after the bbolt
// transaction that applies logged groups commits. Unlike the SIGKILL test, the crash lands at the exact
// instant that decides whether a group is durable, on every round.
const (
	fpPathEnv  = "VEIL_PERSISTENCE_FP_DB"
	fpRoundEnv = "VEIL_PERSISTENCE_FP_ROUND"
	fpNameEnv  = "VEIL_PERSISTENCE_FP_NAME"
	fpAfterEnv = "VEIL_PERSISTENCE_FP_AFTER"
	// fpExitCode is what a SIGKILLed process reports, and what
	// internal/failpoint exits with.
	fpExitCode = 137
)

// TestFailpointChild is the child's body; it only runs when the parent
// sets the environment. It acknowledges a write on stdout only after Apply
// returned, and announces the failpoint on stdout before it exits, so the
// parent sees both in order.
func TestFailpointChild(t *testing.T) {
	path := os.Getenv(fpPathEnv)
	if path == "" {
		t.Skip("child of TestGroupCommitFailpoints")
	}
	round, name := os.Getenv(fpRoundEnv), os.Getenv(fpNameEnv)
	after, err := strconv.Atoi(os.Getenv(fpAfterEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	var out sync.Mutex
	var hits atomic.Int64
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{
		// Small groups: more commits, so the failpoint lands among many.
		MaxGroup: 8,
		// A short delay: the applier still gathers groups, and its
		// failpoints come often enough for the rounds to be quick.
		ApplyDelay: 2 * time.Millisecond,
		Failpoint: func(fp string) error {
			if fp != name || hits.Add(1) < int64(after) {
				return nil
			}
			out.Lock() // no acknowledgement is printed after this line
			os.Stdout.WriteString("failpoint " + fp + "\n")
			os.Exit(fpExitCode)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	for w := range crashWriters {
		go func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("fp%s-w%02d-%07d", round, w, i)
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
				os.Stdout.WriteString("ack " + key + "\n")
				out.Unlock()
			}
		}()
	}
	select {} // until the failpoint ends the process
}

func TestGroupCommitFailpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	// The applier's failpoints end the process with groups durable in
	// the write-ahead log only: before the bbolt transaction that applies
	// them commits, or after it, with the log not yet released. The
	// applier runs a transaction for many commits, hence fewer hits.
	for _, fp := range []struct {
		name string
		hits int
	}{
		{persistence.FailBeforeCommit, 300},
		{persistence.FailAfterCommit, 300},
		{persistence.FailApplyBeforeCommit, 40},
		{persistence.FailApplyAfterCommit, 40},
	} {
		name := fp.name
		t.Run(strings.ReplaceAll(name, "/", "-"), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "veil.db")
			acked := map[string]bool{}
			// Every round reopens a file the previous crash left.
			for round := range 4 {
				after := 1 + rng.IntN(fp.hits)
				n := failpointRound(t, path, name, round, after, acked)
				present := verifyCrashFile(t, path, acked)
				t.Logf("round %d: exit at hit %d of the failpoint, %d acknowledged (%d in total), %d pairs on disk", round, after, n, len(acked), present)
			}
		})
	}
}

// failpointRound runs a child that exits at the after-th hit of name and
// records every acknowledgement it printed before.
func failpointRound(t *testing.T, path, name string, round, after int, acked map[string]bool) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailpointChild$", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), fpPathEnv+"="+path, fpNameEnv+"="+name,
		fmt.Sprintf("%s=%d", fpRoundEnv, round), fmt.Sprintf("%s=%d", fpAfterEnv, after))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child ends itself; the timer only bounds a hung child.
	timer := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	n, fired := 0, false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if key, ok := strings.CutPrefix(line, "ack "); ok {
			if fired {
				t.Fatalf("acknowledgement %s printed after the failpoint", key)
			}
			acked[key] = true
			n++
		}
		if line == "failpoint "+name {
			fired = true
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != fpExitCode || !fired {
		t.Fatalf("child ended with %v (failpoint seen: %v), want exit %d at %s; stderr: %s", err, fired, fpExitCode, name, stderr.String())
	}
	return n
}
