package main

import (
	"log/slog"
	"os"
	"slices"

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
// exit status 137 at random. Unset, every hook is nil and the code runs
// exactly as in production. A failpoint's name is its component and its
// step ("evm.after-sign"); each package declares its own (internal/failpoint).

// failpoints is the process's armed set; nil unless VEIL_FAILPOINTS is
// set. It is process-wide like the exit it causes, and set once by
// armFailpoints before anything that takes a hook starts.
var failpoints *failpoint.Set

// knownFailpoints is every name VEIL_FAILPOINTS accepts.
func knownFailpoints() []string {
	out := slices.Concat(evm.Failpoints(), stellar.Failpoints(), solana.Failpoints())
	return append(out, agent.FailAfterTools, agent.FailAfterScheduleSend, agent.FailAfterApprovedSend, agent.FailBeforeCreateStore,
		agent.FailAfterCreateStore, agent.FailAfterCreateRegister, webhook.FailBeforeSend, persistence.FailBeforeCommit, persistence.FailAfterCommit)
}

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
