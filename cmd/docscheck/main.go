// Command docscheck checks what the docs say against themselves and the
// code: every code fence of README.md and docs/*.md is closed by a bare
// fence (a "``` text" line does not close one, it swallows what follows,
// as docs/cli.md's Agents section once was), and every counted thing (the
// agent's tools, the chains, the notification types) is the number the
// code has. `make lint` runs it; its test runs it on the repository.
//
//	go run ./cmd/docscheck [ROOT]
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	problems, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// counted are the things the docs count, each with the code's number. A
// count of a part ("four EVM chains") names the part and does not match.
func counted() map[string]int {
	return map[string]int{
		"tools":              len(tools.All()),
		"chains":             len(chains.Order()),
		"notification types": len(agent.NotificationTypes()),
	}
}

var words = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}

// countRE finds "<number> <thing>", the number in digits or words,
// optionally after "the" or "all".
var countRE = regexp.MustCompile(`(?i)\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty) (tools|chains|notification types)\b`)

// fenceRE is a fence line: up to three spaces, then ``` or ~~~ (or more).
var fenceRE = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")

func files(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := append([]string{filepath.Join(root, "README.md")}, docs...)
	sort.Strings(out[1:])
	return out, nil
}

func check(root string) ([]string, error) {
	paths, err := files(root)
	if err != nil {
		return nil, err
	}
	want := counted()
	var problems []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		problems = append(problems, checkFile(rel, bufio.NewScanner(f), want)...)
		f.Close()
	}
	return problems, nil
}

// checkFile checks one Markdown file's fences and counts.
func checkFile(name string, sc *bufio.Scanner, want map[string]int) []string {
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var problems []string
	open, openLine := "", 0
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			fence, rest := m[1], strings.TrimSpace(m[2])
			switch {
			case open == "":
				if fence[0] == '`' && strings.Contains(rest, "`") {
					// ```code``` on one line is inline code, not a fence.
					continue
				}
				open, openLine = fence, n
			case fence[0] == open[0] && len(fence) >= len(open) && rest == "":
				open = ""
			case fence[0] == open[0] && len(fence) >= len(open):
				problems = append(problems, fmt.Sprintf("%s:%d: a fence with text after it (%q) does not close the code block opened at line %d: put the text on its own line", name, n, truncate(line, 50), openLine))
			}
			continue
		}
		if open != "" {
			continue // code: commands and output may count anything
		}
		for _, m := range countRE.FindAllStringSubmatch(line, -1) {
			thing := strings.ToLower(m[2])
			got, ok := words[strings.ToLower(m[1])]
			if !ok {
				got, _ = strconv.Atoi(m[1])
			}
			if w := want[thing]; got != w {
				problems = append(problems, fmt.Sprintf("%s:%d: says %s %s; the code has %d", name, n, m[1], thing, w))
			}
		}
	}
	if open != "" {
		problems = append(problems, fmt.Sprintf("%s:%d: code block opened here is never closed", name, openLine))
	}
	return problems
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
