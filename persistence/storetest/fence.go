package storetest

// The context's fence (persistence.WithFence) through persistence.Fencing.

import (
	"context"
	"errors"
	"testing"

	"github.com/veilhq/veil/persistence"
)

// testFence: a batch made with a fenced context lands only while the
// fence's record is at its version, atomically; once the record moves,
// the whole batch is refused with ErrFenced (not ErrConflict, which
// callers retry), and a conflict of the batch's own ops stays a conflict.
func testFence(t *testing.T, raw persistence.Store) {
	s := persistence.Fencing(raw)
	ctx := context.Background()
	epoch := put(t, s, "epochs", "agent-1", "member a")
	fenced := persistence.WithFence(ctx, persistence.Fence{Table: "epochs", Key: "agent-1", Version: epoch})

	// No fence: the wrapper changes nothing.
	if vs, err := s.Apply(ctx, persistence.Put("intents", "k0", []byte("x"), persistence.Absent())); err != nil || len(vs) != 1 || vs[0] != 1 {
		t.Fatalf("unfenced Apply = %v, %v", vs, err)
	}
	// The fence holds: the batch lands and the versions are its own ops'.
	vs, err := s.Apply(fenced,
		persistence.Put("intents", "k1", []byte("signed tx 1"), persistence.Absent()),
		persistence.Put("nonces", "addr", []byte("1"), persistence.Absent()))
	if err != nil || len(vs) != 2 || vs[0] != 1 || vs[1] != 1 {
		t.Fatalf("Apply under a current fence = %v, %v; want [1 1]", vs, err)
	}
	// A conflict of the batch's own ops is still a conflict.
	_, err = s.Apply(fenced, persistence.Put("intents", "k1", []byte("again"), persistence.Absent()))
	wantConflict(t, err, "intents", "k1", persistence.Absent(), 1)
	if errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("own conflict reported as fenced: %v", err)
	}

	// Another owner takes over: the fence's record moves.
	put(t, s, "epochs", "agent-1", "member b")
	_, err = s.Apply(fenced,
		persistence.Put("intents", "k2", []byte("signed tx 2"), persistence.Absent()),
		persistence.Put("nonces", "addr", []byte("2"), persistence.AtVersion(1)))
	var fe *persistence.FenceError
	if !errors.Is(err, persistence.ErrFenced) || errors.Is(err, persistence.ErrConflict) || !errors.As(err, &fe) {
		t.Fatalf("Apply under a moved fence = %v (%T); want ErrFenced and not ErrConflict", err, err)
	}
	if fe.Version != epoch || fe.Actual != epoch+1 || fe.Table != "epochs" || fe.Key != "agent-1" {
		t.Fatalf("fence error %+v, want epochs/agent-1 at %d, found %d", *fe, epoch, epoch+1)
	}
	// Nothing of the refused batch landed.
	wantAbsent(t, s, "intents", "k2")
	wantRecord(t, s, "nonces", "addr", "1", 1)
	// WithoutFence lifts it: the undoing of one's own earlier write (the
	// rollback of a rejected payment) lands after a takeover.
	if _, err := s.Apply(persistence.WithoutFence(fenced), persistence.Delete("intents", "k1", persistence.AtVersion(1))); err != nil {
		t.Fatalf("Apply without the fence = %v", err)
	}
	wantAbsent(t, s, "intents", "k1")

	// A fence on a record that is gone refuses too.
	apply(t, s, persistence.Delete("epochs", "agent-1", persistence.Any()))
	if _, err := s.Apply(fenced, persistence.Put("intents", "k3", []byte("x"), persistence.Absent())); !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("Apply under a deleted fence = %v, want ErrFenced", err)
	}
	wantAbsent(t, s, "intents", "k3")
}
