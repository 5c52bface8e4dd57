package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/webhook"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/internal/failpoint"
	"github.com/veilhq/veil/persistence"
)

// Fault injection for the robustness test (robustness_test.go,
// docs/SECURITY.md): VEIL_FAILPOINTS names failpoints that end veild with
// exit status 137 at random. Unset, every hook below is nil and the code
// runs exactly as in production.
//
// A failpoint's name is its component and its step: the connectors'
// Failpoint constants under "evm.", "stellar." and "solana.", the agent's
// and the store's own names with "/" as ".".

// failpoints is the process's armed set; nil unless VEIL_FAILPOINTS is
// set. It is process-wide like the exit it causes, and set once by
// armFailpoints before anything that takes a hook starts.
var failpoints *failpoint.Set

// knownFailpoints is every name VEIL_FAILPOINTS accepts.
func knownFailpoints() []string {
	var out []string
	for _, p := range []evm.Failpoint{evm.FailAfterSign, evm.FailBeforePersist, evm.FailBeforeBroadcast, evm.FailAfterBroadcast, evm.FailBeforeConfirm} {
		out = append(out, "evm."+string(p))
	}
	for _, p := range []stellar.Failpoint{stellar.FailAfterSign, stellar.FailBeforeSubmit, stellar.FailAfterSubmit} {
		out = append(out, "stellar."+string(p))
	}
	for _, p := range []solana.Failpoint{solana.FailAfterSign, solana.FailBeforeSend, solana.FailAfterSend} {
		out = append(out, "solana."+string(p))
	}
	for _, n := range []string{agent.FailAfterTools, agent.FailAfterScheduleSend, agent.FailAfterApprovedSend, agent.FailBeforeCreateStore, agent.FailAfterCreateStore, agent.FailAfterCreateRegister, webhook.FailBeforeSend, persistence.FailBeforeCommit, persistence.FailAfterCommit} {
		out = append(out, dotted(n))
	}
	return out
}

func dotted(name string) string { return strings.ReplaceAll(name, "/", ".") }

// armFailpoints reads VEIL_FAILPOINTS and friends; a bad value is a usage
// error. When armed it says so loudly: such a process is meant to crash.
func armFailpoints(log *slog.Logger) error {
	set, err := failpoint.FromEnv(os.Getenv, knownFailpoints())
	if err != nil {
		return &usageError{err.Error()}
	}
	failpoints = set
	if set != nil {
		log.Warn("failpoints armed: this process will exit at random (tests only)",
			slog.Any("failpoints", set.Armed()), slog.Uint64("seed", set.Seed()))
	}
	return nil
}

// The hooks of each component; nil when nothing is armed.

func commitFailpoint() func(string) {
	if failpoints == nil {
		return nil
	}
	return func(name string) { failpoints.Hit(dotted(name)) }
}

func agentFailpoint() func(string) error {
	if failpoints == nil {
		return nil
	}
	return func(name string) error { failpoints.Hit(dotted(name)); return nil }
}

func evmFailpoint() func(evm.Failpoint) error {
	if failpoints == nil {
		return nil
	}
	return func(p evm.Failpoint) error { failpoints.Hit("evm." + string(p)); return nil }
}

func stellarFailpoint() func(stellar.Failpoint) error {
	if failpoints == nil {
		return nil
	}
	return func(p stellar.Failpoint) error { failpoints.Hit("stellar." + string(p)); return nil }
}

func solanaFailpoint() func(solana.Failpoint) error {
	if failpoints == nil {
		return nil
	}
	return func(p solana.Failpoint) error { failpoints.Hit("solana." + string(p)); return nil }
}
