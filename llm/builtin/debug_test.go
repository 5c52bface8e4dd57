package builtin

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDebugPlan prints the planner's calls for each line of the file named
// by PLAN_DEBUG (a tool for writing corpus items; skipped otherwise).
func TestDebugPlan(t *testing.T) {
	path := os.Getenv("PLAN_DEBUG")
	if path == "" {
		t.Skip("PLAN_DEBUG not set")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		got, text := planCalls(t, line)
		j, _ := json.Marshal(got)
		t.Logf("%s\n  -> %s %s", line, j, clipText(text, 100))
	}
}
