package wal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/veilhq/veil/persistence/internal/wal"
)

// spareLog writes n records to a log whose segments after the first are
// zero-filled spares: it waits for each spare before the write that
// rotates, so every rotation takes one. It returns the segment files.
func spareLog(t *testing.T, dir string, segmentSize int64, n int) []string {
	t.Helper()
	l, err := wal.Create(dir, idA, 1, wal.Options{SegmentSize: segmentSize})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		wal.WaitSpare(l)
		if _, err := l.Write([]byte(payload(uint64(i + 1)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	return segFiles(t, dir)
}

// Segments zero-filled ahead end where their zeroes begin: every record
// replays, in order, from segments whose files are longer than their
// records, and no spare is left behind by Close.
func TestSpareSegmentsReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	const segmentSize = segHeader + 4*recSize
	segs := spareLog(t, dir, segmentSize, 11) // 1-4 appended, 5-8 and 9-11 in spares
	if want := []string{segName(1), segName(5), segName(9)}; !slices.Equal(segs, want) {
		t.Fatalf("segments %v, want %v", segs, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(segs) {
		t.Fatalf("files %v: a spare was left behind", entries)
	}
	// The last segment is zero-filled past its three records.
	fi, err := os.Stat(filepath.Join(dir, segName(9)))
	if err != nil {
		t.Fatal(err)
	}
	if written := int64(segHeader + 3*recSize); fi.Size() <= written {
		t.Fatalf("segment 9 is %d bytes, its records end at %d: not zero-filled ahead", fi.Size(), written)
	}
	got, last, err := replay(dir, idA, 0)
	if err != nil || last != 11 || !slices.Equal(got, want(1, 11)) {
		t.Fatalf("replay = %v, %d, %v; want records 1..11", got, last, err)
	}
}

// A non-zero byte in the zeroes after a segment's records is damage: in
// the last segment it can be a torn write (the records before it stand),
// in an earlier one it cannot, and the replay stops with ErrCorrupt.
func TestSpareSegmentsDamagedZeroes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segment uint64
		wantErr error
	}{
		{"last segment", 9, nil},
		{"earlier segment", 5, wal.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			// 1-4, then spares 5-8 and 9-11, each with zeroes after
			// its records (10 bytes past four records).
			spareLog(t, dir, segHeader+4*recSize+10, 11)
			path := filepath.Join(dir, segName(tc.segment))
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := f.Stat()
			if _, err := f.WriteAt([]byte{0x5a}, fi.Size()-1); err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, last, err := replay(dir, idA, 0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("replay: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && (last != 11 || !slices.Equal(got, want(1, 11))) {
				t.Fatalf("replay = %v, %d; want records 1..11", got, last)
			}
		})
	}
}

// A spare carries its segment header before it is renamed into place, so
// a crash right after the rename leaves a valid, empty segment.
func TestSpareHasItsHeaderBeforeTheRename(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l, err := wal.Create(dir, idA, 1, wal.Options{SegmentSize: segHeader + 4*recSize})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(false)
	for i := range 3 { // past half the first segment: a spare is made
		if _, err := l.Write([]byte(payload(uint64(i + 1)))); err != nil {
			t.Fatal(err)
		}
	}
	wal.WaitSpare(l)
	spares, _ := filepath.Glob(filepath.Join(dir, "*.spare"))
	if len(spares) != 1 {
		t.Fatalf("spares %v, want one", spares)
	}
	raw, err := os.ReadFile(spares[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("VEILWAL1"), idA[:]...); len(raw) < segHeader || !bytes.Equal(raw[:segHeader], want) {
		t.Fatalf("spare starts %x, want the header %x", raw[:min(len(raw), segHeader)], want)
	}
	// Renamed as a crash would leave it: a valid segment with no record.
	if err := os.Rename(spares[0], filepath.Join(dir, segName(4))); err != nil {
		t.Fatal(err)
	}
	got, last, err := replay(dir, idA, 0)
	if err != nil || last != 3 || !slices.Equal(got, want(1, 3)) {
		t.Fatalf("replay = %v, %d, %v; want records 1..3", got, last, err)
	}
}

// A damaged record in a zero-filled last segment with intact records after
// it is damage, not a torn tail: those records were written after it, so
// it was acknowledged, and the replay stops with ErrCorrupt instead of
// dropping it and everything after it. Damage to the last record, with
// only zeroes after it, is the torn tail and the records before it stand.
func TestSpareSegmentDamageBeforeRecords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		record  int // index of the damaged record in segment 9 (records 9, 10, 11)
		wantErr error
		want    []rec
	}{
		{"first of three", 0, wal.ErrCorrupt, nil},
		{"second of three", 1, wal.ErrCorrupt, nil},
		{"last", 2, nil, want(1, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			spareLog(t, dir, segHeader+4*recSize+10, 11)
			path := filepath.Join(dir, segName(9))
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte{0xff}, int64(segHeader+tc.record*recSize+recordHead+3)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, _, err := replay(dir, idA, 0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("replay: %v (records %v), want %v", err, got, tc.wantErr)
			}
			if tc.wantErr == nil && !slices.Equal(got, tc.want) {
				t.Fatalf("replay = %v, want %v", got, tc.want)
			}
		})
	}
}
