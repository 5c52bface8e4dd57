package main

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/relayer"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/runtime/ready"
)

// A relayer that needs funding is a readiness warning named
// "relayer/<chain>": /readyz names it and stays ready; a funded one is
// silent; no relayer, no check.
func TestRelayerChecksWarn(t *testing.T) {
	ctx := context.Background()
	if got := relayerChecks(nil); len(got) != 0 {
		t.Fatalf("checks without relayers: %d", len(got))
	}
	p, err := software.New([32]byte{9, 8, 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	set, err := relayer.New(ctx, p, relayer.Config{Chains: []chains.ID{chains.Solana}})
	if err != nil {
		t.Fatal(err)
	}
	checks := relayerChecks(set)
	if len(checks) != 1 || checks[0].Name() != "relayer/solana" {
		t.Fatalf("checks %+v", checks)
	}
	run := func() ready.Report {
		c := &ready.Checker{}
		c.Add(checks...)
		return c.Run(ctx)
	}
	set.SetBalance(chains.Solana, func(context.Context) (*big.Int, error) { return nil, errors.New("connection refused") })
	if rep := run(); !rep.Ready || len(rep.Warnings) != 1 || !strings.Contains(rep.Checks[0].Warning, "connection refused") {
		t.Fatalf("unreadable relayer: %+v", rep)
	}
	set.SetBalance(chains.Solana, func(context.Context) (*big.Int, error) { return big.NewInt(5_000_000_000), nil })
	if rep := run(); !rep.Ready || len(rep.Warnings) != 0 {
		t.Fatalf("funded relayer: %+v", rep)
	}
}
