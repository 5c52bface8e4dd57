package main

import (
	"bufio"
	"strings"
	"testing"
)

// TestRepositoryDocs runs the check on this repository.
func TestRepositoryDocs(t *testing.T) {
	problems, err := check("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckFile proves the rules on made-up files.
func TestCheckFile(t *testing.T) {
	want := map[string]int{"tools": 19, "chains": 6, "notification types": 9}
	for _, tc := range []struct {
		name, doc string
		problems  int
	}{
		{"balanced", "a\n```sh\nx\n```\nb\n", 0},
		{"never closed", "a\n```sh\nx\n", 1},
		{"closed with text after it", "```sh\nx\n``` `--timeout` bounds\n## Agents\n", 2},
		{"tilde fence holds backticks", "~~~\n```\n~~~\n", 0},
		{"inline triple backticks", "use ```x``` here\n", 0},
		{"right counts", "the 19 tools on six chains, 9 notification types\n", 0},
		{"wrong counts", "the 18 tools on four chains\n", 2},
		{"counts inside code are not checked", "```\n3 tools\n```\n", 0},
		{"qualified count", "all four EVM chains\n", 0},
	} {
		got := checkFile(tc.name, bufio.NewScanner(strings.NewReader(tc.doc)), want)
		if len(got) != tc.problems {
			t.Errorf("%s: %d problems %q, want %d", tc.name, len(got), got, tc.problems)
		}
	}
}
