package agent

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/llm"
)

// earlierReplyNames are the wire names the previous version gave the
// answers that are now the Go client's types (the same JSON under the
// actor package's own names until d69a0d6). A member decodes them so it
// reads a previous-version member's answers during a rolling upgrade, and
// sends these answers under them too: d69a0d6 and earlier know only these
// names, every later version decodes both, so members of any version since
// d69a0d6 read each other's answers (TestRollingUpgradeUnderLoad in
// cmd/veild; docs/operations.md, "Upgrades"). The names decoded are pinned
// by testdata/wire-names.golden.
var earlierReplyNames = map[string]any{
	"*agent.ApprovalDecision": &client.ApprovalDecision{},
	"*agent.ApprovalView":     &client.Approval{},
	"[]agent.ApprovalView":    []client.Approval{},
	"*agent.Inbox":            &client.Inbox{},
	"*agent.Notification":     &client.Notification{},
	"*agent.Status":           &client.AgentStatus{},
}

// RegisterWire teaches c every message the agent actor answers and every
// answer it gives (both from the one protocol table, protocol.go), and every
// error a caller matches (the agent's own are in errors.go), so that a
// request to an agent on another cluster member behaves as a local one. A type missing here fails loudly
// (msg.ErrUnregistered), never silently.
func RegisterWire(c *msg.Codec) {
	for _, rt := range protocol() {
		c.RegisterTypes(rt.msg)
		if rt.reply != nil {
			c.RegisterTypes(rt.reply)
		}
	}
	for name, proto := range earlierReplyNames {
		c.RegisterSendAs(name, proto)
	}

	// Typed errors first: a ProviderError also matches context errors.
	c.RegisterKind("llm.provider", func(err error) (string, bool) {
		var pe *llm.ProviderError
		if !errors.As(err, &pe) {
			return "", false
		}
		b, _ := json.Marshal(providerWire{Provider: pe.Provider, Status: pe.Status, Timeout: pe.Timeout, Message: pe.Error()})
		return string(b), true
	}, func(m string) error {
		var w providerWire
		if err := json.Unmarshal([]byte(m), &w); err != nil {
			return errors.New(m)
		}
		return llm.RebuildProviderError(w.Provider, w.Status, w.Timeout, w.Message)
	})
	// A chain down on the member that ran the request (before the
	// chains.unavailable sentinel, which it also matches): the client's
	// 503 names the chain either way.
	c.RegisterKind("chains.down", func(err error) (string, bool) {
		var de *chains.DownError
		if !errors.As(err, &de) {
			return "", false
		}
		b, _ := json.Marshal(de)
		return string(b), true
	}, func(m string) error {
		var de chains.DownError
		if err := json.Unmarshal([]byte(m), &de); err != nil {
			return errors.New(m)
		}
		return &de
	})
	for code, kind := range map[string]error{"llm.unknown-provider": llm.ErrUnknownProvider, "llm.missing-key": llm.ErrMissingKey} {
		c.RegisterKind(code, func(err error) (string, bool) {
			var re *llm.RequestError
			if errors.As(err, &re) && errors.Is(re, kind) {
				return re.Error(), true
			}
			return "", false
		}, func(m string) error { return llm.RebuildRequestError(m, kind) })
	}
	c.RegisterKind("agent.model", func(err error) (string, bool) {
		var me *ModelError
		if !errors.As(err, &me) {
			return "", false
		}
		return me.Err.Error(), true
	}, func(m string) error { return &ModelError{Err: errors.New(m)} })
	for name, kind := range walletsig.Kinds() {
		c.RegisterKind("walletsig."+name, func(err error) (string, bool) {
			var we *walletsig.Error
			if errors.As(err, &we) && we.Kind() == kind {
				return we.Error(), true
			}
			return "", false
		}, func(m string) error { return walletsig.Rebuild(kind, m) })
	}

	// A slice, not a map: the first match wins, so the order is fixed.
	for _, s := range slices.Concat(sentinelCodes, passedThrough) {
		c.RegisterSentinel(s.code, s.err)
	}
}

// passedThrough are the errors of the layers below that the agent actor
// answers unchanged and callers match, with their codes on the wire.
var passedThrough = []sentinelCode{
	{"policy.invalid", policy.ErrInvalid},
	{"enclave.invalid-input", enclave.ErrInvalidInput},
	{"enclave.unavailable", enclave.ErrUnavailable},
	{"enclave.policy", enclave.ErrPolicy},
	{"chains.unavailable", chains.ErrUnavailable},
	{"chains.insufficient-funds", chains.ErrInsufficientFunds},
	{"chains.not-found", chains.ErrNotFound},
	{"chains.no-faucet", chains.ErrNoFaucet},
	{"chains.authorization-refused", chains.ErrAuthorizationRefused},
}

// providerWire carries an llm.ProviderError's fields.
type providerWire struct {
	Provider llm.Provider `json:"provider"`
	Status   int          `json:"status"`
	Timeout  bool         `json:"timeout"`
	Message  string       `json:"message"`
}
