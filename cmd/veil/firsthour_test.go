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

// firstHourThenMarker opens the block of what to run once the invoice is
// paid.
const firstHourThenMarker = "<!-- first-hour-then: cmd/veil TestREADMEFirstHour runs this block after the one above -->"

// firstHour is the README's block after marker, its lines without their
// comments.
func firstHour(t *testing.T, marker string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(raw), marker)
	if !ok {
		t.Fatalf("README.md has no %q", marker)
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
// Then the README's next block runs ("<invoice id>" the link's): the
// invoice shows paid with bob's transaction, alice's received payments
// list that transaction and bob's payments the record.
func TestREADMEFirstHour(t *testing.T) {
	lines := firstHour(t, firstHourMarker)
	then := firstHour(t, firstHourThenMarker)
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
				break
			}
		}
	}
	if status != "paid" {
		t.Fatalf("invoice %s is %q after the README's five commands, want paid", invoice, status)
	}
	r := run("invoice", "show", invoice, "--json")
	var inv struct {
		TxHash string `json:"txHash"`
		PayTo  string `json:"payTo"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &inv); err != nil || inv.TxHash == "" {
		t.Fatalf("the paid invoice: %s", r)
	}
	// What the README says each line of the next block shows.
	wants := map[string][]string{
		"invoice show":   {"paid", inv.TxHash},
		"payments alice": {"0.01 ETH", inv.PayTo, inv.TxHash},
		"payments bob":   {"0.01 ETH", "alice.veil", inv.TxHash},
	}
	if len(then) != len(wants) {
		t.Fatalf("the README's block after the first hour has %d lines, want %d: %q", len(then), len(wants), then)
	}
	for _, line := range then {
		if !strings.HasPrefix(line, "bin/veil ") {
			t.Fatalf("README line %q is not a veil command", line)
		}
		line = strings.ReplaceAll(line, "<invoice id>", invoice)
		args := words(t, strings.TrimPrefix(line, "bin/veil "))
		r := run(args...)
		if r.code != 0 {
			t.Fatalf("README line %q: %s", line, r)
		}
		want, ok := wants[args[0]+" "+args[1]]
		if !ok {
			t.Fatalf("README line %q: not one this test knows what to expect of", line)
		}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Fatalf("README line %q does not show %q:\n%s", line, w, r)
			}
		}
	}
}
