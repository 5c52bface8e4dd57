package agent_test

import "testing"

// TestDialoguesHistory scores the held-out set of history questions,
// invoice lists and invoice cancelling (dialogues_history.jsonl, written
// before the planner routed any of them; docs/models.md): it fails below
// 97%, and no turn of it may pay what its "sent" does not say.
func TestDialoguesHistory(t *testing.T) {
	passed, total, misses := scoreDialogues(t, "dialogues_history.jsonl")
	if total < 100 {
		t.Fatalf("history set has %d conversations, want at least 100", total)
	}
	acc := 100 * float64(passed) / float64(total)
	t.Logf("dialogues history: %d/%d (%.1f%%)", passed, total, acc)
	for _, m := range misses {
		t.Logf("history miss: %s", m)
	}
	if acc < 97 {
		t.Errorf("history accuracy %.1f%% is below 97%%", acc)
	}
}
