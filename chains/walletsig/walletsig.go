// Package walletsig proves that a request comes from the owner of a wallet:
// the owner signs a short, fixed-format message naming one action (create an
// agent, export an agent's key) and the server verifies it here.
//
// Schemes: EVM wallets (horizen, ethereum, polygon, base) sign with EIP-191
// personal_sign and the signer is recovered with go-ethereum; Stellar and
// Solana wallets sign the message's UTF-8 bytes with ed25519 (Stellar's SEP-53
// form is accepted too). The message formats, accepted encodings, time window
// and replay rule are specified in docs/signatures.md; this package is their
// implementation, and its TestDocExamples keeps the document's worked
// examples true.
//
// The package has no state: it does not remember used signatures. The server
// stores Proof.ReplayKey (for instance in the used-signatures table, in the
// same atomic batch as the action it authorizes) and answers ErrReplayed when
// the key is already there.
package walletsig

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// The time window of a signed message's Issued At, relative to the server's
// clock: no older than MaxAge, no further ahead than MaxSkew.
const (
	MaxAge  = 10 * time.Minute
	MaxSkew = time.Minute
)

// CreateRequest is the proof part of POST /agent/create.
type CreateRequest struct {
	Name      string // agent name without the ".veil" suffix
	Chain     string // horizen, ethereum, polygon, base, stellar, solana or all
	Wallet    string // owner wallet, as sent by the client
	Signature string
	// Message is the signed text. When empty, the server checks
	// CreateMessageShort(Name, Chain, Wallet).
	Message string
}

// ExportRequest is the proof part of POST /agent/:id/export.
type ExportRequest struct {
	AgentID string
	// Wallet is the agent's stored owner wallet (not taken from the client).
	Wallet    string
	Signature string
	Message   string // required, with an Issued At
}

// Proof is the result of a successful verification.
type Proof struct {
	Action Action
	Scheme Scheme
	// Wallet is the normalized owner wallet (see NormalizeWallet): for EVM
	// "0x" + 40 lowercase hex digits; Stellar and Solana addresses unchanged.
	Wallet string
	// WalletChecksum is the EIP-55 form for EVM wallets (for display), and
	// equal to Wallet for the other schemes.
	WalletChecksum string
	// Message is the exact text whose signature was verified.
	Message string
	// IssuedAt is the message's timestamp; zero when it has none.
	IssuedAt time.Time
	// ReplayKey identifies this authorization: the server records it as used
	// and rejects a second request that yields the same key (ErrReplayed).
	// It is lowercase hex sha256 over the scheme, the normalized wallet and
	// the exact message bytes, so every valid signature of the same message
	// by the same wallet (re-encoded, v 0/1 vs 27/28, s vs n−s, a second
	// signing) maps to one key.
	ReplayKey string
	// KeepUntil is how long the replay record must be kept: after it, the
	// message fails the time window anyway. Zero means forever (a message
	// without Issued At never expires).
	KeepUntil time.Time
}

// VerifyCreate checks a create request's signature at time now. On success
// the Proof's Wallet is what the server stores as the agent's owner wallet.
func VerifyCreate(req CreateRequest, now time.Time) (Proof, error) {
	if missing := missingFields(field{"name", req.Name}, field{"chain", req.Chain}, field{"wallet", req.Wallet}, field{"signature", req.Signature}); missing != "" {
		return Proof{}, fail(ErrMissingField, "missing required field(s): %s; a create request needs name, chain, wallet and signature (message is optional)", missing)
	}
	want, err := ChainScheme(req.Chain)
	if err != nil {
		return Proof{}, err
	}
	w, err := parseWallet(req.Wallet)
	if err != nil {
		return Proof{}, err
	}
	if want != "" && w.scheme != want {
		return Proof{}, fail(ErrSchemeMismatch, "chain %s needs %s wallet, but the wallet sent is %s address: sign with %s wallet, or create the agent on a chain of the wallet's family", req.Chain, article(want), article(w.scheme), article(want))
	}
	if !token(req.Name) {
		return Proof{}, fail(ErrBadMessage, "name cannot appear in a signed message: it must be 1 to 128 printable characters without spaces")
	}

	text := req.Message
	if text == "" {
		text = CreateMessageShort(req.Name, req.Chain, req.Wallet)
	}
	m, err := parseMessage(text)
	if err != nil {
		return Proof{}, err
	}
	switch {
	case m.action != ActionCreate:
		return Proof{}, fail(ErrBadMessage, "signed message authorizes another action: sign \"Veil wants you to create agent %s.veil on %s.\" to create an agent", req.Name, req.Chain)
	case m.subject != req.Name:
		return Proof{}, fail(ErrBadMessage, "signed message names agent %s but the request creates %s: sign a message for this name", quote(m.subject), quote(req.Name))
	case m.chain != req.Chain:
		return Proof{}, fail(ErrBadMessage, "signed message names chain %s but the request is for %s: sign a message for this chain", quote(m.chain), quote(req.Chain))
	case !w.same(m.wallet):
		return Proof{}, fail(ErrBadMessage, "signed message names wallet %s but the request's wallet is %s: put the request's wallet on the \"Wallet:\" line", quote(m.wallet), w.text)
	}
	return finish(ActionCreate, w, m, text, req.Signature, now)
}

// VerifyExport checks an export request's signature at time now. The message
// is required and must carry an Issued At within the window (a fresh
// signature).
func VerifyExport(req ExportRequest, now time.Time) (Proof, error) {
	return verifyFresh(fresh{
		action: ActionExport, agentID: req.AgentID, wallet: req.Wallet, signature: req.Signature, message: req.Message,
		known:   req.AgentID != "" && req.Wallet != "",
		what:    "exporting a key",
		missing: "exporting a key needs a fresh signature and the signed message",
		// Server-side values: a programming error, reported without detail.
		unknown:    "the agent's id or owner wallet is unknown: the key cannot be exported",
		other:      fmt.Sprintf("sign \"Veil wants you to export the private key of agent %s.\" to export the key", req.AgentID),
		walletHint: " and put it on the \"Wallet:\" line",
	}, now)
}

// PolicyRequest is the proof part of PUT /agent/:id/policy.
type PolicyRequest struct {
	AgentID string
	// Wallet is the agent's stored owner wallet (not taken from the client).
	Wallet string
	// PolicyHash is the canonical hash of the policy the request sets.
	PolicyHash string
	Signature  string
	Message    string // required, with an Issued At
}

// VerifyPolicy checks a policy change's signature at time now: a fresh
// message naming this policy (by hash) and this agent, signed by the owner.
func VerifyPolicy(req PolicyRequest, now time.Time) (Proof, error) {
	return verifyFresh(fresh{
		action: ActionPolicy, agentID: req.AgentID, wallet: req.Wallet, signature: req.Signature, message: req.Message,
		ref:     req.PolicyHash,
		known:   req.AgentID != "" && req.Wallet != "" && req.PolicyHash != "",
		what:    "setting a spending policy",
		missing: "setting a spending policy needs a fresh owner signature and the signed message",
		unknown: "the agent's id, owner wallet or policy is unknown: the policy cannot be set",
		other:   fmt.Sprintf("sign \"Veil wants you to set spending policy %s for agent %s.\"", req.PolicyHash, req.AgentID),
		otherRef: func(got string) string {
			return fmt.Sprintf("signed message names policy %s but the policy sent hashes to %s: sign the hash of the exact policy (docs/signatures.md)", got, req.PolicyHash)
		},
	}, now)
}

// ApprovalRequest is the proof part of POST /agent/:id/approvals/:approvalId.
type ApprovalRequest struct {
	AgentID    string
	ApprovalID string
	// Wallet is the agent's stored owner wallet (not taken from the client).
	Wallet string
	// Deny selects the denial message ("deny payment") over the approval.
	Deny      bool
	Signature string
	Message   string // required, with an Issued At
}

// VerifyApproval checks the owner's signature of a decision on a held
// payment at time now: the message must name this approval, this agent,
// the owner wallet and the decision taken, and be fresh.
func VerifyApproval(req ApprovalRequest, now time.Time) (Proof, error) {
	verb, action := "approve", ActionApprove
	if req.Deny {
		verb, action = "deny", ActionDeny
	}
	return verifyFresh(fresh{
		action: action, agentID: req.AgentID, wallet: req.Wallet, signature: req.Signature, message: req.Message,
		ref:     req.ApprovalID,
		known:   req.AgentID != "" && req.Wallet != "" && req.ApprovalID != "",
		what:    "a decision on a held payment",
		missing: fmt.Sprintf("a decision on a held payment needs the owner's fresh signature of \"Veil wants you to %s payment %s of agent %s.\" (docs/approvals.md)", verb, req.ApprovalID, req.AgentID),
		unknown: "the agent's id, owner wallet or approval is unknown: the decision cannot be checked",
		other:   fmt.Sprintf("to %s, sign \"Veil wants you to %s payment %s of agent %s.\"", verb, verb, req.ApprovalID, req.AgentID),
		otherRef: func(got string) string {
			return fmt.Sprintf("signed message names payment %s but this is %s: sign a message for this approval", got, quote(req.ApprovalID))
		},
	}, now)
}

// fresh is what VerifyExport, VerifyPolicy and VerifyApproval check: a
// message of action naming the agent (and ref, when the action has one)
// and the agent's stored owner wallet, with an Issued At (a fresh
// signature), signed by that wallet. The other fields are the error
// texts, which tell the client what to sign.
type fresh struct {
	action                              Action
	agentID, wallet, ref                string
	signature, message                  string
	known                               bool   // the server-side values (agent, wallet, ref) are set
	what                                string // the action, as the subject of "needs a fresh signature"
	missing, unknown, other, walletHint string
	otherRef                            func(got string) string // ref differs (nil: no ref)
}

func verifyFresh(f fresh, now time.Time) (Proof, error) {
	if missing := missingFields(field{"signature", f.signature}, field{"message", f.message}); missing != "" {
		return Proof{}, fail(ErrMissingField, "missing required field(s): %s; %s", missing, f.missing)
	}
	if !f.known {
		return Proof{}, fail(ErrMissingField, "%s", f.unknown)
	}
	w, err := parseWallet(f.wallet)
	if err != nil {
		return Proof{}, err
	}
	m, err := parseMessage(f.message)
	if err != nil {
		return Proof{}, err
	}
	switch {
	case m.action != f.action:
		return Proof{}, fail(ErrBadMessage, "signed message authorizes another action: %s", f.other)
	case m.subject != f.agentID:
		return Proof{}, fail(ErrBadMessage, "signed message names agent %s but this is agent %s: sign a message for this agent id", quote(m.subject), quote(f.agentID))
	case f.otherRef != nil && m.policy != f.ref:
		return Proof{}, fail(ErrBadMessage, "%s", f.otherRef(quote(m.policy)))
	case !w.same(m.wallet):
		return Proof{}, fail(ErrBadMessage, "signed message names wallet %s but the agent's owner wallet is %s: sign with the owner wallet%s", quote(m.wallet), w.text, f.walletHint)
	case m.issuedAt == "":
		return Proof{}, fail(ErrBadMessage, "%s needs a fresh signature: add the line \"Issued At: <current UTC time>\" to the message and sign it", f.what)
	}
	return finish(f.action, w, m, f.message, f.signature, now)
}

// CheckIssuedAt is the time window of every signed message (create,
// export, policy and any later one): it accepts when only if
//
//	now − MaxAge ≤ when ≤ now + MaxSkew
//
// (both bounds inclusive). text is the timestamp as written, for the error
// message. It compares instants and never subtracts them: now.Sub(when)
// saturates for a when centuries away (year 1, year 9999) and negating the
// saturated minimum overflows back to a negative duration, which once let a
// far-future Issued At pass as "not ahead".
func CheckIssuedAt(text string, when, now time.Time) error {
	switch {
	case when.Before(now.Add(-MaxAge)):
		return fail(ErrExpired, "signature has expired: Issued At %s is more than 10 minutes before the server time %s; sign a new message with the current time", text, now.UTC().Format(TimestampLayout))
	case when.After(now.Add(MaxSkew)):
		return fail(ErrNotYetValid, "Issued At %s is ahead of the server time %s by more than a minute: check the signing device's clock, then sign a new message", text, now.UTC().Format(TimestampLayout))
	}
	return nil
}

// finish checks the time window and the signature and builds the Proof.
func finish(a Action, w wallet, m message, text, sig string, now time.Time) (Proof, error) {
	p := Proof{Action: a, Scheme: w.scheme, Wallet: w.norm, WalletChecksum: w.norm, Message: text}
	if w.scheme == SchemeEVM {
		p.WalletChecksum = w.evm.Hex()
	}
	if m.issuedAt != "" {
		if err := CheckIssuedAt(m.issuedAt, m.when, now); err != nil {
			return Proof{}, err
		}
		p.IssuedAt = m.when
		p.KeepUntil = m.when.Add(MaxAge)
	}
	if err := verifySignature(w, text, sig); err != nil {
		return Proof{}, err
	}
	p.ReplayKey = ReplayKey(w.scheme, w.norm, text)
	return p, nil
}

// ReplayKey is the key under which a verified authorization is recorded as
// used: lowercase hex SHA-256 of "veil-walletsig-replay-v1", the scheme, the
// normalized wallet and the message, separated by NUL bytes. It does not
// depend on the signature's text (see Proof.ReplayKey and docs/signatures.md).
func ReplayKey(s Scheme, normalizedWallet, message string) string {
	h := sha256.New()
	h.Write([]byte("veil-walletsig-replay-v1\x00" + string(s) + "\x00" + normalizedWallet + "\x00" + message))
	return hex.EncodeToString(h.Sum(nil))
}

func schemeName(s Scheme) string {
	switch s {
	case SchemeEVM:
		return "EVM"
	case SchemeStellar:
		return "Stellar"
	default:
		return "Solana"
	}
}

func article(s Scheme) string {
	if s == SchemeEVM {
		return "an EVM"
	}
	return "a " + schemeName(s)
}

// field is a required request field: its name as the client sends it, and
// its value.
type field struct{ name, v string }

// missingFields names the empty fields, in order, joined by ", " ("" when
// every one is set).
func missingFields(fs ...field) string {
	var missing []string
	for _, f := range fs {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	return strings.Join(missing, ", ")
}
