package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

func TestRelayerConfig(t *testing.T) {
	tests := []struct {
		name                 string
		cfg                  config
		chains               []chains.ID
		minBalance, maxSpend map[chains.ID]string
		runway               int
		fees                 map[chains.ID]map[string]string
		usage                string // part of the usage error, "" for none
	}{
		{name: "default none", cfg: config{Relayer: "none"}},
		{name: "empty", cfg: config{}},
		{name: "all", cfg: config{Relayer: "all"}, chains: chains.Order()},
		{name: "list", cfg: config{Relayer: " base, solana ", RelayerMinBalance: "base=0.5,solana=2", RelayerMaxSpend: "solana=0.02", RelayerMinRunway: 7},
			chains: []chains.ID{chains.Base, chains.Solana}, minBalance: map[chains.ID]string{chains.Base: "500000000000000000", chains.Solana: "2000000000"},
			maxSpend: map[chains.ID]string{chains.Solana: "20000000"}, runway: 7},
		{name: "unknown chain", cfg: config{Relayer: "base,bitcoin"}, usage: "--relayer:"},
		{name: "pair without =", cfg: config{Relayer: "base", RelayerMinBalance: "base:1"}, usage: "is not chain=amount"},
		{name: "zero amount", cfg: config{Relayer: "base", RelayerMaxSpend: "base=0"}, usage: "must be a positive number of ETH"},
		{name: "too many decimals", cfg: config{Relayer: "stellar", RelayerMinBalance: "stellar=0.00000001"}, usage: "must be a positive number of XLM"},
		{name: "fees", cfg: config{Relayer: "base", RelayerFee: "base:usdc=0.1, solana:USDC=0"}, chains: []chains.ID{chains.Base},
			fees: map[chains.ID]map[string]string{chains.Base: {"USDC": "0.1"}, chains.Solana: {}}},
		{name: "fee without asset", cfg: config{Relayer: "base", RelayerFee: "base=0.1"}, usage: "is not chain:asset=amount"},
		{name: "fee not a number", cfg: config{Relayer: "base", RelayerFee: "base:USDC=1e3"}, usage: "is not a decimal amount"},
		{name: "negative fee", cfg: config{Relayer: "base", RelayerFee: "base:USDC=-1"}, usage: "is not a decimal amount"},
		{name: "negative runway", cfg: config{Relayer: "base", RelayerMinRunway: -1}, usage: "--relayer-min-runway"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := relayerConfig(tc.cfg)
			var ue *usageError
			if tc.usage != "" {
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("got %v, want a usage error with %q", err, tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Chains) != len(tc.chains) || got.MinRunway != tc.runway {
				t.Fatalf("config %+v", got)
			}
			for i := range tc.chains {
				if got.Chains[i] != tc.chains[i] {
					t.Fatalf("chains %v, want %v", got.Chains, tc.chains)
				}
			}
			for id, want := range tc.fees {
				if len(got.Fees[id]) != len(want) {
					t.Fatalf("fees %v, want %v", got.Fees, tc.fees)
				}
				for asset, v := range want {
					if got.Fees[id][asset] != v {
						t.Fatalf("fees %v, want %v", got.Fees, tc.fees)
					}
				}
			}
			for id, v := range tc.minBalance {
				if got.MinBalance[id] == nil || got.MinBalance[id].String() != v {
					t.Fatalf("min balance %s = %v, want %s", id, got.MinBalance[id], v)
				}
			}
			for id, v := range tc.maxSpend {
				if got.MaxSpend[id] == nil || got.MaxSpend[id].String() != v {
					t.Fatalf("max spend %s = %v, want %s", id, got.MaxSpend[id], v)
				}
			}
		})
	}
}
