package walletsig

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// TestIssuedAtWindowExtremes signs a create, an export, a policy, an
// approve and a deny message for each Issued At below (so that only the timestamp can decide) and
// checks the verdict. The server clock is `now` (2026-01-15T12:05:00Z).
// Far-future values once passed: now.Sub(year 9999) saturates at the
// minimum Duration and negating it overflows back to a negative number.
func TestIssuedAtWindowExtremes(t *testing.T) {
	const layoutNano = "2006-01-02T15:04:05.999999999Z"
	at := func(t time.Time) string { return t.UTC().Format(layoutNano) }
	cases := []struct {
		name   string
		issued string
		want   *Error // nil: accepted
	}{
		// The window, both bounds inclusive, to the nanosecond.
		{"server time", at(now), nil},
		{"exactly 10 min old", at(now.Add(-MaxAge)), nil},
		{"10 min and 1 ns old", at(now.Add(-MaxAge - time.Nanosecond)), ErrExpired},
		{"exactly 1 min ahead", at(now.Add(MaxSkew)), nil},
		{"1 min and 1 ns ahead", at(now.Add(MaxSkew + time.Nanosecond)), ErrNotYetValid},

		// Far away in either direction: no Duration arithmetic may wrap.
		{"year 1", "0001-01-01T00:00:00Z", ErrExpired},
		{"year 0", "0000-01-01T00:00:00Z", ErrExpired},
		{"year 9999 last second", "9999-12-31T23:59:59Z", ErrNotYetValid},
		{"year 9999 last nanosecond", "9999-12-31T23:59:59.999999999Z", ErrNotYetValid},
		{"300 years ahead", at(now.AddDate(300, 0, 0)), ErrNotYetValid},
		{"300 years ago", at(now.AddDate(-300, 0, 0)), ErrExpired},
		{"292 years ahead (Duration's range)", at(now.AddDate(292, 3, 0)), ErrNotYetValid},
		{"292 years ago (Duration's range)", at(now.AddDate(-292, -3, 0)), ErrExpired},
		{"one day ahead", at(now.Add(24 * time.Hour)), ErrNotYetValid},
		{"one day ago", at(now.Add(-24 * time.Hour)), ErrExpired},

		// Fractional seconds: 1 to 9 digits.
		{"1 fractional digit", "2026-01-15T12:05:00.5Z", nil},
		{"3 fractional digits (toISOString)", "2026-01-15T12:04:59.123Z", nil},
		{"9 fractional digits", "2026-01-15T12:05:59.999999999Z", nil},
		{"10 fractional digits", "2026-01-15T12:05:00.0000000001Z", ErrBadMessage},
		{"dot without digits", "2026-01-15T12:05:00.Z", ErrBadMessage},
		{"comma as decimal mark", "2026-01-15T12:05:00,5Z", ErrBadMessage},

		// Leap seconds do not parse (Go's time has none): a 400, never a
		// pass, whether inside the window's day or far ahead.
		{"leap second today", "2026-01-15T23:59:60Z", ErrBadMessage},
		{"leap second 2016", "2016-12-31T23:59:60Z", ErrBadMessage},
		{"leap second 9999", "9999-12-31T23:59:60Z", ErrBadMessage},

		// Time zones: the format is RFC 3339 UTC with "Z"; an offset, even
		// +00:00 naming the same instant, is refused.
		{"+00:00 offset", "2026-01-15T12:05:00+00:00", ErrBadMessage},
		{"-00:00 offset", "2026-01-15T12:05:00-00:00", ErrBadMessage},
		{"+01:00 offset, same instant", "2026-01-15T13:05:00+01:00", ErrBadMessage},
		{"-23:59 offset", "2026-01-14T12:06:00-23:59", ErrBadMessage},
		{"lowercase z", "2026-01-15T12:05:00z", ErrBadMessage},
		{"lowercase t", "2026-01-15t12:05:00Z", ErrBadMessage},
		{"zone name", "2026-01-15T12:05:00 UTC", ErrBadMessage},

		// Garbage.
		{"empty", "", ErrBadMessage},
		{"word", "now", ErrBadMessage},
		{"date only", "2026-01-15", ErrBadMessage},
		{"space instead of T", "2026-01-15 12:05:00Z", ErrBadMessage},
		{"leading space", " 2026-01-15T12:05:00Z", ErrBadMessage},
		{"unix seconds", "1768478700", ErrBadMessage},
		{"five-digit year", "20260-01-15T12:05:00Z", ErrBadMessage},
		{"signed year", "+2026-01-15T12:05:00Z", ErrBadMessage},
		{"month 13", "2026-13-15T12:05:00Z", ErrBadMessage},
		{"February 30", "2026-02-30T12:05:00Z", ErrBadMessage},
		{"hour 24", "2026-01-15T24:00:00Z", ErrBadMessage},
		{"minute 60", "2026-01-15T12:60:00Z", ErrBadMessage},
		{"full-width digits", "２０２６-01-15T12:05:00Z", ErrBadMessage},
		{"no seconds", "2026-01-15T12:05Z", ErrBadMessage},
	}
	const hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	for _, tc := range cases {
		line := "\nWallet: " + evmAddr + "\nIssued At: " + tc.issued
		create := "Veil wants you to create agent alice.veil on base." + line
		export := "Veil wants you to export the private key of agent " + agentID + "." + line
		policy := "Veil wants you to set spending policy " + hash + " for agent " + agentID + "." + line
		const approvalID = "7c0e9d2a-1b3c-4d5e-8f90-a1b2c3d4e5f6"
		withIssued := func(built string) string {
			return strings.SplitN(built, "\nIssued At: ", 2)[0] + "\nIssued At: " + tc.issued
		}
		approve := withIssued(ApprovalMessage(approvalID, agentID, evmAddr, false, now))
		deny := withIssued(ApprovalMessage(approvalID, agentID, evmAddr, true, now))
		verify := map[Action]func() (Proof, error){
			ActionApprove: func() (Proof, error) {
				return VerifyApproval(ApprovalRequest{AgentID: agentID, ApprovalID: approvalID, Wallet: evmAddr, Message: approve, Signature: SignEVM(evmKey, approve)}, now)
			},
			ActionDeny: func() (Proof, error) {
				return VerifyApproval(ApprovalRequest{AgentID: agentID, ApprovalID: approvalID, Wallet: evmAddr, Deny: true, Message: deny, Signature: SignEVM(evmKey, deny)}, now)
			},
			ActionCreate: func() (Proof, error) {
				return VerifyCreate(CreateRequest{Name: "alice", Chain: "base", Wallet: evmAddr, Message: create, Signature: SignEVM(evmKey, create)}, now)
			},
			ActionExport: func() (Proof, error) {
				return VerifyExport(ExportRequest{AgentID: agentID, Wallet: evmAddr, Message: export, Signature: SignEVM(evmKey, export)}, now)
			},
			ActionPolicy: func() (Proof, error) {
				return VerifyPolicy(PolicyRequest{AgentID: agentID, Wallet: evmAddr, PolicyHash: hash, Message: policy, Signature: SignEVM(evmKey, policy)}, now)
			},
		}
		for action, f := range verify {
			t.Run(string(action)+"/"+tc.name, func(t *testing.T) {
				p, err := f()
				if tc.want == nil {
					if err != nil {
						t.Fatalf("Issued At %q refused: %v", tc.issued, err)
					}
					if p.IssuedAt.IsZero() || !p.KeepUntil.Equal(p.IssuedAt.Add(MaxAge)) {
						t.Fatalf("proof times: issued %v keep until %v", p.IssuedAt, p.KeepUntil)
					}
					return
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("Issued At %q: got %v, want %v", tc.issued, err, tc.want)
				}
			})
		}
	}
}

// TestCheckIssuedAtAgainstExactArithmetic compares the window with the
// same rule computed on unbounded integers (nanoseconds since the epoch),
// over instants spread across time.Time's whole range and around the
// bounds.
func TestCheckIssuedAtAgainstExactArithmetic(t *testing.T) {
	nanos := func(x time.Time) *big.Int {
		n := big.NewInt(x.Unix())
		n.Mul(n, big.NewInt(1e9))
		return n.Add(n, big.NewInt(int64(x.Nanosecond())))
	}
	servers := []time.Time{now, time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2262, 4, 11, 23, 47, 16, 0, time.UTC)}
	var whens []time.Time
	for _, y := range []int{-10000, 0, 1, 1677, 1678, 1969, 1970, 2026, 2262, 2263, 9999, 10000, 1 << 30} {
		whens = append(whens, time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC))
	}
	whens = append(whens, time.Unix(1<<62, 0), time.Unix(-1<<62, 0), time.Time{})
	for _, s := range servers {
		for _, d := range []time.Duration{0, 1, -1, MaxSkew, MaxSkew + 1, -MaxAge, -MaxAge - 1, time.Hour, -time.Hour} {
			whens = append(whens, s.Add(d))
		}
	}
	lo, hi := big.NewInt(int64(-MaxAge)), big.NewInt(int64(MaxSkew))
	for _, s := range servers {
		for _, w := range whens {
			diff := new(big.Int).Sub(nanos(w), nanos(s))
			var want *Error
			switch {
			case diff.Cmp(lo) < 0:
				want = ErrExpired
			case diff.Cmp(hi) > 0:
				want = ErrNotYetValid
			}
			err := CheckIssuedAt("t", w, s)
			if want == nil && err != nil || want != nil && !errors.Is(err, want) {
				t.Errorf("server %v, Issued At %v: got %v, want %v", s, w, err, want)
			}
		}
	}
}
