package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// Setup states of the create flow's on-chain steps, per chain.
const (
	SetupDone    = "done"
	SetupPending = "pending"
)

// create runs the spec's creation steps 4–7 for this id (the HTTP layer
// did 1–3: request, signature, UUID): derive keys in the enclave, fund on
// test networks, store, register the name on chain.
func (a *Actor) create(ctx context.Context, c *Create) (*Record, error) {
	if a.rec != nil {
		return nil, fmt.Errorf("agent %s: already exists", a.id)
	}
	// Fail fast on a taken name before touching chains; the atomic write
	// below is what decides a race.
	if _, err := (Directory{Store: a.deps.Store}).IDByName(ctx, c.Name); err == nil {
		return nil, ErrNameTaken
	} else if !errors.Is(err, persistence.ErrNotFound) {
		return nil, err
	}
	now := a.deps.now()
	rec := &Record{
		ID:            a.id,
		Name:          c.Name,
		AccountID:     c.AccountID,
		Chain:         c.Chain,
		OwnerWallet:   c.OwnerWallet,
		OwnerScheme:   c.OwnerScheme,
		Addresses:     map[string]string{},
		MetaAddresses: map[string]string{},
		Funding:       map[string]string{},
		Registration:  map[string]string{},
		CreatedAt:     now,
	}
	for _, ch := range c.Chains {
		rec.Chains = append(rec.Chains, string(ch))
		keys, err := a.deps.Keys.Derive(ctx, a.id, ch)
		if err != nil {
			return nil, fmt.Errorf("agent %s: derive keys on %s: %w", a.id, ch, err)
		}
		rec.Addresses[string(ch)] = keys.Address
		rec.MetaAddresses[string(ch)] = keys.MetaAddress
	}
	for _, ch := range c.Chains {
		rec.Funding[string(ch)] = a.setupStep(ctx, "fund", ch, func() (chains.TxResult, error) {
			c, err := a.deps.Chains.Chain(ch)
			if err != nil {
				return chains.TxResult{}, err
			}
			return c.Fund(ctx, rec.Addresses[string(ch)])
		})
	}
	// Registration is pending until the chain confirms it; stored as such
	// so that a crash right after the store leaves the truth behind.
	for _, ch := range c.Chains {
		rec.Registration[string(ch)] = SetupPending
	}
	if err := a.deps.fail(FailBeforeCreateStore); err != nil {
		return nil, err
	}
	if err := a.store(ctx, rec, c); err != nil {
		return nil, err
	}
	if err := a.deps.fail(FailAfterCreateStore); err != nil {
		return nil, err
	}
	next := rec.clone()
	changed := false
	for _, ch := range c.Chains {
		owner := chains.KeyRef{AgentID: a.id, Chain: ch}
		next.Registration[string(ch)] = a.setupStep(ctx, "register name", ch, func() (chains.TxResult, error) {
			c, err := a.deps.Chains.Chain(ch)
			if err != nil {
				return chains.TxResult{}, err
			}
			return c.RegisterName(ctx, owner, rec.Addresses[string(ch)], rec.Name, rec.MetaAddresses[string(ch)])
		})
		changed = changed || next.Registration[string(ch)] != SetupPending
	}
	if err := a.deps.fail(FailAfterCreateRegister); err != nil {
		return nil, err
	}
	// The agent exists once stored; a failure to record the registration
	// outcome leaves it "pending", which the chain issues retry.
	if changed {
		if err := a.saveRecord(ctx, next); err != nil {
			a.log(ctx).Warn("agent created but registration status not saved", slog.Any("err", err))
		}
	}
	return a.rec, nil
}

// setupStep runs one on-chain step and says what became of it. A chain
// that is not available leaves the step pending; nothing pretends.
func (a *Actor) setupStep(ctx context.Context, what string, ch chains.ID, f func() (chains.TxResult, error)) string {
	res, err := f()
	switch {
	case err == nil:
		return SetupDone + " " + res.TxHash
	case errors.Is(err, chains.ErrUnavailable):
		return SetupPending
	case errors.Is(err, chains.ErrInsufficientFunds):
		// A new agent has no gas yet (no faucet on a real network): the
		// step waits for funds and is retried (resume.go), not failed.
		a.log(ctx).Info("agent setup step waits for funds", slog.String("step", what),
			slog.String("chain", string(ch)), slog.Any("err", err))
		return SetupPending
	case errors.Is(err, chains.ErrNoFaucet):
		// Nothing failed: the owner funds the address (the error says which).
		return "skipped: " + err.Error()
	default:
		a.log(ctx).Warn("agent setup step failed", slog.String("step", what),
			slog.String("chain", string(ch)), slog.Any("err", err))
		return "failed: " + err.Error()
	}
}

// store writes the agent, its indexes and the used signature atomically:
// a taken name or a replayed signature leaves nothing behind.
func (a *Actor) store(ctx context.Context, rec *Record, c *Create) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	created := strconv.FormatInt(rec.CreatedAt.UnixNano(), 36)
	ops := []persistence.Op{
		persistence.Put(TableAgentNames, rec.Name, []byte(a.id), persistence.Absent()),
		persistence.Put(TableAgentAccounts, rec.AccountID+"/"+created+"/"+a.id, []byte(a.id), persistence.Absent()),
		persistence.Put(TableAgentWallets, WalletIndexPrefix(rec.AccountID, rec.OwnerWallet)+created+"/"+a.id, []byte(a.id), persistence.Absent()),
		persistence.Put(TableAgents, a.id, raw, persistence.Absent()),
	}
	if c.ReplayKey != "" {
		// The used signature, and which agent it created: a client that
		// retries the same signed request (its answer was lost) gets this
		// agent back instead of "already used".
		ops = append(ops, usedSignature(c.ReplayKey, c.KeepUntil),
			persistence.Put(TableCreateSigs, c.ReplayKey, []byte(a.id), persistence.Absent()))
	}
	vs, err := a.deps.Store.Apply(ctx, ops...)
	var ce *persistence.ConflictError
	if errors.As(err, &ce) {
		switch ce.Table {
		case TableAgentNames:
			return ErrNameTaken
		case TableUsedSigs, TableCreateSigs:
			return ErrReplayed
		}
	}
	if err != nil {
		return fmt.Errorf("agent %s: store: %w", a.id, err)
	}
	a.rec, a.version = rec, vs[3]
	a.publish()
	return nil
}

// WalletIndexPrefix is the key prefix of an owner wallet's agents within an
// account, oldest first.
func WalletIndexPrefix(accountID, normalizedWallet string) string {
	return accountID + "/" + normalizedWallet + "/"
}

// usedSignature records a replay key; a second use conflicts.
func usedSignature(key string, keepUntil time.Time) persistence.Op {
	v := []byte("forever")
	if !keepUntil.IsZero() {
		v = []byte(keepUntil.UTC().Format(time.RFC3339))
	}
	return persistence.Put(TableUsedSigs, key, v, persistence.Absent())
}
