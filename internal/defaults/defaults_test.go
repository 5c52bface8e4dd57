package defaults

import (
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	if got := Positive(0, 7); got != 7 {
		t.Errorf("Positive(0, 7) = %d", got)
	}
	if got := Positive(-3, 7); got != 7 {
		t.Errorf("Positive(-3, 7) = %d", got)
	}
	if got := Positive(2, 7); got != 2 {
		t.Errorf("Positive(2, 7) = %d", got)
	}
	if got := Positive(-time.Second, time.Minute); got != time.Minute {
		t.Errorf("Positive(-1s, 1m) = %s", got)
	}
}
