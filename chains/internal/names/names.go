// Package names is what the Stellar and Solana connectors' name
// registries share: both read the registrations in a registry account's
// history into an index in the store, name → (owner, the 64 raw bytes of
// an ed25519 meta-address in hex), and resolve a name from it the same way.
// Where a registration stands in a transaction stays in each connector.
package names

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Record is the index's entry of a name.
type Record struct {
	Owner  string `json:"owner"`
	Meta   string `json:"meta"` // hex of the 64 raw bytes
	TxHash string `json:"txHash"`
	PT     string `json:"pt,omitempty"` // Stellar: the transaction's paging token
}

// Entry is one transaction of the registry account's history: Cursor
// resumes after it; Name is "" when it registers nothing.
type Entry struct {
	Cursor string
	Name   string
	Record Record
}

// cursorKey is where the Meta table keeps the registry cursor.
const cursorKey = "registry_cursor"

// Index is a connector's name index: table Names maps a name to its
// Record, table Meta holds the cursor of the registry's history read so
// far.
type Index struct {
	Store       persistence.Store
	Names, Meta string
	Chain       chains.ID
	Scheme      edstealth.Chain // the chain's stealth scheme
	// Page reads the registry's history after cursor ("" = from the
	// start), oldest first, with every registration in it verified (only
	// what the owner signed counts); more is true when the page was full.
	Page func(ctx context.Context, cursor string) (entries []Entry, more bool, err error)

	mu sync.Mutex
}

// Sync reads the registry's history since the stored cursor into the
// index: the first registration of a name owns it; a later registration by
// the same owner replaces the meta-address. A conflict on the cursor means
// another member synced meanwhile.
func (x *Index) Sync(ctx context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	cursor := ""
	var cver uint64
	if r, err := x.Store.Get(ctx, x.Meta, cursorKey); err == nil {
		cursor, cver = string(r.Value), r.Version
	} else if !errors.Is(err, persistence.ErrNotFound) {
		return err
	}
	for {
		entries, more, err := x.Page(ctx, cursor)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
		staged := map[string]Record{}
		for _, e := range entries {
			cursor = e.Cursor
			if e.Name == "" {
				continue
			}
			cur, found := staged[e.Name]
			if !found {
				if r, err := x.Store.Get(ctx, x.Names, e.Name); err == nil {
					_ = json.Unmarshal(r.Value, &cur)
					found = true
				}
			}
			if found && cur.Owner != e.Record.Owner {
				continue // taken
			}
			staged[e.Name] = e.Record
		}
		var ops []persistence.Op
		for name, rec := range staged {
			val, _ := json.Marshal(rec)
			ops = append(ops, persistence.Put(x.Names, name, val, persistence.Any()))
		}
		exp := persistence.Absent()
		if cver > 0 {
			exp = persistence.AtVersion(cver)
		}
		ops = append(ops, persistence.Put(x.Meta, cursorKey, []byte(cursor), exp))
		vs, err := x.Store.Apply(ctx, ops...)
		if errors.Is(err, persistence.ErrConflict) {
			return nil
		}
		if err != nil {
			return err
		}
		cver = vs[len(vs)-1]
		if !more {
			return nil
		}
	}
}

// Lookup syncs the index and reads the entry of a parsed name.
func (x *Index) Lookup(ctx context.Context, n string) (Record, bool, error) {
	if err := x.Sync(ctx); err != nil {
		return Record{}, false, err
	}
	r, _, err := jsonrec.Load[Record](ctx, x.Store, x.Names, n)
	if err != nil || r == nil {
		return Record{}, false, err
	}
	return *r, true, nil
}

// Check is the start of a registration of the parsed name n by owner with
// the meta-address keys metaHex: another owner's name is
// chains.ErrNameTaken; the same registration already in the index
// answers its transaction (txHash != "").
func (x *Index) Check(ctx context.Context, n, owner, metaHex string) (txHash string, err error) {
	cur, found, err := x.Lookup(ctx, n)
	if err != nil {
		return "", err
	}
	if found && cur.Owner != owner {
		return "", fmt.Errorf("%w: %s%s on %s", chains.ErrNameTaken, n, chains.NameSuffix, x.Chain)
	}
	if found && cur.Meta == metaHex {
		return cur.TxHash, nil
	}
	return "", nil
}

// Resolve is a connector's ResolveName from its index: the meta-address
// registered for name, or an error matching chains.ErrNotFound.
func (x *Index) Resolve(ctx context.Context, name string) (string, error) {
	return Resolve(ctx, x.Chain, name, func(ctx context.Context, n string) (string, bool, error) {
		rec, found, err := x.Lookup(ctx, n)
		if err != nil || !found {
			return "", false, err
		}
		raw, err := hex.DecodeString(rec.Meta)
		if err != nil || len(raw) != 64 {
			return "", false, fmt.Errorf("%s: name index entry of %s is corrupt", x.Chain, n)
		}
		return meta(raw, x.Scheme).String(), true, nil
	})
}

// Resolve is every connector's ResolveName: name is parsed and looked up
// (lookup answers the meta-address registered for the parsed name, and
// found = false when there is none); an unregistered name is an error
// matching chains.ErrNotFound.
func Resolve(ctx context.Context, chain chains.ID, name string, lookup func(ctx context.Context, n string) (meta string, found bool, err error)) (string, error) {
	n, err := chains.ParseName(name)
	if err != nil {
		return "", err
	}
	m, found, err := lookup(ctx, n)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w: %s%s on %s", chains.ErrNotFound, n, chains.NameSuffix, chain)
	}
	return m, nil
}

// Valid says whether a registration found on chain counts: name written
// as chains.ParseName leaves it, and raw the 64 bytes of a valid
// meta-address of scheme.
func Valid(name string, raw []byte, scheme edstealth.Chain) bool {
	n, err := chains.ParseName(name)
	return err == nil && n == name && len(raw) == 64 && meta(raw, scheme).Validate() == nil
}

func meta(raw []byte, scheme edstealth.Chain) edstealth.MetaAddress {
	m := edstealth.MetaAddress{Chain: scheme}
	copy(m.Spend[:], raw[:32])
	copy(m.View[:], raw[32:])
	return m
}
