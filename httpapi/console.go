package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
)

// maxOwnedAddresses bounds one owned lookup.
const maxOwnedAddresses = 16

// consoleRoutes mounts the console's one authenticated read: which of the
// caller's agents an address on a chain belongs to (the explorer's "for
// your agent …"). It sees only the API key's account.
func (s *Server) consoleRoutes(r chi.Router) {
	r.Method(http.MethodGet, "/console/api/owned", handler(s.owned))
}

// Owner says whose an address is, for the caller's account.
type Owner struct {
	AgentID   string `json:"agentId"`
	AgentName string `json:"agentName"`
	// Kind is "agent" (the agent's own address), "payment" (a one-time
	// address the agent received a stealth payment at) or "invoice" (the
	// one-time address of one of its invoices).
	Kind      string `json:"kind"`
	InvoiceID string `json:"invoiceId,omitempty"`
	Amount    string `json:"amount,omitempty"`
	Asset     string `json:"asset,omitempty"`
}

// owned is GET /console/api/owned?chain=C&address=A[&address=B…]: a map
// of the addresses that belong to the caller's agents to their Owner;
// addresses of anyone else are absent.
func (s *Server) owned(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	c, err := chains.Parse(q.Get("chain"))
	if err != nil {
		return Errorf(http.StatusBadRequest, "chain: %v", err)
	}
	addrs := q["address"]
	if len(addrs) == 0 || len(addrs) > maxOwnedAddresses {
		return Errorf(http.StatusBadRequest, "address: give 1 to %d addresses", maxOwnedAddresses)
	}
	recs, err := agent.Directory{Store: s.store}.ByAccount(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	byID := map[string]*agent.Record{}
	for _, a := range recs {
		byID[a.ID] = a
	}
	out := map[string]Owner{}
	for _, addr := range addrs {
		if addr == "" || len(addr) > 128 || strings.ContainsAny(addr, "/ ") {
			return Errorf(http.StatusBadRequest, "address %q is not an address", clipText(addr))
		}
		if o, ok, err := s.ownerOf(r, c, addr, recs, byID); err != nil {
			return err
		} else if ok {
			out[addr] = o
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) ownerOf(r *http.Request, c chains.ID, addr string, recs []*agent.Record, byID map[string]*agent.Record) (Owner, bool, error) {
	same := func(a, b string) bool {
		if c.Family() == chains.FamilyEVM {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	for _, a := range recs {
		if same(a.Addresses[string(c)], addr) {
			return Owner{AgentID: a.ID, AgentName: a.Name, Kind: "agent"}, true, nil
		}
	}
	inv, err := state.InvoiceByAddress(r.Context(), s.store, c, addr)
	switch {
	case err == nil:
		if a, ok := byID[inv.AgentID]; ok {
			return Owner{AgentID: a.ID, AgentName: a.Name, Kind: "invoice", InvoiceID: inv.ID, Amount: inv.Amount, Asset: inv.Asset}, true, nil
		}
	case !errors.Is(err, state.ErrNotFound):
		return Owner{}, false, err
	}
	for _, a := range recs {
		p, err := state.NewPayments(s.store, a.ID, nil).Get(r.Context(), c, addr)
		switch {
		case err == nil:
			return Owner{AgentID: a.ID, AgentName: a.Name, Kind: "payment", Amount: p.Amount, Asset: p.Asset}, true, nil
		case !errors.Is(err, state.ErrNotFound):
			return Owner{}, false, err
		}
	}
	return Owner{}, false, nil
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
