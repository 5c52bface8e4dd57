package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/veilhq/veil/persistence"
)

// Scope is what a key may do. Each scope includes the ones before it:
// read < chat < full < admin. Which routes need which scope is one table,
// httpapi's routeScopes (docs/api.md, "Key scopes").
type Scope string

const (
	// ScopeRead reads: GET requests only.
	ScopeRead Scope = "read"
	// ScopeChat also talks to agents (chat, MCP, conversations,
	// notifications) but changes no policy, webhook, schedule or key.
	ScopeChat Scope = "chat"
	// ScopeFull is everything on the account's agents but its keys and
	// audit trail.
	ScopeFull Scope = "full"
	// ScopeAdmin also manages the account's keys and reads its audit
	// trail; an admin key of the bootstrap account manages every account.
	ScopeAdmin Scope = "admin"
)

// Scopes lists the scopes from the least to the most.
func Scopes() []Scope { return []Scope{ScopeRead, ScopeChat, ScopeFull, ScopeAdmin} }

func (s Scope) rank() int {
	for i, x := range Scopes() {
		if x == s {
			return i + 1
		}
	}
	return 0
}

// Allows reports whether a key of scope s may do what need requires.
func (s Scope) Allows(need Scope) bool { return s.rank() > 0 && s.rank() >= need.rank() }

// ParseScope reads a scope's name; "read-only" is read.
func ParseScope(v string) (Scope, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "read-only" || v == "readonly" {
		v = string(ScopeRead)
	}
	if s := Scope(v); s.rank() > 0 {
		return s, nil
	}
	return "", fmt.Errorf("%w: scope %q: want one of read, chat, full, admin", ErrInvalid, v)
}

// EffectiveScope is the scope a key works with. A key stored before scopes
// existed has none: the bootstrap account's are admin (that account ran
// the server), every other account's full (what they could do before).
func EffectiveScope(acc Account, k Key) Scope {
	if k.Scope != "" {
		return k.Scope
	}
	if acc.Name == BootstrapAccount {
		return ScopeAdmin
	}
	return ScopeFull
}

// IsOperator reports a key that manages every account's keys: an admin
// key of the bootstrap account.
func IsOperator(acc Account, k Key) bool {
	return acc.Name == BootstrapAccount && EffectiveScope(acc, k) == ScopeAdmin
}

// idLen is how many hex digits of the hash make a key's id: 64 bits, so
// two keys of one store never share one in practice (Issue checks).
const idLen = 16

// IDOf is the id of the key stored under hash.
func IDOf(hash string) string {
	if len(hash) < idLen {
		return "key_" + hash
	}
	return "key_" + hash[:idLen]
}

var idRE = regexp.MustCompile(`^key_[0-9a-f]{16}$`)

// ValidID reports an id in the form IDOf makes.
func ValidID(id string) bool { return idRE.MatchString(id) }

var keyNameRE = regexp.MustCompile(`^[\pL\pN ._:/@+-]{1,64}$`)

// MaxKeysPerAccount bounds one account's live keys.
const MaxKeysPerAccount = 100

// Options are a new key's settings.
type Options struct {
	Name  string
	Scope Scope
	// ExpiresAt, when set, must be in the future.
	ExpiresAt *time.Time
	// RateLimit, when set, is the key's own limit.
	RateLimit *Limit
	Test      bool
}

// Check validates the settings at time now.
func (o Options) Check(now time.Time) error {
	if o.Name != "" && !keyNameRE.MatchString(o.Name) {
		return fmt.Errorf("%w: name must be 1-64 letters, digits, spaces or ._:/@+-", ErrInvalid)
	}
	if o.Scope.rank() == 0 {
		return fmt.Errorf("%w: scope %q: want one of read, chat, full, admin", ErrInvalid, o.Scope)
	}
	if o.ExpiresAt != nil && !o.ExpiresAt.After(now) {
		return fmt.Errorf("%w: expiresAt %s is not in the future", ErrInvalid, o.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if l := o.RateLimit; l != nil && (l.PerSecond <= 0 || l.Burst < 1 || l.PerSecond > 1e6 || l.Burst > 1e6) {
		return fmt.Errorf("%w: rateLimit needs perSecond > 0 and burst >= 1 (each at most 1000000)", ErrInvalid)
	}
	return nil
}

// Issue makes a key with these settings for the account and returns its
// text (never stored, shown once) and its record.
func Issue(ctx context.Context, st persistence.Store, acc Account, o Options, now time.Time) (string, Key, error) {
	if err := o.Check(now); err != nil {
		return "", Key{}, err
	}
	secret, k, op, err := newKey(acc, o, now)
	if err != nil {
		return "", Key{}, err
	}
	if _, err := st.Apply(ctx, op); err != nil {
		return "", Key{}, fmt.Errorf("apikey: store key: %w", err)
	}
	return secret, k, nil
}

func newKey(acc Account, o Options, now time.Time) (string, Key, persistence.Op, error) {
	secret, err := Generate(o.Test)
	if err != nil {
		return "", Key{}, persistence.Op{}, err
	}
	h := Hash(secret)
	k := Key{ID: IDOf(h), AccountID: acc.ID, Test: o.Test, CreatedAt: now.UTC(), Name: o.Name, Scope: o.Scope, ExpiresAt: utc(o.ExpiresAt), RateLimit: o.RateLimit}
	raw, err := json.Marshal(k)
	if err != nil {
		return "", Key{}, persistence.Op{}, err
	}
	return secret, k, persistence.Put(TableKeys, h, raw, persistence.Absent()), nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func decodeKey(rec persistence.Record) (Key, error) {
	var k Key
	if err := json.Unmarshal(rec.Value, &k); err != nil {
		return Key{}, fmt.Errorf("apikey: decode key %s: %w", IDOf(rec.Key), err)
	}
	k.ID = IDOf(rec.Key)
	return k, nil
}

// List returns the account's keys (every account's when accountID is
// ""), revoked ones included, newest first. Keys are few: the table is
// read whole rather than indexed by account.
func List(ctx context.Context, st persistence.Store, accountID string) ([]Key, error) {
	recs, err := st.List(ctx, TableKeys, persistence.Query{})
	if err != nil {
		return nil, fmt.Errorf("apikey: list keys: %w", err)
	}
	out := []Key{}
	for _, rec := range recs {
		k, err := decodeKey(rec)
		if err != nil {
			return nil, err
		}
		if accountID == "" || k.AccountID == accountID {
			out = append(out, k)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// find reads the key with this id; a key of another account (unless
// accountID is "") is ErrNotFound, as is an id in no known form.
func find(ctx context.Context, st persistence.Store, accountID, id string) (persistence.Record, Key, error) {
	if !ValidID(id) {
		return persistence.Record{}, Key{}, ErrNotFound
	}
	recs, err := st.List(ctx, TableKeys, persistence.Query{Prefix: strings.TrimPrefix(id, "key_"), Limit: 2})
	if err != nil {
		return persistence.Record{}, Key{}, fmt.Errorf("apikey: find key: %w", err)
	}
	if len(recs) != 1 {
		return persistence.Record{}, Key{}, ErrNotFound
	}
	k, err := decodeKey(recs[0])
	if err != nil {
		return persistence.Record{}, Key{}, err
	}
	if accountID != "" && k.AccountID != accountID {
		return persistence.Record{}, Key{}, ErrNotFound
	}
	return recs[0], k, nil
}

// Get returns one key of the account ("" for any account's).
func Get(ctx context.Context, st persistence.Store, accountID, id string) (Key, error) {
	_, k, err := find(ctx, st, accountID, id)
	return k, err
}

// Revoke revokes the key now. Revoking a revoked key changes nothing and
// answers it as it is. The record stays (RevokedAt set).
func Revoke(ctx context.Context, st persistence.Store, accountID, id string, now time.Time) (Key, error) {
	for {
		rec, k, err := find(ctx, st, accountID, id)
		if err != nil || k.RevokedAt != nil {
			return k, err
		}
		t := now.UTC()
		k.RevokedAt = &t
		raw, err := json.Marshal(k)
		if err != nil {
			return Key{}, err
		}
		_, err = st.Apply(ctx, persistence.Put(TableKeys, rec.Key, raw, persistence.AtVersion(rec.Version)), bumpEpoch())
		if errors.Is(err, persistence.ErrConflict) {
			continue
		}
		if err != nil {
			return Key{}, fmt.Errorf("apikey: revoke key: %w", err)
		}
		return k, nil
	}
}

// Rotate issues a key with the old one's settings (name, scope, expiry,
// limit) and revokes the old one, in one atomic write: there is never a
// moment with both or neither. A revoked key cannot be rotated.
func Rotate(ctx context.Context, st persistence.Store, accountID, id string, now time.Time) (string, Key, Key, error) {
	for {
		rec, old, err := find(ctx, st, accountID, id)
		if err != nil {
			return "", Key{}, Key{}, err
		}
		if old.RevokedAt != nil {
			return "", Key{}, Key{}, fmt.Errorf("%w: key %s is revoked; create a new one", ErrInvalid, id)
		}
		acc := Account{ID: old.AccountID}
		o := Options{Name: old.Name, Scope: old.Scope, ExpiresAt: old.ExpiresAt, RateLimit: old.RateLimit, Test: old.Test}
		if o.Scope == "" {
			a, err := getAccount(ctx, st, old.AccountID)
			if err != nil {
				return "", Key{}, Key{}, err
			}
			o.Scope = EffectiveScope(a, old)
		}
		if o.ExpiresAt != nil && !o.ExpiresAt.After(now) {
			return "", Key{}, Key{}, fmt.Errorf("%w: key %s has expired; create a new one", ErrInvalid, id)
		}
		secret, k, put, err := newKey(acc, o, now)
		if err != nil {
			return "", Key{}, Key{}, err
		}
		t := now.UTC()
		old.RevokedAt, old.RotatedTo = &t, k.ID
		raw, err := json.Marshal(old)
		if err != nil {
			return "", Key{}, Key{}, err
		}
		_, err = st.Apply(ctx, put, persistence.Put(TableKeys, rec.Key, raw, persistence.AtVersion(rec.Version)), bumpEpoch())
		if errors.Is(err, persistence.ErrConflict) {
			continue
		}
		if err != nil {
			return "", Key{}, Key{}, fmt.Errorf("apikey: rotate key: %w", err)
		}
		return secret, k, old, nil
	}
}

// AccountByName returns the account with this name.
func AccountByName(ctx context.Context, st persistence.Store, name string) (Account, error) {
	rec, err := st.Get(ctx, TableAccountNames, name)
	if errors.Is(err, persistence.ErrNotFound) {
		return Account{}, fmt.Errorf("%w: no account %q", ErrNotFound, name)
	}
	if err != nil {
		return Account{}, fmt.Errorf("apikey: look up account %q: %w", name, err)
	}
	return getAccount(ctx, st, string(rec.Value))
}

// AccountByID returns the account with this id.
func AccountByID(ctx context.Context, st persistence.Store, id string) (Account, error) {
	return getAccount(ctx, st, id)
}

// ListAccounts returns every account, by id.
func ListAccounts(ctx context.Context, st persistence.Store) ([]Account, error) {
	recs, err := st.List(ctx, TableAccounts, persistence.Query{})
	if err != nil {
		return nil, fmt.Errorf("apikey: list accounts: %w", err)
	}
	out := make([]Account, 0, len(recs))
	for _, rec := range recs {
		var a Account
		if err := json.Unmarshal(rec.Value, &a); err != nil {
			return nil, fmt.Errorf("apikey: decode account %s: %w", rec.Key, err)
		}
		out = append(out, a)
	}
	return out, nil
}
