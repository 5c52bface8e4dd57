package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"},
		{Key: "vcs.time", Value: "2026-11-23T12:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	tests := []struct {
		name, main, ldflags string
		settings            []debug.BuildSetting
		want                Info
		str                 string
	}{
		{"plain go build in a checkout", "v0.0.0-20261123120000-1a2b3c4d5e6f+dirty", "dev", vcs,
			Info{Version: "v0.0.0-20261123120000-1a2b3c4d5e6f+dirty", Revision: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", Time: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Dirty: true, GoVersion: "go1.26.8"},
			"v0.0.0-20261123120000-1a2b3c4d5e6f+dirty (revision 1a2b3c4d5e6f, 2026-11-23T12:00:00Z, dirty; go1.26.8)"},
		{"make build sets the version", "(devel)", "v1.4.0-3-gabc", vcs[:3],
			Info{Version: "v1.4.0-3-gabc", Revision: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", Time: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), GoVersion: "go1.26.8"},
			"v1.4.0-3-gabc (revision 1a2b3c4d5e6f, 2026-11-23T12:00:00Z; go1.26.8)"},
		{"go install of a tag", "v1.5.0", "", nil, Info{Version: "v1.5.0", GoVersion: "go1.26.8"}, "v1.5.0 (go1.26.8)"},
		{"no VCS, no version", "(devel)", "dev", nil, Info{Version: "devel", GoVersion: "go1.26.8"}, "devel (go1.26.8)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: tc.main}, Settings: tc.settings}, tc.ldflags)
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			if got.String() != tc.str {
				t.Fatalf("String() = %q, want %q", got.String(), tc.str)
			}
		})
	}
}

// A binary made by a plain `go build` in this checkout knows its revision.
// The toolchain stamps VCS information only in a repository's main
// checkout (not in a `git worktree`, whose .git is a file), and not under
// GOFLAGS=-buildvcs=false, which the test overrides.
func TestPlainGoBuildHasRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	top, _ := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err == nil && !fi.IsDir() {
		t.Skip("a git worktree: the go command stamps no VCS information there")
	}
	bin := filepath.Join(t.TempDir(), "printinfo")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./testdata/printinfo").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "revision "+strings.TrimSpace(string(head))[:12]) {
		t.Fatalf("plain go build says %q; HEAD is %s", out, head)
	}
}
