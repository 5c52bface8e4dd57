package walletsig

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

func TestVerifyPolicy(t *testing.T) {
	key, _ := crypto.GenerateKey()
	wallet := EVMAddress(&key.PublicKey)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	const agent, hash = "4f3c1b8e-0000-4000-8000-000000000001", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	msg := PolicyMessage(hash, agent, wallet, now)
	good := PolicyRequest{AgentID: agent, Wallet: strings.ToLower(wallet), PolicyHash: hash, Signature: SignEVM(key, msg), Message: msg}
	p, err := VerifyPolicy(good, now.Add(time.Minute))
	if err != nil || p.Action != ActionPolicy || p.ReplayKey == "" {
		t.Fatalf("valid policy signature: %+v %v", p, err)
	}
	other, _ := crypto.GenerateKey()
	stale := PolicyMessage(hash, agent, wallet, now.Add(-11*time.Minute))
	cases := map[string]struct {
		req  PolicyRequest
		kind error
	}{
		"another policy": {func() PolicyRequest { r := good; r.PolicyHash = strings.Repeat("0", 64); return r }(), ErrBadMessage},
		"another agent":  {func() PolicyRequest { r := good; r.AgentID = "x"; return r }(), ErrBadMessage},
		"not the owner":  {func() PolicyRequest { r := good; r.Signature = SignEVM(other, msg); return r }(), ErrSignatureMismatch},
		"export message": {func() PolicyRequest {
			r := good
			r.Message = ExportMessage(agent, wallet, now)
			r.Signature = SignEVM(key, r.Message)
			return r
		}(), ErrBadMessage},
		"expired":           {func() PolicyRequest { r := good; r.Message = stale; r.Signature = SignEVM(key, stale); return r }(), ErrExpired},
		"missing signature": {func() PolicyRequest { r := good; r.Signature = ""; return r }(), ErrMissingField},
	}
	for name, tc := range cases {
		if _, err := VerifyPolicy(tc.req, now.Add(time.Minute)); !errors.Is(err, tc.kind) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.kind)
		}
	}
	// The message round-trips through the strict parser.
	m, err := parseMessage(msg)
	if err != nil || m.render() != msg {
		t.Fatalf("parse/render: %v", err)
	}
}
