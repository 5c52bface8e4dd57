package evm

// The name registry: registering, resolving and reverse-resolving names.

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/internal/names"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// RegisterName publishes name → metaAddress in the registry, sent (and so
// authorised) by ownerAddress. Registering the same name to the same owner
// and meta-address again returns the original registration.
func (c *Connector) RegisterName(ctx context.Context, owner chains.KeyRef, ownerAddress, name, metaAddress string) (chains.TxResult, error) {
	if err := c.needNames(); err != nil {
		return chains.TxResult{}, err
	}
	r, err := c.reqs.Register(ownerAddress, name, metaAddress)
	if err != nil {
		return chains.TxResult{}, err
	}
	n, src, meta := r.Name, r.Owner, r.Meta
	raw := append(meta.Spend[:], meta.View[:]...)
	key := fmt.Sprintf("register/%s/%s/%s", n, strings.ToLower(src.Hex()), hex.EncodeToString(crypto.Keccak256(raw)[:8]))
	fp := intents.Fingerprint("register", n, src.Hex(), meta.String())
	if r, ok, err := c.lookup(ctx, key, fp); ok || err != nil {
		return r, err
	}
	if err := c.requireCode(ctx, c.cfg.Names, "NAMES"); err != nil {
		return chains.TxResult{}, err
	}
	curOwner, curMeta, err := c.resolve(ctx, n)
	if err != nil {
		return chains.TxResult{}, err
	}
	if curOwner != (common.Address{}) && curOwner != src {
		return chains.TxResult{}, fmt.Errorf("%w: %s%s", chains.ErrNameTaken, n, chains.NameSuffix)
	}
	if curOwner == src && string(curMeta) == string(raw) {
		// Registered before this ledger knew (or by another member): find the tx.
		if h, err := c.registrationTx(ctx, n, src); err == nil {
			return c.Result(h.Hex()), nil
		}
	}
	spec := txSpec{op: "register", fingerprint: fp, from: src, ref: owner, to: c.cfg.Names,
		data: c.names.PackRegister(n, raw), extra: map[string]string{"name": n + chains.NameSuffix}}
	if spec.gas, err = c.estimateGas(ctx, src, c.cfg.Names, nil, spec.data); err != nil {
		return chains.TxResult{}, err
	}
	return c.submit(ctx, key, spec)
}

func (c *Connector) resolve(ctx context.Context, n string) (common.Address, []byte, error) {
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &c.cfg.Names, Data: c.names.PackResolve(n)}, nil)
	if err != nil {
		return common.Address{}, nil, c.callError("resolve", err)
	}
	r, err := c.names.UnpackResolve(out)
	if err != nil {
		return common.Address{}, nil, fmt.Errorf("evm: %s: resolve: %w", c.cfg.Chain, err)
	}
	return r.Owner, r.MetaAddress, nil
}

// registrationTx finds the latest NameRegistered event of name by owner.
func (c *Connector) registrationTx(ctx context.Context, n string, owner common.Address) (common.Hash, error) {
	ev := c.names.GetABI().Events["NameRegistered"].ID
	logs, err := c.eth.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(c.cfg.FromBlock),
		Addresses: []common.Address{c.cfg.Names},
		Topics:    [][]common.Hash{{ev}, {crypto.Keccak256Hash([]byte(n))}, {common.BytesToHash(owner.Bytes())}},
	})
	if err != nil || len(logs) == 0 {
		return common.Hash{}, chains.ErrNotFound
	}
	return logs[len(logs)-1].TxHash, nil
}

// ResolveName returns the meta-address registered for name ("alice" or
// "alice.veil"), or an error matching chains.ErrNotFound.
func (c *Connector) ResolveName(ctx context.Context, name string) (string, error) {
	if err := c.needNames(); err != nil {
		return "", err
	}
	return names.Resolve(ctx, c.cfg.Chain, name, func(ctx context.Context, n string) (string, bool, error) {
		owner, raw, err := c.resolve(ctx, n)
		if err != nil || owner == (common.Address{}) || len(raw) != 66 {
			return "", false, err
		}
		var m secp256k1.MetaAddress
		copy(m.Spend[:], raw[:33])
		copy(m.View[:], raw[33:])
		return m.String(), true, nil
	})
}

// NameOf is the reverse lookup: the name ("alice.veil") address owns.
func (c *Connector) NameOf(ctx context.Context, address string) (string, error) {
	if err := c.needNames(); err != nil {
		return "", err
	}
	a, err := parseAddress(address)
	if err != nil {
		return "", err
	}
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &c.cfg.Names, Data: c.names.PackNameOf(a)}, nil)
	if err != nil {
		return "", c.callError("nameOf", err)
	}
	n, err := c.names.UnpackNameOf(out)
	if err != nil {
		return "", err
	}
	if n == "" {
		return "", fmt.Errorf("%w: no name for %s on %s", chains.ErrNotFound, a.Hex(), c.cfg.Chain)
	}
	return n + chains.NameSuffix, nil
}
