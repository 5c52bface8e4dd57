package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// firstHourMarker opens README.md's first-hour block: the fenced block
// after it is what TestREADMEFirstHour runs.
const firstHourMarker = "<!-- first-hour: cmd/veil TestREADMEFirstHour runs this block line by line -->"

// firstHour is the README's block, its lines without their comments.
func firstHour(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), firstHourMarker)
	if !ok {
		t.Fatalf("README.md has no %q", firstHourMarker)
	}
	rest = strings.TrimLeft(rest, "\n")
	if !strings.HasPrefix(rest, "```sh\n") {
		t.Fatalf("README.md: the first-hour marker is not followed by a sh block")
	}
	body, _, ok := strings.Cut(strings.TrimPrefix(rest, "```sh\n"), "\n```")
	if !ok {
		t.Fatal("README.md: the first-hour block is not closed")
	}
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// words splits a command line as sh would for the README's lines: words
// separated by spaces, double quotes grouping.
func words(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

var payLinkRE = regexp.MustCompile(`https?://\S+/pay/([0-9a-fA-F-]{36})`)

// TestREADMEFirstHour runs the README's first-hour block as it is written
// against veild serving on its embedded devnets (make run's server, here
// as a built binary): a throw-away owner key, two agents, an invoice in
// chat, the other agent paying its link; then the invoice reads paid. The
// block is read from README.md, so the README cannot drift from what
// works: "make run" is the server started here, the export is the
// bootstrap key it printed, "<pay link>" the link the line before printed.
func TestREADMEFirstHour(t *testing.T) {
	lines := firstHour(t)
	s := startVeild(t)
	env := veilEnv(t, s)
	dir := t.TempDir()
	run := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(veilBin, args...)
		cmd.Env, cmd.Dir = env, dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run()
		return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
	}
	var link, invoice string
	commands := 0
	for _, line := range lines {
		switch {
		case line == "make run":
			continue // the server started above
		case strings.HasPrefix(line, "export VEIL_API_KEY="):
			continue // veilEnv exports the bootstrap key startVeild read
		case !strings.HasPrefix(line, "bin/veil "):
			t.Fatalf("README first-hour line %q is neither make run, the key's export nor a veil command", line)
		}
		if strings.Contains(line, "<pay link>") {
			if link == "" {
				t.Fatalf("%q: no pay link printed before it", line)
			}
			line = strings.ReplaceAll(line, "<pay link>", link)
		}
		args := words(t, strings.TrimPrefix(line, "bin/veil "))
		r := run(args...)
		if r.code != 0 {
			t.Fatalf("README line %q: %s", line, r)
		}
		if m := payLinkRE.FindStringSubmatch(r.stdout); m != nil && link == "" {
			link, invoice = m[0], m[1]
		}
		commands++
	}
	if commands != 5 {
		t.Fatalf("the README's first hour has %d veil commands, want 5", commands)
	}
	if _, err := os.Stat(filepath.Join(dir, "veil-dev-owner.key")); err != nil {
		t.Fatalf("veil wallet new --dev wrote no key where the README says: %v", err)
	}
	// The invoice is paid (bob's pay_invoice settles it; the scanner
	// would too). The bound only ends a test that would hang.
	var status string
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		r := run("invoice", "show", invoice, "--json")
		var inv struct {
			Status string `json:"status"`
		}
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &inv) == nil {
			if status = inv.Status; status == "paid" {
				return
			}
		}
	}
	t.Fatalf("invoice %s is %q after the README's five commands, want paid", invoice, status)
}
