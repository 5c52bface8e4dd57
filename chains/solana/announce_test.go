//go:build !nodevnet

package solana_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/internal/fakeclock"
)

// TestAnnouncementsInIsWhatScanReads: AnnouncementsIn returns, for each
// payment, exactly the announcement Scan reads (every field, Position
// included, also for two payments in one slot); nothing for a confirmed
// transaction that announced nothing; ErrNotFound for an unknown one.
func TestAnnouncementsInIsWhatScanReads(t *testing.T) {
	// The devnet's clock, moved a slot at a time by the test: the
	// transactions sent between two moves share a slot.
	clock := fakeclock.New(time.Now())
	e := newEnvAt(t, clock.Now)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", true)
	reg, err := e.conn.RegisterName(bg, bob.ref, bob.keys.Address, "bob", bob.keys.MetaAddress)
	if err != nil {
		t.Fatal(err)
	}

	clock.Advance(solanadev.SlotDuration)
	var sent []string
	for i, p := range []struct{ asset, amount string }{{"SOL", "1.5"}, {"USDC", "12.5"}, {"SOL", "0.25"}} {
		if i == 2 {
			clock.Advance(solanadev.SlotDuration)
		}
		r, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, p.asset), Amount: amt(p.amount), To: bob.keys.MetaAddress, IdempotencyKey: "pay-" + p.amount})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, r.TxHash)
	}
	anns, _, err := e.conn.Scan(bg, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(anns) != len(sent) {
		t.Fatalf("scan read %d announcements, sent %d: %+v", len(anns), len(sent), anns)
	}
	for i, a := range anns {
		if a.TxHash != sent[i] {
			t.Fatalf("scan's announcement %d is of %s, sent %s", i, a.TxHash, sent[i])
		}
		in, err := e.conn.AnnouncementsIn(bg, a.TxHash)
		if err != nil || len(in) != 1 || !reflect.DeepEqual(in[0], a) {
			t.Fatalf("AnnouncementsIn(%s) = %+v %v, scanned %+v", a.TxHash, in, err, a)
		}
	}
	// The first two share a slot: Position tells them apart as Scan does.
	if anns[0].Position>>20 != anns[1].Position>>20 || anns[0].Position == anns[1].Position {
		t.Fatalf("positions of one slot's payments: %d, %d", anns[0].Position, anns[1].Position)
	}
	if in, err := e.conn.AnnouncementsIn(bg, reg.TxHash); err != nil || len(in) != 0 {
		t.Fatalf("AnnouncementsIn(a name registration) = %+v %v", in, err)
	}
	if _, err := e.conn.AnnouncementsIn(bg, "1111111111111111111111111111111111111111111111111111111111111111"); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("AnnouncementsIn(unknown) = %v", err)
	}
	if _, err := e.conn.AnnouncementsIn(bg, "not a signature"); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("AnnouncementsIn(garbage) = %v", err)
	}
}
