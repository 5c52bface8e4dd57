package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/persistence"
)

func veildRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(veildBin, args...).CombinedOutput()
	return string(out), err
}

// A backup taken while veild serves (and writes) restores into a fresh
// data directory where the same key finds the same agents; the stopped
// server's file backs up too; restore refuses a running server and a file
// that is not a database.
func TestBackupAndRestore(t *testing.T) {
	data := t.TempDir()
	p := start(t, data)
	key := keyRE.FindString(p.stdout.String())
	create := func(name string) string {
		owner, _ := crypto.GenerateKey()
		wallet := walletsig.EVMAddress(&owner.PublicKey)
		msg := walletsig.CreateMessage(name, "ethereum", wallet, time.Now())
		status, body := call(t, "POST", "http://"+p.addr+"/agent/create", key, map[string]string{
			"name": name, "chain": "ethereum", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
		})
		if status != 201 {
			t.Fatalf("create %s = %d %s", name, status, body)
		}
		var a struct{ ID string }
		_ = json.Unmarshal(body, &a)
		return a.ID
	}
	id := create("backed-up")

	// Online: writes go on while the copy is made.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			call(t, "POST", "http://"+p.addr+"/agent/"+id+"/conversations", key, nil)
		}
	}()
	online := filepath.Join(t.TempDir(), "online.db")
	out, err := veildRun(t, "backup", "--data", data, "--out", online)
	<-done
	if err != nil || !strings.Contains(out, "from the running server") || !strings.Contains(out, "(checked)") {
		t.Fatalf("online backup: %v\n%s", err, out)
	}
	if fi, err := os.Stat(online); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file %v %v", fi, err)
	}
	// Restore refuses while the server runs.
	if out, err := veildRun(t, "restore", "--data", data, "--from", online); err == nil || !strings.Contains(out, "stop it first") {
		t.Fatalf("restore over a running server: %v\n%s", err, out)
	}
	p.stop(t, syscall.SIGTERM)

	// Offline: the stopped server's file.
	offline := filepath.Join(t.TempDir(), "offline.db")
	if out, err := veildRun(t, "backup", "--data", data, "--out", offline); err != nil || !strings.Contains(out, "stopped server") {
		t.Fatalf("offline backup: %v\n%s", err, out)
	}

	// Not a database: refused, nothing replaced.
	junk := filepath.Join(t.TempDir(), "junk.db")
	_ = os.WriteFile(junk, []byte(strings.Repeat("not bbolt ", 1000)), 0o600)
	if out, err := veildRun(t, "restore", "--data", data, "--from", junk); err == nil || !strings.Contains(out, "not restoring") {
		t.Fatalf("restore of junk: %v\n%s", err, out)
	}

	// Restore into a fresh directory (with the sealed root, which a backup
	// of the database does not hold) and serve from it.
	for _, backup := range []string{online, offline} {
		fresh := t.TempDir()
		seal, err := os.ReadFile(software.SealPath(data))
		if err != nil {
			t.Fatal(err)
		}
		_ = os.MkdirAll(filepath.Dir(software.SealPath(fresh)), 0o700)
		if err := os.WriteFile(software.SealPath(fresh), seal, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := veildRun(t, "restore", "--data", fresh, "--from", backup); err != nil || !strings.Contains(out, "restored") {
			t.Fatalf("restore: %v\n%s", err, out)
		}
		q := start(t, fresh)
		status, body := call(t, "GET", "http://"+q.addr+"/agent/"+id, key, nil)
		if status != 200 || !strings.Contains(string(body), "backed-up") {
			t.Fatalf("restored agent: %d %s", status, body)
		}
		if backup == online {
			q.stop(t, syscall.SIGTERM)
			continue
		}
		// A server that dies leaves its write-ahead log; a restore over it
		// moves the log aside with the file it replaces, so the restored
		// file starts (a log of another file would stop it), and nothing
		// of the log is replayed into the restored file.
		_ = q.cmd.Process.Kill()
		_ = q.cmd.Wait()
		dst := filepath.Join(fresh, dbFile)
		if _, err := os.Stat(persistence.LogDir(dst)); err != nil {
			t.Fatalf("a killed server left no write-ahead log: %v", err)
		}
		out, err := veildRun(t, "restore", "--data", fresh, "--from", online)
		if err != nil {
			t.Fatalf("restore over a killed server: %v\n%s", err, out)
		}
		if _, err := os.Stat(persistence.LogDir(dst)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the replaced file's log is still in place: %v", err)
		}
		kept, _ := filepath.Glob(dst + ".before-restore-*.wal")
		if len(kept) != 1 {
			t.Fatalf("the replaced file's log kept as %v, want one %s.before-restore-<time>.wal", kept, dst)
		}
		r := start(t, fresh)
		if status, body := call(t, "GET", "http://"+r.addr+"/agent/"+id, key, nil); status != 200 {
			t.Fatalf("agent after a restore over a killed server: %d %s", status, body)
		}
		r.stop(t, syscall.SIGTERM)
	}
}
