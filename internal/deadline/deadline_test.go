package deadline

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestTimeout(t *testing.T) {
	if d, err := Timeout(context.Background(), time.Minute); d != time.Minute || err != nil {
		t.Fatalf("no deadline: %v, %v; want the default", d, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if d, err := Timeout(ctx, time.Minute); err != nil || d <= time.Minute || d > time.Hour {
		t.Fatalf("deadline in an hour: %v, %v; want the time left", d, err)
	}
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := Timeout(past, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("passed deadline: %v; want DeadlineExceeded", err)
	}
}
