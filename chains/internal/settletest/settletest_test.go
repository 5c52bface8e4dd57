package settletest

import (
	"context"
	"testing"

	"github.com/veilhq/veil/chains"
)

func TestRecorderOf(t *testing.T) {
	var r Recorder
	for _, x := range []chains.Settlement{
		{IdempotencyKey: "a", TxHash: "1"},
		{IdempotencyKey: "b", TxHash: "2"},
		{IdempotencyKey: "a", TxHash: "3"},
	} {
		if err := r.On(context.Background(), x); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"a", []string{"1", "3"}},
		{"b", []string{"2"}},
		{"c", nil},
	} {
		got := r.Of(c.key)
		if len(got) != len(c.want) {
			t.Fatalf("Of(%q) = %+v; want hashes %v", c.key, got, c.want)
		}
		for i := range got {
			if got[i].TxHash != c.want[i] {
				t.Fatalf("Of(%q) = %+v; want hashes %v", c.key, got, c.want)
			}
		}
	}
	if n := len(r.All()); n != 3 {
		t.Fatalf("All() has %d; want 3", n)
	}
}
