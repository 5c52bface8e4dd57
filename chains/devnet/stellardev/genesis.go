//go:build !nodevnet

package stellardev

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"

	"github.com/veilhq/veil/persistence"
)

// The devnet's genesis: a random hash drawn when its ledger is created and
// kept with it, served as ledger 1's hash (GET /ledgers/1), as a real
// network's first ledger has one. A fresh devnet (its state deleted) has
// another, as a reset standalone network does: veild's genesis check
// (actors/chain) tells them apart although the passphrase is the same.

// loadGenesis reads the ledger's genesis, drawing and storing one for a
// ledger created before the devnet kept it.
func (d *Devnet) loadGenesis(ctx context.Context) error {
	rec, err := d.store.Get(ctx, tableMeta, "genesis")
	if err == nil {
		d.genesis = string(rec.Value)
		return nil
	}
	if !errors.Is(err, persistence.ErrNotFound) {
		return fmt.Errorf("stellardev: genesis: %w", err)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	g := hex.EncodeToString(b[:])
	if _, err := d.store.Apply(ctx, persistence.Put(tableMeta, "genesis", []byte(g), persistence.Absent())); err != nil {
		return fmt.Errorf("stellardev: genesis: %w", err)
	}
	d.genesis = g
	return nil
}

// ledgerHash is ledger seq's hash: the genesis for ledger 1, then one
// derived from it (the devnet keeps no ledger headers).
func (d *Devnet) ledgerHash(seq uint32) string {
	if seq == 1 {
		return d.genesis
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], seq)
	h := sha256.Sum256(append([]byte(d.genesis), b[:]...))
	return hex.EncodeToString(h[:])
}

// getLedger is GET /ledgers/{seq}: the ledger's sequence and hash (the
// fields the connector reads); 404 past the latest ledger.
func (d *Devnet) getLedger(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 32)
	if err != nil || seq == 0 {
		badRequest(w, "invalid ledger sequence")
		return
	}
	if uint32(seq) > d.Ledger() {
		notFound(w)
		return
	}
	var l hProtocol.Ledger
	l.ID, l.PT = d.ledgerHash(uint32(seq)), strconv.FormatUint(seq<<32, 10)
	l.Hash, l.Sequence = l.ID, int32(seq)
	if seq > 1 {
		l.PrevHash = d.ledgerHash(uint32(seq) - 1)
	}
	writeJSON(w, 200, l)
}
