// Package npmtest installs the npm packages of a test's testdata folder:
// the interop tests against reference implementations on npm keep a
// package.json and package-lock.json there and run the packages with node.
package npmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Install checks that node and npm are installed and runs `npm ci` in dir
// when its node_modules is missing (or was not made by npm ci/install). It
// answers dir as an absolute path. Without node or npm the test skips,
// except in CI (CI=true), where it fails: CI must run every interop test.
func Install(t testing.TB, dir string) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (apt-get install -y nodejs npm); CI must run this interop test", bin)
			}
			t.Skipf("%s is not installed (apt-get install -y nodejs npm)", bin)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", ".package-lock.json")); err == nil {
		return abs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = abs
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", abs, err, out)
	}
	return abs
}
