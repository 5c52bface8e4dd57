// Package apikey issues and checks the bearer keys of Veil accounts. A key is
// shown once, when it is created; the store keeps only its SHA-256, so a
// leaked data file does not leak working keys.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/persistence"
)

// Tables this package owns.
const (
	TableAccounts     = "accounts"      // account id → Account
	TableAccountNames = "account_names" // account name → account id
	TableKeys         = "apikeys"       // hex sha256(key) → Key
)

const (
	// PrefixLive starts keys of production accounts.
	PrefixLive = "veil_live_"
	// PrefixTest starts keys that only reach test networks.
	PrefixTest = "veil_test_"
	secretLen  = 43 // base64url (no padding) of 32 bytes
)

// Errors of this package. Match them with errors.Is.
var (
	ErrMalformed = errors.New("apikey: malformed key")
	ErrUnknown   = errors.New("apikey: unknown key")
	ErrBadName   = errors.New("apikey: account name must be 1-64 characters of a-z, 0-9, '-', '_' or '.'")
	// ErrRevoked and ErrExpired come with the key and its account, so
	// that the refusal can be audited under them.
	ErrRevoked  = errors.New("apikey: key revoked")
	ErrExpired  = errors.New("apikey: key expired")
	ErrNotFound = errors.New("apikey: no such key")
	ErrInvalid  = errors.New("apikey: invalid key settings")
)

var accountNameRE = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)

// Account owns agents; every resource is scoped to one.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	// RateLimit overrides the server's per-key limit for this account's
	// keys; nil means the server default.
	RateLimit *Limit `json:"rateLimit,omitempty"`
}

// Limit is a token bucket: Burst requests at once, refilled at PerSecond.
type Limit struct {
	PerSecond float64 `json:"perSecond"`
	Burst     int     `json:"burst"`
}

// Key is the stored half of an API key. Keys made before scopes existed
// have no Name, Scope or ID in their record: EffectiveScope and the ID the
// readers fill in (IDOf) give them theirs.
type Key struct {
	// ID names the key in the API and the audit trail; it is derived from
	// the hash (IDOf), so a key can be found by it without an index.
	ID        string    `json:"id,omitempty"`
	AccountID string    `json:"accountId"`
	Test      bool      `json:"test"`
	CreatedAt time.Time `json:"createdAt"`
	Name      string    `json:"name,omitempty"`
	Scope     Scope     `json:"scope,omitempty"`
	// ExpiresAt, when set, is when the key stops working.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// RateLimit overrides the account's (and the server's) per-key limit.
	RateLimit *Limit `json:"rateLimit,omitempty"`
	// RevokedAt is when the key was revoked; the record stays, so that the
	// key's later attempts are told apart from unknown keys and audited.
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	// RotatedTo is the id of the key that replaced this one (Rotate).
	RotatedTo string `json:"rotatedTo,omitempty"`
}

// Hash is the store's name for a key: hex SHA-256 of the whole key text.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Validate checks a key's shape without touching the store.
func Validate(key string) error {
	var rest string
	switch {
	case strings.HasPrefix(key, PrefixLive):
		rest = key[len(PrefixLive):]
	case strings.HasPrefix(key, PrefixTest):
		rest = key[len(PrefixTest):]
	default:
		return fmt.Errorf("%w: expected %s followed by 43 base64url characters", ErrMalformed, PrefixLive)
	}
	if len(rest) != secretLen {
		return fmt.Errorf("%w: expected 43 characters after the prefix, got %d", ErrMalformed, len(rest))
	}
	if _, err := base64.RawURLEncoding.DecodeString(rest); err != nil {
		return fmt.Errorf("%w: secret is not base64url", ErrMalformed)
	}
	return nil
}

// Generate makes a new key text from 32 random bytes.
func Generate(test bool) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("apikey: read random: %w", err)
	}
	prefix := PrefixLive
	if test {
		prefix = PrefixTest
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// EnsureAccount returns the account with this name, creating it if needed.
// Two concurrent calls for one name agree on one account.
func EnsureAccount(ctx context.Context, st persistence.Store, name string, now time.Time) (Account, error) {
	if !accountNameRE.MatchString(name) {
		return Account{}, ErrBadName
	}
	for {
		rec, err := st.Get(ctx, TableAccountNames, name)
		if err == nil {
			return getAccount(ctx, st, string(rec.Value))
		}
		if !errors.Is(err, persistence.ErrNotFound) {
			return Account{}, fmt.Errorf("apikey: look up account %q: %w", name, err)
		}
		acc := Account{ID: uuid.NewString(), Name: name, CreatedAt: now.UTC()}
		raw, err := json.Marshal(acc)
		if err != nil {
			return Account{}, err
		}
		_, err = st.Apply(ctx,
			persistence.Put(TableAccountNames, name, []byte(acc.ID), persistence.Absent()),
			persistence.Put(TableAccounts, acc.ID, raw, persistence.Absent()),
		)
		if errors.Is(err, persistence.ErrConflict) {
			continue // someone else created it; read theirs
		}
		if err != nil {
			return Account{}, fmt.Errorf("apikey: create account %q: %w", name, err)
		}
		return acc, nil
	}
}

func getAccount(ctx context.Context, st persistence.Store, id string) (Account, error) {
	acc, _, err := readAccount(ctx, st, id)
	return acc, err
}

// readAccount reads an account and the version it was read at.
func readAccount(ctx context.Context, st persistence.Store, id string) (Account, uint64, error) {
	rec, err := st.Get(ctx, TableAccounts, id)
	if err != nil {
		return Account{}, 0, fmt.Errorf("apikey: read account %s: %w", id, err)
	}
	var acc Account
	if err := json.Unmarshal(rec.Value, &acc); err != nil {
		return Account{}, 0, fmt.Errorf("apikey: decode account %s: %w", id, err)
	}
	return acc, rec.Version, nil
}

// Create issues a new key for the account and returns its text, which is
// never stored and cannot be shown again.
func Create(ctx context.Context, st persistence.Store, acc Account, test bool, now time.Time) (string, error) {
	key, _, err := Issue(ctx, st, acc, Options{Test: test, Scope: ScopeFull}, now)
	return key, err
}

// clock is what Lookup checks expiry against (tests set it).
var clock = time.Now

// Lookup returns the account a key belongs to and the key's record; a
// revoked or expired key answers ErrRevoked or ErrExpired with both. It
// reads the store every time; the server uses a Cache (cache.go), which
// keeps the same answers.
func Lookup(ctx context.Context, st persistence.Store, key string) (Account, Key, error) {
	if err := Validate(key); err != nil {
		return Account{}, Key{}, err
	}
	acc, k, err := read(ctx, st, Hash(key))
	if err != nil {
		return Account{}, Key{}, err
	}
	return check(acc, k)
}

// read reads the key stored under hash and its account.
func read(ctx context.Context, st persistence.Store, hash string) (Account, Key, error) {
	rec, err := st.Get(ctx, TableKeys, hash)
	if errors.Is(err, persistence.ErrNotFound) {
		return Account{}, Key{}, ErrUnknown
	}
	if err != nil {
		return Account{}, Key{}, fmt.Errorf("apikey: look up key: %w", err)
	}
	k, err := decodeKey(rec)
	if err != nil {
		return Account{}, Key{}, err
	}
	acc, err := getAccount(ctx, st, k.AccountID)
	if err != nil {
		return Account{}, Key{}, err
	}
	k.Scope = EffectiveScope(acc, k)
	return acc, k, nil
}

// check refuses a revoked or expired key. Revocation is read from the
// store (or a Cache whose epoch says nothing changed) on every request,
// so a key revoked on one cluster member is refused by all from the next
// request on (they share the PostgreSQL store).
func check(acc Account, k Key) (Account, Key, error) {
	switch {
	case k.RevokedAt != nil:
		return acc, k, ErrRevoked
	case k.ExpiresAt != nil && !clock().Before(*k.ExpiresAt):
		return acc, k, ErrExpired
	}
	return acc, k, nil
}

// AnyAccount reports whether the store holds at least one account; the
// first start of a server on an empty data directory bootstraps one.
func AnyAccount(ctx context.Context, st persistence.Store) (bool, error) {
	recs, err := st.List(ctx, TableAccounts, persistence.Query{Limit: 1})
	if err != nil {
		return false, fmt.Errorf("apikey: list accounts: %w", err)
	}
	return len(recs) > 0, nil
}

// BootstrapAccount is the name of the account the first start creates.
const BootstrapAccount = "default"

// Bootstrap creates the first account and its first key in one atomic
// write when the store has no account yet, and returns the key; it returns
// "" when an account already exists. Writing both at once means a crash can
// never leave an account whose only key was never shown.
func Bootstrap(ctx context.Context, st persistence.Store, now time.Time) (string, error) {
	any, err := AnyAccount(ctx, st)
	if err != nil || any {
		return "", err
	}
	key, err := Generate(false)
	if err != nil {
		return "", err
	}
	acc := Account{ID: uuid.NewString(), Name: BootstrapAccount, CreatedAt: now.UTC()}
	accRaw, err := json.Marshal(acc)
	if err != nil {
		return "", err
	}
	keyRaw, err := json.Marshal(Key{ID: IDOf(Hash(key)), AccountID: acc.ID, CreatedAt: now.UTC(), Name: "bootstrap", Scope: ScopeAdmin})
	if err != nil {
		return "", err
	}
	_, err = st.Apply(ctx,
		persistence.Put(TableAccountNames, acc.Name, []byte(acc.ID), persistence.Absent()),
		persistence.Put(TableAccounts, acc.ID, accRaw, persistence.Absent()),
		persistence.Put(TableKeys, Hash(key), keyRaw, persistence.Absent()),
	)
	if errors.Is(err, persistence.ErrConflict) {
		return "", nil // a concurrent start bootstrapped first
	}
	if err != nil {
		return "", fmt.Errorf("apikey: bootstrap account: %w", err)
	}
	return key, nil
}

// SetRateLimit sets (nil: clears) an account's per-key rate limit.
func SetRateLimit(ctx context.Context, st persistence.Store, accountID string, lim *Limit) (Account, error) {
	for {
		acc, version, err := readAccount(ctx, st, accountID)
		if err != nil {
			return Account{}, err
		}
		acc.RateLimit = lim
		raw, err := json.Marshal(acc)
		if err != nil {
			return Account{}, err
		}
		_, err = st.Apply(ctx, persistence.Put(TableAccounts, accountID, raw, persistence.AtVersion(version)), bumpEpoch())
		if errors.Is(err, persistence.ErrConflict) {
			continue
		}
		if err != nil {
			return Account{}, fmt.Errorf("apikey: save account %s: %w", accountID, err)
		}
		return acc, nil
	}
}
