package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// The labelled corpus (testdata/corpus, docs/models.md): train.jsonl and
// dev.jsonl hold messages with the tool calls (and arguments) the planner
// must make, or none; zero.jsonl holds messages that must never move
// money. Dev is never tuned on: a failure found there is added to train
// and dev gets fresh items.

// corpusItem is one labelled message.
type corpusItem struct {
	Text  string     `json:"text"`
	Calls []wantJSON `json:"calls"`
	Why   string     `json:"why,omitempty"` // zero set: the class
}

type wantJSON struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// stateChanging tools: a wrong call of one counts as three misses.
var stateChanging = map[string]bool{
	"send_payment": true, "pay_agent": true, "schedule_payment": true, "withdraw": true, "withdraw_all": true,
	"manage_schedule": true, "register_name": true, "create_invoice": true, "fund_wallet": true, "save_memory": true,
	"pay_invoice": true, "fetch_paid": true,
}

// valueMoving tools (the tools' MovesValue).
var valueMoving = map[string]bool{"send_payment": true, "pay_agent": true, "schedule_payment": true, "withdraw": true, "withdraw_all": true, "pay_invoice": true, "fetch_paid": true}

var corpusNow = time.Date(2027, 1, 31, 10, 0, 0, 0, time.UTC)

func loadCorpus(t *testing.T, name string) []corpusItem {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusItem
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		var it corpusItem
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&it); err != nil || it.Text == "" {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		out = append(out, it)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// planCalls runs the planner on one message with every tool offered.
func planCalls(t *testing.T, text string) ([]wantJSON, string) {
	t.Helper()
	var tools []llms.Tool
	for _, n := range ToolNames {
		tools = append(tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: n, Parameters: map[string]any{"type": "object"}}})
	}
	m := New(WithNow(func() time.Time { return corpusNow }))
	resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, text)}, llms.WithTools(tools))
	if err != nil {
		t.Fatal(err)
	}
	var out []wantJSON
	for _, c := range resp.Choices[0].ToolCalls {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
			t.Fatalf("%q: arguments %s", text, c.FunctionCall.Arguments)
		}
		out = append(out, wantJSON{Tool: c.FunctionCall.Name, Args: args})
	}
	return out, resp.Choices[0].Content
}

// score is the corpus score: per expected tool (the first expected call's
// tool, or "none"), items and misses; a wrong call of a state-changing
// tool the item did not ask for is three misses.
type score struct {
	items, misses map[string]int
	failures      []string
}

func (s score) total() (items, misses int) {
	for k, n := range s.items {
		items += n
		misses += s.misses[k]
	}
	return
}

func (s score) accuracy() float64 {
	items, misses := s.total()
	if items == 0 {
		return 0
	}
	return 100 * float64(max(0, items-misses)) / float64(items)
}

func (s score) String() string {
	var keys []string
	for k := range s.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	items, misses := s.total()
	fmt.Fprintf(&b, "%d items, %d weighted misses, accuracy %.1f%%\n", items, misses, s.accuracy())
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-17s %4d items %3d misses %6.1f%%\n", k, s.items[k], s.misses[k], 100*float64(max(0, s.items[k]-s.misses[k]))/float64(s.items[k]))
	}
	return b.String()
}

func scoreCorpus(t *testing.T, items []corpusItem) score {
	s := score{items: map[string]int{}, misses: map[string]int{}}
	for _, it := range items {
		key := "none"
		if len(it.Calls) > 0 {
			key = it.Calls[0].Tool
		}
		s.items[key]++
		got, text := planCalls(t, it.Text)
		want := it.Calls
		if want == nil {
			want = []wantJSON{}
		}
		if got == nil {
			got = []wantJSON{}
		}
		if sameCalls(got, want) {
			continue
		}
		miss := 1
		for _, g := range got {
			if stateChanging[g.Tool] && !containsCall(want, g) {
				miss = 3
			}
		}
		s.misses[key] += miss
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		s.failures = append(s.failures, fmt.Sprintf("%q\n    got  %s %q\n    want %s", it.Text, gj, clipText(text, 120), wj))
	}
	return s
}

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func sameCalls(a, b []wantJSON) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Tool != b[i].Tool || !sameArgs(a[i].Args, b[i].Args) {
			return false
		}
	}
	return true
}

func sameArgs(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func containsCall(cs []wantJSON, c wantJSON) bool {
	for _, x := range cs {
		if x.Tool == c.Tool && sameArgs(x.Args, c.Args) {
			return true
		}
	}
	return false
}

// TestCorpusDev scores the planner on the dev set: it fails below 97%.
func TestCorpusDev(t *testing.T) {
	s := scoreCorpus(t, loadCorpus(t, "dev.jsonl"))
	t.Logf("dev: %s", s)
	for _, f := range s.failures {
		t.Logf("dev miss: %s", f)
	}
	if acc := s.accuracy(); acc < 97 {
		t.Errorf("dev accuracy %.1f%% is below 97%%", acc)
	}
}

// TestCorpusTrain scores the train set (what the planner was built on):
// every item must pass.
func TestCorpusTrain(t *testing.T) {
	s := scoreCorpus(t, loadCorpus(t, "train.jsonl"))
	t.Logf("train: %s", s)
	for _, f := range s.failures {
		t.Errorf("train miss: %s", f)
	}
}

// TestCorpusZero: no message of the zero-tolerance set moves money.
func TestCorpusZero(t *testing.T) {
	items := loadCorpus(t, "zero.jsonl")
	if len(items) < 100 {
		t.Fatalf("zero set has %d items, want at least 100", len(items))
	}
	byWhy := map[string]int{}
	for _, it := range items {
		byWhy[it.Why]++
		got, text := planCalls(t, it.Text)
		for _, g := range got {
			if valueMoving[g.Tool] {
				args, _ := json.Marshal(g.Args)
				t.Errorf("zero set (%s): %q moved money: %s %s", it.Why, it.Text, g.Tool, args)
			}
		}
		if strings.TrimSpace(text) == "" && len(got) == 0 {
			t.Errorf("zero set: %q: no answer", it.Text)
		}
	}
	t.Logf("zero: %d items, by class %v", len(items), byWhy)
}

// TestCorpusSize: the corpus is as large as docs/models.md says.
func TestCorpusSize(t *testing.T) {
	train, dev := loadCorpus(t, "train.jsonl"), loadCorpus(t, "dev.jsonl")
	if len(train)+len(dev) < 800 {
		t.Errorf("train %d + dev %d < 800", len(train), len(dev))
	}
	seen := map[string]bool{}
	for _, it := range train {
		seen[strings.ToLower(it.Text)] = true
	}
	for _, it := range dev {
		if seen[strings.ToLower(it.Text)] {
			t.Errorf("dev item also in train: %q", it.Text)
		}
	}
}
