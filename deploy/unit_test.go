// Package deploy holds the files to run veild as a service; its test
// checks them.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSystemdUnit checks deploy/veild.service with systemd-analyze: verify
// (every directive known and valid) and the offline security review
// (exposure at most 2.0 of 10). It skips only outside CI when
// systemd-analyze is missing (.ci/run installs it).
func TestSystemdUnit(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is missing (apt-get install systemd)")
		}
		t.Skip("systemd-analyze is not installed (apt-get install systemd); CI runs this test")
	}
	raw, err := os.ReadFile("veild.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	for _, want := range []string{"DynamicUser=yes", "StateDirectory=veil", "ProtectSystem=strict", "NoNewPrivileges=yes", "ExecStart=/usr/local/bin/veild serve", "KillSignal=SIGTERM"} {
		if !strings.Contains(unit, "\n"+want+"\n") {
			t.Fatalf("veild.service lacks %q", want)
		}
	}
	// verify wants the ExecStart binary to exist: point it at this test
	// binary in a copy of the unit.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "veild.service")
	if err := os.WriteFile(path, []byte(strings.Replace(unit, "ExecStart=/usr/local/bin/veild", "ExecStart="+self, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", "--man=no", path).CombinedOutput()
	// verify also reports problems of unrelated units on this machine;
	// only lines about ours count.
	var ours []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "veild.service") {
			ours = append(ours, l)
		}
	}
	if len(ours) > 0 {
		t.Fatalf("systemd-analyze verify (%v):\n%s", err, strings.Join(ours, "\n"))
	}

	out, err = exec.Command(sa, "security", "--offline=yes", "--no-pager", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for veild.service: ([0-9.]+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	level, _ := strconv.ParseFloat(m[1], 64)
	t.Logf("systemd-analyze security: exposure %.1f", level)
	if level > 2.0 {
		t.Fatalf("exposure %.1f > 2.0:\n%s", level, out)
	}
}
