package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// Directory is the read side of the agent tables this package owns
// (TableAgents and its indexes by name, wallet, account and create
// signature). The agent actor writes them; the API and the tools read
// agents only through Directory, so a change of key layout stays here.
// Every method that finds nothing returns an error matching
// persistence.ErrNotFound.
type Directory struct{ Store persistence.Store }

// ByID returns the stored record of agent id.
func (d Directory) ByID(ctx context.Context, id string) (*Record, error) {
	raw, err := d.Store.Get(ctx, TableAgents, id)
	if err != nil {
		return nil, err
	}
	rec, err := decodeRecord(raw.Value)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", id, err)
	}
	return rec, nil
}

// IDByName returns the id of the agent named name (without the suffix),
// across accounts: names are unique on the service.
func (d Directory) IDByName(ctx context.Context, name string) (string, error) {
	return d.index(ctx, TableAgentNames, name)
}

// ByName returns the record of the agent named name.
func (d Directory) ByName(ctx context.Context, name string) (*Record, error) {
	id, err := d.IDByName(ctx, name)
	if err != nil {
		return nil, err
	}
	return d.ByID(ctx, id)
}

// IDByWallet returns the id of the oldest agent that the normalized wallet
// owns in account accountID (docs/api.md).
func (d Directory) IDByWallet(ctx context.Context, accountID, normalizedWallet string) (string, error) {
	idx, err := d.Store.List(ctx, TableAgentWallets, persistence.Query{Prefix: WalletIndexPrefix(accountID, normalizedWallet), Limit: 1})
	if err != nil {
		return "", err
	}
	if len(idx) == 0 {
		return "", fmt.Errorf("agent directory: no agent of wallet %s in this account: %w", normalizedWallet, persistence.ErrNotFound)
	}
	return string(idx[0].Value), nil
}

// ByAccount returns the account's agents, oldest first.
func (d Directory) ByAccount(ctx context.Context, accountID string) ([]*Record, error) {
	idx, err := d.Store.List(ctx, TableAgentAccounts, persistence.Query{Prefix: accountID + "/"})
	if err != nil {
		return nil, err
	}
	out := make([]*Record, 0, len(idx))
	for _, e := range idx {
		rec, err := d.ByID(ctx, string(e.Value))
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// IDByCreateSignature returns the id of the agent that the create
// signature with replayKey made (a retried create answers that agent).
func (d Directory) IDByCreateSignature(ctx context.Context, replayKey string) (string, error) {
	return d.index(ctx, TableCreateSigs, replayKey)
}

// Deployments pages through every agent in id order and calls fn with its
// id and deployed chains. An agent for which known answers true is skipped
// before its record is decoded, so a caller that remembers what it has seen
// (the scanner's refresh) reads only what is new.
func (d Directory) Deployments(ctx context.Context, known func(id string) bool, fn func(id string, deployed []chains.ID) error) error {
	const page = 1000
	after := ""
	for {
		recs, err := d.Store.List(ctx, TableAgents, persistence.Query{After: after, Limit: page})
		if err != nil {
			return err
		}
		for _, r := range recs {
			if known(r.Key) {
				continue
			}
			var a struct {
				Chains []chains.ID `json:"chains"`
			}
			if err := json.Unmarshal(r.Value, &a); err != nil {
				return fmt.Errorf("agent directory: decode agent %s: %w", r.Key, err)
			}
			if err := fn(r.Key, a.Chains); err != nil {
				return err
			}
		}
		if len(recs) < page {
			return nil
		}
		after = recs[len(recs)-1].Key
	}
}

func (d Directory) index(ctx context.Context, table, key string) (string, error) {
	rec, err := d.Store.Get(ctx, table, key)
	if err != nil {
		return "", err
	}
	return string(rec.Value), nil
}

// LookupAgent is tools.Directory: a Veil agent by name, as the tools see
// it, or tools.ErrUnknownRecipient.
func (d Directory) LookupAgent(ctx context.Context, name string) (tools.Agent, error) {
	r, err := d.ByName(ctx, name)
	if errors.Is(err, persistence.ErrNotFound) {
		return tools.Agent{}, fmt.Errorf("%w: no agent is named %s%s", tools.ErrUnknownRecipient, name, chains.NameSuffix)
	}
	if err != nil {
		return tools.Agent{}, err
	}
	ag := tools.Agent{ID: r.ID, Name: r.Name, Addresses: map[chains.ID]string{}, MetaAddresses: map[chains.ID]string{}}
	for _, c := range r.Chains {
		id := chains.ID(c)
		ag.Chains = append(ag.Chains, id)
		ag.Addresses[id] = r.Addresses[c]
		ag.MetaAddresses[id] = r.MetaAddresses[c]
	}
	return ag, nil
}
