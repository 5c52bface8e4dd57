package apikey

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

func TestExpiryRevocationAndScopes(t *testing.T) {
	ctx := context.Background()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock = func() time.Time { return now }
	defer func() { clock = time.Now }()
	boot, err := Bootstrap(ctx, st, now)
	if err != nil || boot == "" {
		t.Fatal(err)
	}
	acc, k, err := Lookup(ctx, st, boot)
	if err != nil || k.Scope != ScopeAdmin || !IsOperator(acc, k) {
		t.Fatalf("bootstrap key: %+v %v", k, err)
	}
	exp := now.Add(time.Hour)
	secret, made, err := Issue(ctx, st, acc, Options{Name: "ci", Scope: ScopeRead, ExpiresAt: &exp}, now)
	if err != nil || !ValidID(made.ID) {
		t.Fatal(err)
	}
	if _, _, err := Lookup(ctx, st, secret); err != nil {
		t.Fatal(err)
	}
	now = exp
	if _, k, err := Lookup(ctx, st, secret); !errors.Is(err, ErrExpired) || k.ID != made.ID {
		t.Fatalf("at expiry: %v", err)
	}
	if _, _, _, err := Rotate(ctx, st, acc.ID, made.ID, now); !errors.Is(err, ErrInvalid) {
		t.Fatalf("rotating an expired key: %v", err)
	}
	if _, err := Revoke(ctx, st, "another account", made.ID, now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another account revoked it: %v", err)
	}
	if _, err := Revoke(ctx, st, acc.ID, made.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Lookup(ctx, st, secret); !errors.Is(err, ErrRevoked) {
		t.Fatalf("after revoke: %v", err)
	}
	for _, tc := range []struct {
		have, need Scope
		ok         bool
	}{{ScopeRead, ScopeRead, true}, {ScopeRead, ScopeChat, false}, {ScopeChat, ScopeFull, false}, {ScopeAdmin, ScopeFull, true}, {"", ScopeRead, false}} {
		if got := tc.have.Allows(tc.need); got != tc.ok {
			t.Errorf("%q allows %q: %t", tc.have, tc.need, got)
		}
	}
	// A key stored before scopes: full outside the bootstrap account.
	if s := EffectiveScope(Account{Name: "acme"}, Key{}); s != ScopeFull {
		t.Fatalf("legacy key scope %s", s)
	}
}
