package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/veilhq/veil/persistence/internal/wal"
)

// The on-disk format, spelled out here independently of the package so
// that the tests damage exactly the bytes they mean to: a segment starts
// with "VEILWAL1" and the 16-byte log id, a record is
// [len u32][crc32c u32][seq u64][payload].
const (
	segHeader  = 8 + 16
	recordHead = 4 + 4 + 8
)

var idA, idB = wal.ID{1, 2, 3}, wal.ID{9, 8, 7}

type rec struct {
	seq     uint64
	payload string
}

// payload is record seq's content: distinct per record, of a fixed size
// so that the tests know where each record lies.
func payload(seq uint64) string { return fmt.Sprintf("record %013d", seq) } // 20 bytes

const recSize = recordHead + 20

// writeLog creates a log in dir starting at 1 and writes n records.
func writeLog(t *testing.T, dir string, id wal.ID, segmentSize int64, n int) *wal.Log {
	t.Helper()
	l, err := wal.Create(dir, id, 1, wal.Options{SegmentSize: segmentSize})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		seq, err := l.Write([]byte(payload(uint64(i + 1))))
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("write %d got seq %d", i+1, seq)
		}
	}
	return l
}

func replay(dir string, id wal.ID, after uint64) ([]rec, uint64, error) {
	var got []rec
	last, err := wal.Replay(dir, id, after, func(seq uint64, p []byte) error {
		got = append(got, rec{seq, string(p)})
		return nil
	})
	return got, last, err
}

// want is records from..to.
func want(from, to uint64) []rec {
	var out []rec
	for s := from; s <= to; s++ {
		out = append(out, rec{s, payload(s)})
	}
	return out
}

// segFiles lists dir's segments, leaving out a spare being zero-filled
// for the next one (Log.prepare), which holds no record.
func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".spare") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

func segName(first uint64) string { return fmt.Sprintf("%016x.wal", first) }

// threePerSegment is a segment size that puts exactly three records in
// each segment: Write rotates once a segment has reached it.
const threePerSegment = segHeader + 3*recSize

func TestWriteReplayInOrder(t *testing.T) {
	tests := []struct {
		name        string
		segmentSize int64
		payloads    []string
		segments    int
	}{
		{"one record", 0, []string{"x"}, 1},
		{"empty payload", 0, []string{"", "a", ""}, 1},
		{"mixed sizes", 0, []string{"a", strings.Repeat("b", 70000), "", "c"}, 1},
		{"several segments", threePerSegment, []string{payload(1), payload(2), payload(3), payload(4), payload(5), payload(6), payload(7)}, 3},
		// A segment size below the header: every record gets a segment.
		{"a segment per record", 1, []string{"1", "2", "3", "4"}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			l, err := wal.Create(dir, idA, 1, wal.Options{SegmentSize: tc.segmentSize})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range tc.payloads {
				if l.Next() != uint64(i+1) {
					t.Fatalf("Next = %d before write %d", l.Next(), i+1)
				}
				seq, err := l.Write([]byte(p))
				if err != nil {
					t.Fatalf("write %d: %v", i+1, err)
				}
				if seq != uint64(i+1) {
					t.Fatalf("write %d got seq %d", i+1, seq)
				}
			}
			if l.Segments() != tc.segments || len(segFiles(t, dir)) != tc.segments {
				t.Errorf("%d segments, %d files, want %d", l.Segments(), len(segFiles(t, dir)), tc.segments)
			}
			if err := l.Close(false); err != nil {
				t.Fatal(err)
			}
			got, last, err := replay(dir, idA, 0)
			if err != nil {
				t.Fatal(err)
			}
			if last != uint64(len(tc.payloads)) || len(got) != len(tc.payloads) {
				t.Fatalf("replay: last %d, %d records; want %d", last, len(got), len(tc.payloads))
			}
			for i, r := range got {
				if r.seq != uint64(i+1) || r.payload != tc.payloads[i] {
					t.Errorf("record %d: seq %d, %d bytes; want seq %d, %d bytes", i, r.seq, len(r.payload), i+1, len(tc.payloads[i]))
				}
			}
		})
	}
}

func TestReplaySkipsApplied(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := writeLog(t, dir, idA, threePerSegment, 8)
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{0, 1, 3, 4, 7, 8, 20} {
		t.Run(fmt.Sprint("after", after), func(t *testing.T) {
			got, last, err := replay(dir, idA, after)
			if err != nil {
				t.Fatal(err)
			}
			if wantLast := max(after, 8); last != wantLast {
				t.Errorf("last = %d, want %d", last, wantLast)
			}
			if w := want(after+1, 8); !slices.Equal(got, w) {
				t.Errorf("replayed %v, want %v", got, w)
			}
		})
	}
	// A missing directory is an empty log.
	got, last, err := replay(filepath.Join(t.TempDir(), "none"), idA, 5)
	if err != nil || last != 5 || len(got) != 0 {
		t.Fatalf("missing directory: %v, %d, %v", got, last, err)
	}
}

// damage is what a crash or the disk did to one record.
type damage struct {
	name string
	// apply damages the record that starts at off in data (the whole
	// segment file) and returns the new file.
	apply func(data []byte, off int) []byte
}

func flip(at int) func([]byte, int) []byte {
	return func(data []byte, off int) []byte {
		data = slices.Clone(data)
		data[off+at] ^= 0x40
		return data
	}
}

func cut(at int) func([]byte, int) []byte {
	return func(data []byte, off int) []byte { return slices.Clone(data[:off+at]) }
}

var damages = []damage{
	{"truncated in its head", cut(7)},
	{"truncated after its head", cut(recordHead)},
	{"truncated in its payload", cut(recordHead + 5)},
	{"one byte short", cut(recSize - 1)},
	{"length flipped", flip(3)},
	{"checksum flipped", flip(5)},
	{"seq flipped", flip(15)},
	{"payload flipped", flip(recordHead + 3)},
	{"zeroed", func(data []byte, off int) []byte {
		data = slices.Clone(data)
		clear(data[off : off+recSize])
		return data
	}},
}

// TestReplayDamage damages one record of a log of nine records in three
// segments (1-3, 4-6, 7-9). Only the last record of the last segment can
// be torn by a crash: the committer writes one record at a time and
// waits for its fdatasync. Its damage ends the log; any other record's
// is reported.
func TestReplayDamage(t *testing.T) {
	tests := []struct {
		record  uint64
		corrupt bool // else a torn tail: replay ends before it
	}{
		{9, false},
		{8, true}, // the last segment, but an intact record follows
		{7, true},
		{6, true}, // the last record of a segment that is not the last
		{5, true},
		{3, true},
		{1, true},
	}
	for _, tc := range tests {
		for _, d := range damages {
			if tc.corrupt && strings.HasPrefix(d.name, "truncated") || d.name == "one byte short" {
				if tc.record%3 != 0 {
					continue // cutting a record in the middle of a segment cuts its successors too
				}
			}
			t.Run(fmt.Sprintf("record %d %s", tc.record, d.name), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "log")
				l := writeLog(t, dir, idA, threePerSegment, 9)
				if err := l.Close(false); err != nil {
					t.Fatal(err)
				}
				first := (tc.record-1)/3*3 + 1
				path := filepath.Join(dir, segName(first))
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if len(data) != segHeader+3*recSize {
					t.Fatalf("segment of %d bytes, want %d", len(data), segHeader+3*recSize)
				}
				off := segHeader + int(tc.record-first)*recSize
				if err := os.WriteFile(path, d.apply(data, off), 0o600); err != nil {
					t.Fatal(err)
				}
				got, last, err := replay(dir, idA, 0)
				if tc.corrupt {
					if !errors.Is(err, wal.ErrCorrupt) {
						t.Fatalf("replay = %d records, last %d, %v; want ErrCorrupt", len(got), last, err)
					}
					if len(got) > 0 && got[len(got)-1].seq >= tc.record {
						t.Fatalf("fn saw record %d, at or past the damage", got[len(got)-1].seq)
					}
					return
				}
				if err != nil {
					t.Fatalf("torn tail: %v", err)
				}
				if w := want(1, tc.record-1); last != tc.record-1 || !slices.Equal(got, w) {
					t.Fatalf("replay = %v, last %d; want records 1..%d", got, last, tc.record-1)
				}
			})
		}
	}
}

// The file of a new segment may be left without its header, or part of
// it, by a crash during rotation: only the last segment may be.
func TestReplayShortHeader(t *testing.T) {
	for _, size := range []int{0, 5, segHeader - 1} {
		for _, lastSeg := range []bool{true, false} {
			t.Run(fmt.Sprintf("%d bytes, last %v", size, lastSeg), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "log")
				l := writeLog(t, dir, idA, threePerSegment, 7) // 1-3, 4-6, 7
				if err := l.Close(false); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, segName(8))
				if !lastSeg {
					path = filepath.Join(dir, segName(4))
				}
				data, _ := os.ReadFile(filepath.Join(dir, segName(1)))
				if err := os.WriteFile(path, data[:size], 0o600); err != nil {
					t.Fatal(err)
				}
				got, last, err := replay(dir, idA, 0)
				if !lastSeg {
					if !errors.Is(err, wal.ErrCorrupt) {
						t.Fatalf("replay = %v, %v; want ErrCorrupt", got, err)
					}
					return
				}
				if err != nil || last != 7 || !slices.Equal(got, want(1, 7)) {
					t.Fatalf("replay = %v, last %d, %v; want records 1..7", got, last, err)
				}
			})
		}
	}
}

func TestReplayGap(t *testing.T) {
	tests := []struct {
		name    string
		remove  []uint64 // first records of the segments removed
		after   uint64
		corrupt bool
		want    []rec
	}{
		{"middle segment missing", []uint64{4}, 0, true, nil},
		{"first segment missing", []uint64{1}, 0, true, nil},
		{"first segment missing, applied", []uint64{1}, 3, false, want(4, 9)},
		{"two missing, one applied", []uint64{1, 4}, 3, true, nil},
		{"two missing, both applied", []uint64{1, 4}, 6, false, want(7, 9)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			l := writeLog(t, dir, idA, threePerSegment, 9)
			if err := l.Close(false); err != nil {
				t.Fatal(err)
			}
			for _, first := range tc.remove {
				if err := os.Remove(filepath.Join(dir, segName(first))); err != nil {
					t.Fatal(err)
				}
			}
			got, _, err := replay(dir, idA, tc.after)
			if tc.corrupt {
				if !errors.Is(err, wal.ErrCorrupt) {
					t.Fatalf("replay = %v, %v; want ErrCorrupt", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("replay = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	// A gap inside a segment: a record renumbered, checksum and all.
	dir := filepath.Join(t.TempDir(), "log")
	l := writeLog(t, dir, idA, 0, 3)
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	l = writeLog(t, other, idA, 0, 4) // record 4 has the same size as 3
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, segName(1)))
	b, _ := os.ReadFile(filepath.Join(other, segName(1)))
	data := append(a[:segHeader+recSize], b[segHeader+3*recSize:]...) // 1, then 4
	data = append(data, b[segHeader+3*recSize:]...)                   // and 4 again
	if err := os.WriteFile(filepath.Join(dir, segName(1)), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _, err := replay(dir, idA, 0); !errors.Is(err, wal.ErrCorrupt) || !slices.Equal(got, want(1, 1)) {
		t.Fatalf("records 1, 4, 4: replay = %v, %v; want record 1, then ErrCorrupt", got, err)
	}
}

func TestReplayForeign(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := writeLog(t, dir, idA, threePerSegment, 6)
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay(dir, idB, 0); !errors.Is(err, wal.ErrForeign) {
		t.Fatalf("replay with another id: %v, want ErrForeign", err)
	}
	// One segment of another log among ours, numbered to follow them.
	other := filepath.Join(t.TempDir(), "other")
	lb, err := wal.Create(other, idB, 7, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lb.Write([]byte(payload(7))); err != nil {
		t.Fatal(err)
	}
	if err := lb.Close(false); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(other, segName(7)), filepath.Join(dir, segName(7))); err != nil {
		t.Fatal(err)
	}
	got, _, err := replay(dir, idA, 0)
	if !errors.Is(err, wal.ErrForeign) {
		t.Fatalf("replay with a foreign segment: %v, want ErrForeign", err)
	}
	if !slices.Equal(got, want(1, 6)) {
		t.Fatalf("replay saw %v before the foreign segment, want records 1..6", got)
	}
	// A file that is not a segment at all.
	if err := os.WriteFile(filepath.Join(dir, segName(7)), bytes.Repeat([]byte("x"), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replay(dir, idA, 0); !errors.Is(err, wal.ErrCorrupt) {
		t.Fatalf("replay with a junk segment: %v, want ErrCorrupt", err)
	}
}

func TestRotateAndRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := writeLog(t, dir, idA, threePerSegment, 10) // 1-3, 4-6, 7-9, 10
	all := []string{segName(1), segName(4), segName(7), segName(10)}
	if got := segFiles(t, dir); l.Segments() != 4 || !slices.Equal(got, all) {
		t.Fatalf("%d segments, files %v; want %v", l.Segments(), got, all)
	}
	// Release is cumulative: each step starts where the previous left.
	steps := []struct {
		applied uint64
		files   []string
	}{
		{0, all},
		{2, all},
		{3, all[1:]},
		{5, all[1:]},
		{8, all[2:]},
		{9, all[3:]},
		{10, all[3:]}, // the current segment stays, applied or not
		{100, all[3:]},
	}
	for _, st := range steps {
		if err := l.Release(st.applied); err != nil {
			t.Fatalf("Release(%d): %v", st.applied, err)
		}
		if got := segFiles(t, dir); !slices.Equal(got, st.files) || l.Segments() != len(st.files) {
			t.Fatalf("after Release(%d): files %v, Segments %d; want %v", st.applied, got, l.Segments(), st.files)
		}
	}
	// Writing goes on in the current segment, then the next.
	for seq := uint64(11); seq <= 13; seq++ {
		if got, err := l.Write([]byte(payload(seq))); err != nil || got != seq {
			t.Fatalf("write %d: %d, %v", seq, got, err)
		}
	}
	if err := l.Release(12); err != nil {
		t.Fatal(err)
	}
	if got := segFiles(t, dir); !slices.Equal(got, []string{segName(13)}) {
		t.Fatalf("after Release(12): %v", got)
	}
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	if got, _, err := replay(dir, idA, 12); err != nil || !slices.Equal(got, want(13, 13)) {
		t.Fatalf("replay after 12: %v, %v", got, err)
	}
}

func TestClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := writeLog(t, dir, idA, threePerSegment, 7)
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	if got, _, err := replay(dir, idA, 0); err != nil || !slices.Equal(got, want(1, 7)) {
		t.Fatalf("after Close(false): %v, %v", got, err)
	}
	// Create replaces whatever is there with one empty segment at next.
	l, err := wal.Create(dir, idA, 8, wal.Options{SegmentSize: threePerSegment})
	if err != nil {
		t.Fatal(err)
	}
	if got := segFiles(t, dir); !slices.Equal(got, []string{segName(8)}) {
		t.Fatalf("after Create: %v", got)
	}
	for seq := uint64(8); seq <= 12; seq++ {
		if got, err := l.Write([]byte(payload(seq))); err != nil || got != seq {
			t.Fatalf("write %d: %d, %v", seq, got, err)
		}
	}
	if err := l.Close(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close(true) left the directory: %v", err)
	}
}

func TestWriteFailureIsSticky(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l := writeLog(t, dir, idA, 0, 3)
	restore, err := wal.BreakWrites(l)
	if err != nil {
		t.Fatal(err)
	}
	_, err1 := l.Write([]byte(payload(4)))
	if err1 == nil {
		t.Fatal("write on a broken file succeeded")
	}
	// The file works again, but the log cannot know what the failed
	// write left: nothing may follow it.
	restore()
	for i := range 3 {
		if seq, err := l.Write([]byte(payload(4))); err == nil {
			t.Fatalf("write %d after a failure succeeded (seq %d)", i, seq)
		} else if err.Error() != err1.Error() {
			t.Errorf("later failure %q, want the first one %q", err, err1)
		}
	}
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	if got, last, err := replay(dir, idA, 0); err != nil || last != 3 || !slices.Equal(got, want(1, 3)) {
		t.Fatalf("replay = %v, last %d, %v; want records 1..3", got, last, err)
	}
}

// A value may hold the bytes of a record: a torn write of it must still
// read as the torn tail, not as damage followed by a record.
func TestReplayTornRecordHoldingRecordBytes(t *testing.T) {
	inner := filepath.Join(t.TempDir(), "inner")
	li, err := wal.Create(inner, idA, 1<<40, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := li.Write([]byte("a record inside a value")); err != nil {
		t.Fatal(err)
	}
	if err := li.Close(false); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(inner, segName(1<<40)))
	embedded := data[segHeader:]

	dir := filepath.Join(t.TempDir(), "log")
	l := writeLog(t, dir, idA, 0, 3)
	if _, err := l.Write(append([]byte("value: "), embedded...)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, segName(1))
	seg, _ := os.ReadFile(path)
	// The write of record 4 lost its first bytes; its end, the embedded
	// record, reached the disk.
	clear(seg[segHeader+3*recSize : segHeader+3*recSize+10])
	if err := os.WriteFile(path, seg, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, last, err := replay(dir, idA, 0); err != nil || last != 3 || !slices.Equal(got, want(1, 3)) {
		t.Fatalf("replay = %v, last %d, %v; want records 1..3", got, last, err)
	}
}

// Two damaged records in the last segment: only the last write can be
// torn, so the first was acknowledged and the replay stops with ErrCorrupt
// rather than dropping it and what follows, whether an intact record
// follows them (7 and 8) or none does (8 and 9: record 8 states a length
// and record 9's bytes follow it). A damaged last record alone is the
// torn tail: the records before it stand.
func TestReplayTwoDamagedRecords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []uint64 // damaged, in the last segment (7-9)
		wantErr error
	}{
		{"7 and 8, 9 intact", []uint64{7, 8}, wal.ErrCorrupt},
		{"8 and 9", []uint64{8, 9}, wal.ErrCorrupt},
		{"9 alone", []uint64{9}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			l := writeLog(t, dir, idA, threePerSegment, 9)
			if err := l.Close(false); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, segName(7))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.records {
				data = flip(recordHead+3)(data, segHeader+int(r-7)*recSize)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, _, err := replay(dir, idA, 0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("replay: %v (records %v), want %v", err, got, tc.wantErr)
			}
			if tc.wantErr == nil && !slices.Equal(got, want(1, tc.records[0]-1)) {
				t.Fatalf("replay = %v, want records 1..%d", got, tc.records[0]-1)
			}
		})
	}
}
