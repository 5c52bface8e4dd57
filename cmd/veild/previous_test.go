package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// previousRelease is the veild the rolling upgrade test starts from: the
// last commit before the wire names changed (docs/operations.md,
// "Upgrades": the six answers renamed on 2026-11-26, 9638fcd). There are no
// release tags; an upgrade from it is the hardest supported one, since it
// decodes only the earlier names. VEIL_UPGRADE_FROM=<commit> tests another;
// VEIL_UPGRADE_PREVIOUS_BIN=<path> uses a veild built before.
const previousRelease = "d69a0d6"

var previous struct {
	once sync.Once
	bin  string
	err  error
	skip string
}

// previousVeild builds previousRelease (or VEIL_UPGRADE_FROM) from this
// repository's git history once per test binary and returns its path. The
// source comes from `git archive`, so the working tree is not touched; the
// build uses the module cache like any other (the dependencies are the
// same). Outside a git clone, or in a shallow one that cannot be deepened,
// the test is skipped, except under CI=true, where it fails saying why.
func previousVeild(t *testing.T) string {
	t.Helper()
	previous.once.Do(func() {
		previous.bin, previous.skip, previous.err = buildPrevious()
	})
	switch {
	case previous.err != nil:
		t.Fatalf("building the previous release: %v", previous.err)
	case previous.skip != "" && os.Getenv("CI") == "true":
		t.Fatalf("the rolling upgrade test needs the previous release from git history, and CI must run it: %s", previous.skip)
	case previous.skip != "":
		t.Skip(previous.skip)
	}
	return previous.bin
}

func buildPrevious() (bin, skip string, err error) {
	// A binary built before (of the commit below, or of another release
	// to test an upgrade from it) saves the build.
	if b := os.Getenv("VEIL_UPGRADE_PREVIOUS_BIN"); b != "" {
		return b, "", nil
	}
	commit := previousRelease
	if c := os.Getenv("VEIL_UPGRADE_FROM"); c != "" {
		commit = c
	}
	git := func(args ...string) ([]byte, error) {
		out, err := exec.Command("git", args...).Output()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(ee.Stderr))
		}
		return out, err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Sprintf("not in a git clone (%v)", err), nil
	}
	if _, err := git("cat-file", "-e", commit+"^{commit}"); err != nil {
		// A shallow clone (CI's default depth in some systems) lacks it:
		// fetch the whole history once.
		if sh, _ := git("rev-parse", "--is-shallow-repository"); strings.TrimSpace(string(sh)) == "true" {
			if _, ferr := git("fetch", "--unshallow", "--quiet"); ferr != nil {
				return "", fmt.Sprintf("the clone is shallow and could not be deepened to reach %s (%v): clone with full history", commit, ferr), nil
			}
		}
		if _, err := git("cat-file", "-e", commit+"^{commit}"); err != nil {
			return "", fmt.Sprintf("commit %s is not in this clone's history (%v)", commit, err), nil
		}
	}
	full, err := git("rev-parse", commit+"^{commit}")
	if err != nil {
		return "", "", err
	}
	rev := strings.TrimSpace(string(full))
	// From the top: run in a subdirectory (the test's cmd/veild), git
	// archive would pack only that directory.
	archive, err := git("-C", strings.TrimSpace(string(top)), "archive", "--format=tar", rev)
	if err != nil {
		return "", "", err
	}
	// Beside the current build, in TestMain's directory, which goes when
	// the test binary ends: the build outlives any one test.
	dir := filepath.Dir(veildBin)
	src := filepath.Join(dir, "previous-src")
	if err := untar(bytes.NewReader(archive), src); err != nil {
		return "", "", fmt.Errorf("unpacking %s: %w", rev[:12], err)
	}
	bin = filepath.Join(dir, "veild-"+rev[:12])
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+rev[:12], "-o", bin, "./cmd/veild")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build of %s: %w\n%s", rev[:12], err, out)
	}
	_ = os.RemoveAll(src)
	return bin, "", nil
}

// untar writes a git archive (regular files, directories and symlinks)
// under dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, name); err != nil {
				return err
			}
		}
	}
}
