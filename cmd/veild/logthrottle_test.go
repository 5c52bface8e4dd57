package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestThrottledLogPassesEachMessageOncePerWindow(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	log := slog.New(newThrottled(slog.NewTextHandler(&buf, nil), 30*time.Second, clock)).With(slog.String("component", "protoactor"))
	for i := 0; i < 5; i++ {
		log.Error("Bad connection to the node health status", slog.Int("try", i))
		now = now.Add(time.Second)
	}
	log.Error("another message")
	now = now.Add(30 * time.Second)
	log.Error("Bad connection to the node health status", slog.Int("try", 99))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3 (first, other, after the window):\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[0], "try=0") || strings.Contains(lines[0], "repeats_suppressed") {
		t.Fatalf("first line: %s", lines[0])
	}
	if !strings.Contains(lines[1], "another message") {
		t.Fatalf("a different message was throttled: %s", lines[1])
	}
	if !strings.Contains(lines[2], "try=99") || !strings.Contains(lines[2], "repeats_suppressed=4") || !strings.Contains(lines[2], "component=protoactor") {
		t.Fatalf("line after the window: %s", lines[2])
	}
}
