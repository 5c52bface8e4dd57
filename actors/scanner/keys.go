package scanner

import (
	"context"
	"fmt"
	"slices"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/persistence"
)

// keySet is the viewing keys of the agents on one chain that this scanner
// owns (its shard), in a batch scanner.
type keySet struct {
	chain chains.ID
	// view is the id of the View whose agents the set holds.
	view string
	// known marks the agents examined under view (deployed here and
	// owned, or not deployed on this chain), so refresh reads only new ones.
	known map[string]bool
	ids   []string
	secp  []secpstealth.ViewKeyEntry
	ed    []edstealth.ViewKeyEntry
	sc    *secpstealth.Scanner
	edsc  *edstealth.Scanner
}

// retain keeps the keys of the agents owns still answers true for, under
// a new view: the agents that left the shard are dropped (and their keys
// wiped), the ones it gained are read by the next refresh.
func (k *keySet) retain(view string, owns func(string) bool) error {
	if k.view == view {
		return nil
	}
	k.view = view
	known := map[string]bool{}
	var ids []string
	var secp []secpstealth.ViewKeyEntry
	var ed []edstealth.ViewKeyEntry
	for i, id := range k.ids {
		if !owns(id) {
			if i < len(k.secp) {
				clear(k.secp[i].ViewPriv[:])
			}
			if i < len(k.ed) {
				clear(k.ed[i].ViewPriv[:])
			}
			continue
		}
		known[id] = true
		ids = append(ids, id)
		if i < len(k.secp) {
			secp = append(secp, k.secp[i])
		}
		if i < len(k.ed) {
			ed = append(ed, k.ed[i])
		}
	}
	k.known, k.ids, k.secp, k.ed = known, ids, secp, ed
	return k.build()
}

// refresh adds the agents deployed on the chain and owned by this shard
// since the last refresh (agent.Directory reads the agent table, ids and
// chains only, and skips the agents already known or not owned).
func (k *keySet) refresh(ctx context.Context, st persistence.Store, keys Keys, owns func(string) bool) error {
	added := false
	err := agent.Directory{Store: st}.Deployments(ctx, func(id string) bool { return k.known[id] || !owns(id) }, func(id string, deployed []chains.ID) error {
		if !slices.Contains(deployed, k.chain) {
			k.known[id] = true
			return nil
		}
		if err := k.add(ctx, keys, id); err != nil {
			return err
		}
		added = true
		return nil
	})
	if err != nil {
		return err
	}
	if !added {
		return nil
	}
	return k.build()
}

// add asks for the agent's scanning keys and adds them (build makes them
// part of the batch scanner).
func (k *keySet) add(ctx context.Context, keys Keys, id string) error {
	sk, err := keys.ScanKeys(ctx, id, k.chain)
	if err != nil {
		return fmt.Errorf("scanner: scan keys of agent %s on %s: %w", id, k.chain, err)
	}
	defer sk.Zero()
	if k.chain.Family() == chains.FamilyEVM {
		e, err := sk.Secp256k1Entry()
		if err != nil {
			return err
		}
		k.secp = append(k.secp, e)
	} else {
		e, err := sk.Ed25519Entry()
		if err != nil {
			return err
		}
		k.ed = append(k.ed, e)
	}
	k.known[id] = true
	k.ids = append(k.ids, id)
	return nil
}

// build makes the batch scanner of the current keys.
func (k *keySet) build() error {
	var err error
	k.sc, k.edsc = nil, nil
	if len(k.ids) == 0 {
		return nil
	}
	if k.chain.Family() == chains.FamilyEVM {
		k.sc, err = secpstealth.NewScanner(k.secp)
	} else {
		k.edsc, err = edstealth.NewScanner(k.ed)
	}
	return err
}

// match returns the (announcement, key index) pairs of a page. Malformed
// announcements (anyone can announce anything) match nothing.
func (k *keySet) match(anns []chains.Announcement) []secpstealth.Match {
	if len(k.ids) == 0 {
		return nil
	}
	var ms []secpstealth.Match
	var index []int
	if k.chain.Family() == chains.FamilyEVM {
		var decoded []secpstealth.Announcement
		decoded, index = agent.DecodeSecp256k1(anns)
		ms = k.sc.Scan(decoded)
	} else {
		var decoded []edstealth.Announcement
		decoded, index = agent.DecodeEd25519(k.chain, anns)
		ms = k.edsc.Scan(decoded)
	}
	for i := range ms {
		ms[i].Announcement = index[ms[i].Announcement]
	}
	return ms
}

func (k *keySet) zero() {
	for i := range k.secp {
		clear(k.secp[i].ViewPriv[:])
	}
	for i := range k.ed {
		clear(k.ed[i].ViewPriv[:])
	}
	k.secp, k.ed, k.sc, k.edsc, k.ids = nil, nil, nil, nil, nil
	k.known = map[string]bool{}
	k.view = ""
}
