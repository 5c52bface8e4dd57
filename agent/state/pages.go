package state

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Page sizes of the API's lists (docs/api.md, "Lists and paging").
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// Cursor is a position in a list ordered newest first: the creation time
// and id of the last item a page held. A page starts strictly after it, so
// paging by position (not by offset) neither repeats nor skips an item
// while new ones arrive: they sort before every cursor given out. The zero
// Cursor is the start of the list.
type Cursor struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
}

// IsZero says whether c is the start of the list.
func (c Cursor) IsZero() bool { return c.At.IsZero() && c.ID == "" }

// String is the opaque form the API gives out as nextCursor: base64url of
// "<unix nanoseconds>.<id>". Clients pass it back unchanged; its content is
// not part of the contract.
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixNano(), 10) + "." + c.ID))
}

// maxCursorLen bounds a cursor's text (an id of a few dozen bytes and a
// 19-digit time, base64url).
const maxCursorLen = 256

// ParseCursor reads a Cursor.String; "" is the start of the list. Anything
// else is ErrInvalid.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	bad := fmt.Errorf("%w: cursor is not one this API gave out: pass nextCursor from the previous page unchanged", ErrInvalid)
	if len(s) > maxCursorLen {
		return Cursor{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, bad
	}
	ns, id, ok := strings.Cut(string(raw), ".")
	if !ok || id == "" || strings.ContainsAny(id, "/\x00") {
		return Cursor{}, bad
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || n <= 0 {
		return Cursor{}, bad
	}
	return Cursor{At: time.Unix(0, n).UTC(), ID: id}, nil
}

// before says whether a sorts after b in a newest-first list (a is older,
// or as old with a smaller id).
func (c Cursor) before(b Cursor) bool {
	if !c.At.Equal(b.At) {
		return c.At.Before(b.At)
	}
	return c.ID < b.ID
}

// pageOf sorts items newest first by key, keeps those after the cursor and
// returns at most limit of them (DefaultPageLimit when limit ≤ 0), with
// the cursor of the next page ("" when this page is the last).
func pageOf[T any](items []T, key func(T) Cursor, after Cursor, limit int) ([]T, string) {
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	slices.SortStableFunc(items, func(a, b T) int {
		ka, kb := key(a), key(b)
		switch {
		case kb.before(ka):
			return -1
		case ka.before(kb):
			return 1
		}
		return 0
	})
	start := 0
	if !after.IsZero() {
		start = len(items)
		for i, it := range items {
			if key(it).before(after) {
				start = i
				break
			}
		}
	}
	items = items[start:]
	if len(items) <= limit {
		return items, ""
	}
	return items[:limit], key(items[limit-1]).String()
}
