package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/persistence"
)

// adminSocket is the Unix socket in the data directory on which a running
// veild serves GET /backup. Only who may read the data directory (mode
// 0700) may connect, which is who could copy the file anyway: no token,
// and nothing on a TCP port.
const adminSocket = "admin.sock"

// serveAdmin serves the admin socket of a bolt store until the returned
// function is called. A socket path over the kernel's limit (~108 bytes)
// or an unwritable directory only disables online backups (logged).
func serveAdmin(dir string, store persistence.Store, log *slog.Logger) func() {
	wt, ok := store.(io.WriterTo)
	if !ok {
		return func() {}
	}
	path := filepath.Join(dir, adminSocket)
	// A socket left by a killed veild: the bbolt lock (taken before) says
	// no other veild uses this directory.
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		log.Warn("online backups off: cannot listen on the admin socket", slog.String("path", path), slog.String("err", err.Error()))
		return func() {}
	}
	_ = os.Chmod(path, 0o600)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /backup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		start := time.Now()
		n, err := wt.WriteTo(w)
		if err != nil {
			// The status is gone with the first byte; the client checks
			// the copy, so a cut stream never passes for a backup.
			log.Error("backup stream", slog.String("err", err.Error()))
			return
		}
		log.Info("backup streamed", slog.Int64("bytes", n), slog.Duration("took", time.Since(start)))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		_ = srv.Close()
		_ = os.Remove(path)
	}
}

// adminClient talks HTTP over the data directory's admin socket.
func adminClient(dir string) *http.Client {
	path := filepath.Join(dir, adminSocket)
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}
}

// serverRunning reports whether a veild answers on dir's admin socket.
func serverRunning(ctx context.Context, dir string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(dir, adminSocket))
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// backupCmd is `veild backup --data DIR --out FILE`: a consistent copy of
// the bbolt file, from the running server (its admin socket) or, when none
// runs, from the file itself. The copy is written next to FILE, fsynced,
// checked page by page, then renamed into place: FILE is a whole, valid
// database or is not there.
func backupCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("veild backup", stderr)
	data := fs.String("data", "./data", "data directory of the server to back up")
	out := fs.String("out", "", "file to write the backup to (required; replaced only once the copy is complete and checked)")
	storeKind := fs.String("store", "bolt", "the server's store: bolt (PostgreSQL: use pg_dump, docs/operations.md)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *storeKind != "bolt" {
		return &usageError{"veild backup copies the bbolt file; back up a PostgreSQL store with pg_dump (docs/operations.md)"}
	}
	if *out == "" || fs.NArg() > 0 {
		return &usageError{"usage: veild backup --data DIR --out FILE"}
	}
	tmp, err := os.CreateTemp(filepath.Dir(*out), filepath.Base(*out)+".partial-*")
	if err != nil {
		return fmt.Errorf("create the backup next to %s: %w", *out, err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removes a failed copy
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	from := "the stopped server's file"
	var n int64
	if serverRunning(ctx, *data) {
		from = "the running server"
		n, err = fetchBackup(ctx, *data, tmp)
	} else {
		n, err = persistence.CopyBoltFile(filepath.Join(*data, dbFile), tmp, 2*time.Second)
		if errors.Is(err, persistence.ErrLocked) {
			err = fmt.Errorf("%w, and no server answers on %s: is it an older veild? stop it, or upgrade it", err, filepath.Join(*data, adminSocket))
		}
	}
	if err != nil {
		_ = tmp.Close()
		return fmt.Errorf("backup of %s: %w", *data, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := persistence.CheckBoltFile(tmp.Name(), time.Second); err != nil {
		return fmt.Errorf("the copy does not check out (nothing written to %s): %w", *out, err)
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(*out)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backed up %s from %s: %d bytes to %s (checked)\n", filepath.Join(*data, dbFile), from, n, *out)
	fmt.Fprintf(stderr, "veild: keep %s with it (once: it does not change); the backup is useless without it\n", software.SealPath(*data))
	return nil
}

func fetchBackup(ctx context.Context, dir string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://veild/backup", nil)
	if err != nil {
		return 0, err
	}
	resp, err := adminClient(dir).Do(req)
	if err != nil {
		return 0, fmt.Errorf("ask the running server: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("the running server answered %s", resp.Status)
	}
	return io.Copy(w, resp.Body)
}

// restoreCmd is `veild restore --data DIR --from FILE`: replaces the
// bbolt file of a stopped server with a checked backup, keeping the file
// it replaces, and its write-ahead log if it has one, as
// veil.db.before-restore-<time> (and that name's .wal).
func restoreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("veild restore", stderr)
	data := fs.String("data", "./data", "data directory of the (stopped) server")
	from := fs.String("from", "", "backup file made by veild backup (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" || fs.NArg() > 0 {
		return &usageError{"usage: veild restore --data DIR --from FILE (with the server stopped)"}
	}
	if serverRunning(ctx, *data) {
		return fmt.Errorf("a veild is running on %s: stop it first (systemctl stop veild), then restore", *data)
	}
	if err := persistence.CheckBoltFile(*from, time.Second); err != nil {
		return fmt.Errorf("not restoring: %w", err)
	}
	if err := os.MkdirAll(*data, 0o700); err != nil {
		return err
	}
	dst := filepath.Join(*data, dbFile)
	// The live file's lock: a server that runs without its admin socket
	// still holds it.
	if _, err := os.Stat(dst); err == nil {
		if err := persistence.CheckBoltFile(dst, time.Second); errors.Is(err, persistence.ErrLocked) {
			return fmt.Errorf("not restoring: %w", err)
		}
	}
	src, err := os.Open(*from)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(*data, dbFile+".restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := io.Copy(tmp, src); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// What the restore replaces is kept under one name: the file, and its
	// write-ahead log if a server that died left one. Left in place, the
	// log would stop the restored file's start (another file's log); its
	// writes belong to the file kept, which replays them if it is ever put
	// back.
	kept := dst + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
	keptFile, keptLog := false, false
	if _, err := os.Stat(dst); err == nil {
		if err := os.Rename(dst, kept); err != nil {
			return err
		}
		keptFile = true
	}
	if _, err := os.Stat(persistence.LogDir(dst)); err == nil {
		if err := os.Rename(persistence.LogDir(dst), persistence.LogDir(kept)); err != nil {
			return err
		}
		keptLog = true
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	if err := syncDir(*data); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s from %s\n", dst, *from)
	if keptFile {
		fmt.Fprintf(stdout, "the file it replaced is %s (delete it once the server runs well)\n", kept)
	}
	if keptLog {
		fmt.Fprintf(stdout, "its write-ahead log is %s, with it\n", persistence.LogDir(kept))
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
