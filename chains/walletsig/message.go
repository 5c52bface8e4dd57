package walletsig

import (
	"strings"
	"time"
)

// The fixed text of the signed messages (see docs/signatures.md).
const (
	createPrefix  = "Veil wants you to create agent "
	createInfix   = ".veil on "
	exportPrefix  = "Veil wants you to export the private key of agent "
	policyPrefix  = "Veil wants you to set spending policy "
	policyInfix   = " for agent "
	approvePrefix = "Veil wants you to approve payment "
	denyPrefix    = "Veil wants you to deny payment "
	approvalInfix = " of agent "
	walletPrefix  = "Wallet: "
	issuedPrefix  = "Issued At: "

	// MaxMessageLen bounds a signed message; longer ones are rejected
	// before any parsing.
	MaxMessageLen = 1024
)

// Action is what a signed message authorizes.
type Action string

// The actions.
const (
	ActionCreate  Action = "create"
	ActionExport  Action = "export"
	ActionPolicy  Action = "policy"
	ActionApprove Action = "approve"
	ActionDeny    Action = "deny"
)

// TimestampLayout is how CreateMessage and ExportMessage write Issued At:
// RFC 3339 in UTC with a "Z" and whole seconds. Parsing also accepts 1 to 9
// fractional digits (JavaScript's toISOString writes milliseconds).
const TimestampLayout = "2006-01-02T15:04:05Z"

// CreateMessage returns the message an owner signs to create agent name on
// chain (three lines, no trailing newline). issuedAt is written in UTC to the
// second.
func CreateMessage(name, chain, wallet string, issuedAt time.Time) string {
	return CreateMessageShort(name, chain, wallet) + "\n" + issuedPrefix + issuedAt.UTC().Format(TimestampLayout)
}

// CreateMessageShort returns the two-line create message without a
// timestamp: the message the server checks when a create request omits
// "message".
func CreateMessageShort(name, chain, wallet string) string {
	return createPrefix + name + createInfix + chain + ".\n" + walletPrefix + wallet
}

// ExportMessage returns the message an owner signs to export the private key
// of agent agentID (three lines, no trailing newline).
func ExportMessage(agentID, wallet string, issuedAt time.Time) string {
	return exportPrefix + agentID + ".\n" + walletPrefix + wallet + "\n" + issuedPrefix + issuedAt.UTC().Format(TimestampLayout)
}

// PolicyMessage returns the message an owner signs to set the spending
// policy of agent agentID to the policy whose canonical hash is policyHash
// (three lines, no trailing newline).
func PolicyMessage(policyHash, agentID, wallet string, issuedAt time.Time) string {
	return policyPrefix + policyHash + policyInfix + agentID + ".\n" + walletPrefix + wallet + "\n" + issuedPrefix + issuedAt.UTC().Format(TimestampLayout)
}

// ApprovalMessage returns the message an owner signs to approve (or, with
// deny, to deny) held payment approvalID of agent agentID (three lines, no
// trailing newline).
func ApprovalMessage(approvalID, agentID, wallet string, deny bool, issuedAt time.Time) string {
	prefix := approvePrefix
	if deny {
		prefix = denyPrefix
	}
	return prefix + approvalID + approvalInfix + agentID + ".\n" + walletPrefix + wallet + "\n" + issuedPrefix + issuedAt.UTC().Format(TimestampLayout)
}

// message is a parsed signed message.
type message struct {
	action   Action
	subject  string // create: the agent name; export: the agent id
	chain    string // create only
	policy   string // policy only: the policy's hash; approve/deny: the approval id
	wallet   string // as written
	issuedAt string // as written; "" when the message has no timestamp
	when     time.Time
}

// render writes m back in the canonical format; for every message that
// parseMessage accepts, render(parseMessage(s)) == s.
func (m message) render() string {
	var s string
	switch m.action {
	case ActionCreate:
		s = createPrefix + m.subject + createInfix + m.chain + ".\n"
	case ActionPolicy:
		s = policyPrefix + m.policy + policyInfix + m.subject + ".\n"
	case ActionApprove:
		s = approvePrefix + m.policy + approvalInfix + m.subject + ".\n"
	case ActionDeny:
		s = denyPrefix + m.policy + approvalInfix + m.subject + ".\n"
	default:
		s = exportPrefix + m.subject + ".\n"
	}
	s += walletPrefix + m.wallet
	if m.issuedAt != "" {
		s += "\n" + issuedPrefix + m.issuedAt
	}
	return s
}

// token reports whether s can stand for a name, agent id, chain or wallet in
// a message: 1 to 128 printable ASCII characters, no spaces.
func token(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// parseMessage parses s strictly: two or three lines joined by "\n", no "\r",
// no trailing newline, no extra spaces, every field a token. It checks the
// format only, not that the fields match a request.
func parseMessage(s string) (message, error) {
	var m message
	if len(s) > MaxMessageLen {
		return m, fail(ErrBadMessage, "signed message is too long: sign the exact message from docs/signatures.md")
	}
	if strings.Contains(s, "\r") {
		return m, fail(ErrBadMessage, "signed message contains a carriage return: join its lines with \"\\n\" only")
	}
	if strings.HasSuffix(s, "\n") {
		return m, fail(ErrBadMessage, "signed message ends with a newline: sign it without a trailing newline")
	}
	lines := strings.Split(s, "\n")
	if len(lines) < 2 || len(lines) > 3 {
		return m, fail(ErrBadMessage, "signed message must have 2 or 3 lines (action, Wallet, Issued At) joined by \"\\n\"; it has %d", len(lines))
	}

	l := lines[0]
	var err error
	switch {
	case strings.HasPrefix(l, createPrefix) && strings.HasSuffix(l, "."):
		m.action = ActionCreate
		if m.subject, m.chain, err = fields(l, createPrefix, createInfix, "Veil wants you to create agent <name>.veil on <chain>."); err != nil {
			return m, err
		}
	case strings.HasPrefix(l, policyPrefix) && strings.HasSuffix(l, "."):
		m.action = ActionPolicy
		if m.policy, m.subject, err = fields(l, policyPrefix, policyInfix, "Veil wants you to set spending policy <policyHash> for agent <agentId>."); err != nil {
			return m, err
		}
	case (strings.HasPrefix(l, approvePrefix) || strings.HasPrefix(l, denyPrefix)) && strings.HasSuffix(l, "."):
		prefix := approvePrefix
		m.action = ActionApprove
		if strings.HasPrefix(l, denyPrefix) {
			m.action, prefix = ActionDeny, denyPrefix
		}
		if m.policy, m.subject, err = fields(l, prefix, approvalInfix, "Veil wants you to "+string(m.action)+" payment <approvalId> of agent <agentId>."); err != nil {
			return m, err
		}
	case strings.HasPrefix(l, exportPrefix) && strings.HasSuffix(l, "."):
		m.action, m.subject = ActionExport, strings.TrimSuffix(strings.TrimPrefix(l, exportPrefix), ".")
		if !token(m.subject) {
			return m, fail(ErrBadMessage, "line 1 of the signed message must read \"Veil wants you to export the private key of agent <agentId>.\" with no extra spaces")
		}
	default:
		return m, fail(ErrBadMessage, "line 1 of the signed message must start \"Veil wants you to create agent \", \"Veil wants you to export the private key of agent \" or \"Veil wants you to set spending policy \", \"Veil wants you to approve payment \" or \"Veil wants you to deny payment \" and end with \".\"")
	}

	m.wallet = strings.TrimPrefix(lines[1], walletPrefix)
	if !strings.HasPrefix(lines[1], walletPrefix) || !token(m.wallet) {
		return m, fail(ErrBadMessage, "line 2 of the signed message must read \"Wallet: <wallet>\"")
	}

	if len(lines) == 3 {
		m.issuedAt = strings.TrimPrefix(lines[2], issuedPrefix)
		if !strings.HasPrefix(lines[2], issuedPrefix) {
			return m, fail(ErrBadMessage, "line 3 of the signed message must read \"Issued At: <timestamp>\"")
		}
		t, ok := parseTimestamp(m.issuedAt)
		if !ok {
			return m, fail(ErrBadMessage, "Issued At must be an RFC 3339 UTC timestamp like 2026-01-15T12:00:00Z (optional fractional seconds, \"Z\" suffix)")
		}
		m.when = t
	}
	return m, nil
}

// fields splits line 1, l = prefix + a + infix + b + ".", into a and b,
// which must be tokens; form is how the line must read, for the errors.
func fields(l, prefix, infix, form string) (a, b string, err error) {
	rest := strings.TrimSuffix(strings.TrimPrefix(l, prefix), ".")
	i := strings.Index(rest, infix)
	if i < 0 {
		return "", "", fail(ErrBadMessage, "line 1 of the signed message must read \"%s\"", form)
	}
	a, b = rest[:i], rest[i+len(infix):]
	if !token(a) || !token(b) {
		return "", "", fail(ErrBadMessage, "line 1 of the signed message must read \"%s\" with no extra spaces", form)
	}
	return a, b, nil
}

// parseTimestamp accepts exactly YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z with valid
// field ranges.
func parseTimestamp(s string) (time.Time, bool) {
	const base = len("2006-01-02T15:04:05")
	if len(s) < base+1 || len(s) > base+11 || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	for i := 0; i < base; i++ {
		c := s[i]
		switch i {
		case 4, 7:
			if c != '-' {
				return time.Time{}, false
			}
		case 10:
			if c != 'T' {
				return time.Time{}, false
			}
		case 13, 16:
			if c != ':' {
				return time.Time{}, false
			}
		default:
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
		}
	}
	if frac := s[base : len(s)-1]; frac != "" {
		if len(frac) < 2 || frac[0] != '.' {
			return time.Time{}, false
		}
		for i := 1; i < len(frac); i++ {
			if frac[i] < '0' || frac[i] > '9' {
				return time.Time{}, false
			}
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
