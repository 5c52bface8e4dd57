package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

// nameRule is the 400's explanation of chains.ValidName.
const nameRule = chains.NameRule + ", given without the " + chains.NameSuffix + " suffix"

func infoOf(r *agent.Record) AgentInfo {
	return AgentInfo{ID: r.ID, Name: r.Name, Chains: r.Chains, Addresses: r.Addresses, MetaAddresses: r.MetaAddresses}
}

// agentRoutes mounts the agent endpoints of the spec.
func (s *Server) agentRoutes(r chi.Router) {
	r.Method(http.MethodPost, "/agent/create", handler(s.createAgent))
	r.Method(http.MethodGet, "/agents", handler(s.listAgents))
	r.Method(http.MethodGet, "/agent/info/{name}", handler(s.agentByName))
	r.Method(http.MethodGet, "/agent/wallet/{address}", handler(s.agentByWallet))
	r.Method(http.MethodGet, "/agent/{id}", handler(s.getAgent))
	r.Method(http.MethodGet, "/agent/{id}/status", handler(s.agentStatus))
	r.Method(http.MethodPost, "/agent/{id}/export", handler(s.exportKey))
	r.Method(http.MethodGet, "/agent/{id}/conversations", asks(s, http.StatusOK, func(_ *http.Request, acc string) (*agent.ListConversations, error) {
		return &agent.ListConversations{AccountID: acc}, nil
	}))
	r.Method(http.MethodPost, "/agent/{id}/conversations", asks(s, http.StatusCreated, func(_ *http.Request, acc string) (*agent.CreateConversation, error) {
		return &agent.CreateConversation{AccountID: acc}, nil
	}))
	r.Method(http.MethodGet, "/agent/{id}/conversations/{convId}/messages", asks(s, http.StatusOK, func(r *http.Request, acc string) (*agent.ListMessages, error) {
		return &agent.ListMessages{AccountID: acc, ConversationID: chi.URLParam(r, "convId")}, nil
	}))
	r.Method(http.MethodDelete, "/agent/{id}/conversations/{convId}", asks(s, http.StatusOK, func(r *http.Request, acc string) (*agent.DeleteConversation, error) {
		return &agent.DeleteConversation{AccountID: acc, ConversationID: chi.URLParam(r, "convId")}, nil
	}))
	r.Method(http.MethodGet, "/agent/{id}/notifications", asks(s, http.StatusOK, func(_ *http.Request, acc string) (*agent.ListNotifications, error) {
		return &agent.ListNotifications{AccountID: acc}, nil
	}))
	r.Method(http.MethodPost, "/agent/{id}/notifications/read", asks(s, http.StatusOK, func(_ *http.Request, acc string) (*agent.MarkNotificationsRead, error) {
		return &agent.MarkNotificationsRead{AccountID: acc}, nil
	}))
	r.Method(http.MethodDelete, "/agent/{id}/notifications", asks(s, http.StatusOK, func(_ *http.Request, acc string) (*agent.DeleteNotifications, error) {
		return &agent.DeleteNotifications{AccountID: acc}, nil
	}))
	r.Method(http.MethodPost, "/agent/{id}/chat", handler(s.chat))
	r.Method(http.MethodGet, "/agent/{id}/policy", asks(s, http.StatusOK, func(_ *http.Request, acc string) (*agent.GetPolicy, error) {
		return &agent.GetPolicy{AccountID: acc}, nil
	}))
	r.Method(http.MethodPut, "/agent/{id}/policy", handler(s.setPolicy))
	r.Method(http.MethodGet, "/invoice/{invoiceId}", handler(s.getInvoice))
	r.Method(http.MethodPost, "/invoice/{invoiceId}/paid", handler(s.invoicePaid))
	r.Method(http.MethodGet, "/agent/{id}/schedules", handler(s.listSchedules))
	r.Method(http.MethodPost, "/agent/{id}/schedules/{scheduleId}/pause", handler(s.scheduleAction("pause")))
	r.Method(http.MethodPost, "/agent/{id}/schedules/{scheduleId}/resume", handler(s.scheduleAction("resume")))
	r.Method(http.MethodPost, "/agent/{id}/schedules/{scheduleId}/cancel", handler(s.scheduleAction("cancel")))
	r.Method(http.MethodGet, "/tee/info", handler(s.teeInfo))
	r.Method(http.MethodGet, "/tee/attest/{agentId}", handler(s.teeAttest))
}

// apiError turns the errors of the layers below into user-facing ones.
func apiError(err error) error {
	var wse *walletsig.Error
	var down *chains.DownError
	switch {
	case errors.As(err, &wse):
		return &Error{Status: http.StatusBadRequest, Message: wse.Error(), Err: err}
	case errors.Is(err, agent.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Message: "agent not found", Err: err}
	case errors.Is(err, agent.ErrConversationNotFound):
		return &Error{Status: http.StatusNotFound, Message: "conversation not found", Err: err}
	case errors.Is(err, agent.ErrNameTaken):
		return &Error{Status: http.StatusConflict, Message: "agent name is already taken: choose another name", Err: err}
	case errors.Is(err, agent.ErrApprovalNotFound):
		return &Error{Status: http.StatusNotFound, Message: "approval not found", Err: err}
	case errors.Is(err, agent.ErrApprovalDecided):
		return &Error{Status: http.StatusConflict, Message: err.Error() + "; a payment is decided once", Err: err}
	case errors.Is(err, agent.ErrNotOnChain):
		return &Error{Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	case errors.Is(err, agent.ErrBadDecision):
		return &Error{Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	case errors.Is(err, agent.ErrPaymentNotFound):
		return &Error{Status: http.StatusNotFound, Message: "payment not found", Err: err}
	case errors.Is(err, agent.ErrInvoiceNotFound):
		return &Error{Status: http.StatusNotFound, Message: strings.TrimPrefix(strings.TrimPrefix(err.Error(), agent.ErrInvoiceNotFound.Error()+": "), "policy: unknown invoice: "), Err: err}
	case errors.Is(err, agent.ErrBadFilter): // lists.go checks first: rare
		return &Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(err.Error(), agent.ErrBadFilter.Error()+": "), Err: err}
	case errors.Is(err, agent.ErrReplayed):
		return &Error{Status: http.StatusBadRequest, Message: "this signature was already used: sign a new message (with a new Issued At)", Err: err}
	case errors.Is(err, policy.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	case errors.Is(err, enclave.ErrInvalidInput):
		return &Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(err.Error(), "enclave: "), Err: err}
	case errors.Is(err, enclave.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Message: "the enclave is not reachable right now; retry later", Err: err}
	case errors.As(err, &down):
		return &Error{Status: http.StatusServiceUnavailable, Message: down.Error(), Err: err}
	case errors.Is(err, chains.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Message: "the chain is not reachable right now; retry later", Err: err}
	}
	return err
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) error {
	var req CreateAgentRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"name", req.Name}, {"chain", req.Chain}, {"wallet", req.Wallet}, {"signature", req.Signature}} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return Errorf(http.StatusBadRequest, "missing required field(s): %s", strings.Join(missing, ", "))
	}
	if !chains.ValidName(req.Name) {
		return Errorf(http.StatusBadRequest, "invalid name %q: %s", truncate(req.Name, 40), nameRule)
	}
	deploy, err := resolveChains(req.Chain)
	if err != nil {
		return err
	}
	proof, err := walletsig.VerifyCreate(walletsig.CreateRequest{
		Name: req.Name, Chain: req.Chain, Wallet: req.Wallet, Signature: req.Signature, Message: req.Message,
	}, s.now())
	if err != nil {
		return apiError(err)
	}
	acc := accountFrom(r.Context())
	// A retry of a create whose answer was lost (timeout, crash after the
	// store): the same signed request from the same account gets the agent
	// it created, 200 instead of 201.
	if rec, err := s.createdBy(r.Context(), proof.ReplayKey, acc.ID); err != nil || rec != nil {
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, createResponse(rec))
		return nil
	}
	id := uuid.NewString()
	rec, err := ask(r.Context(), s, id, &agent.Create{
		AccountID:   acc.ID,
		Name:        req.Name,
		Chain:       req.Chain,
		Chains:      deploy,
		OwnerWallet: proof.Wallet,
		OwnerScheme: string(proof.Scheme),
		ReplayKey:   proof.ReplayKey,
		KeepUntil:   proof.KeepUntil,
	})
	if errors.Is(err, agent.ErrReplayed) || errors.Is(err, agent.ErrNameTaken) {
		// Two copies of one request racing: the one that lost answers
		// like a retry.
		if rec, lerr := s.createdBy(r.Context(), proof.ReplayKey, acc.ID); lerr == nil && rec != nil {
			writeJSON(w, http.StatusOK, createResponse(rec))
			return nil
		}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, createResponse(rec))
	return nil
}

func createResponse(rec *agent.Record) CreateAgentResponse {
	first := rec.Chains[0]
	info := infoOf(rec)
	return CreateAgentResponse{
		ID: rec.ID, Name: rec.Name, Chain: rec.Chain,
		Address: rec.Addresses[first], MetaAddress: rec.MetaAddresses[first],
		Chains: info.Chains, Addresses: info.Addresses, MetaAddresses: info.MetaAddresses,
	}
}

// createdBy returns the agent that the create signature with replayKey
// made, when it was made for account accountID; nil when the signature
// created nothing yet. The same signature presented by another account is
// ErrReplayed (400 "already used"), as before: it neither reveals the agent
// nor creates a second one.
func (s *Server) createdBy(ctx context.Context, replayKey, accountID string) (*agent.Record, error) {
	dir := agent.Directory{Store: s.store}
	id, err := dir.IDByCreateSignature(ctx, replayKey)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := dir.ByID(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, apiError(agent.ErrReplayed)
	}
	if err != nil {
		return nil, err
	}
	if rec.AccountID != accountID || len(rec.Chains) == 0 {
		return nil, apiError(agent.ErrReplayed)
	}
	return rec, nil
}

func resolveChains(c string) ([]chains.ID, error) {
	if c == chains.All {
		return chains.Order(), nil
	}
	id, err := chains.Parse(c)
	if err != nil {
		return nil, Errorf(http.StatusBadRequest, "unknown chain %q: use one of horizen, ethereum, polygon, base, stellar, solana or all", truncate(c, 40))
	}
	return []chains.ID{id}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	recs, err := agent.Directory{Store: s.store}.ByAccount(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	out := make([]AgentInfo, 0, len(recs))
	for _, a := range recs {
		out = append(out, infoOf(a))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) error {
	id, err := agentID(r, "id")
	if err != nil {
		return err
	}
	return s.writeAgentInfo(w, r, id)
}

func (s *Server) writeAgentInfo(w http.ResponseWriter, r *http.Request, id string) error {
	rec, err := ask(r.Context(), s, id, &agent.Get{AccountID: accountID(r)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, infoOf(rec))
	return nil
}

func (s *Server) agentByName(w http.ResponseWriter, r *http.Request) error {
	name := strings.TrimSuffix(chi.URLParam(r, "name"), chains.NameSuffix)
	if !chains.ValidName(name) {
		return Errorf(http.StatusBadRequest, "invalid name %q: %s", truncate(name, 40), nameRule)
	}
	return s.foundAgent(w, r)(agent.Directory{Store: s.store}.IDByName(r.Context(), name))
}

// agentByWallet answers the oldest agent the wallet owns in the caller's
// account (docs/api.md).
func (s *Server) agentByWallet(w http.ResponseWriter, r *http.Request) error {
	wallet, _, err := walletsig.NormalizeWallet(chi.URLParam(r, "address"))
	if err != nil {
		return apiError(err)
	}
	return s.foundAgent(w, r)(agent.Directory{Store: s.store}.IDByWallet(r.Context(), accountID(r), wallet))
}

// foundAgent writes the agent a directory lookup found (as the caller's
// account sees it), or the lookup's error: none found is the 404 of every
// agent endpoint.
func (s *Server) foundAgent(w http.ResponseWriter, r *http.Request) func(id string, err error) error {
	return func(id string, err error) error {
		if errors.Is(err, persistence.ErrNotFound) {
			return Errorf(http.StatusNotFound, "agent not found")
		}
		if err != nil {
			return err
		}
		return s.writeAgentInfo(w, r, id)
	}
}

func (s *Server) agentStatus(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := target(r)
	if err != nil {
		return err
	}
	// ?chain= picks one of the agent's chains (default: its first).
	var chain string
	if c := r.URL.Query().Get("chain"); c != "" {
		cid, err := chains.Parse(c)
		if err != nil {
			return Errorf(http.StatusBadRequest, "unknown chain %q: use one of horizen, ethereum, polygon, base, stellar or solana", truncate(c, 40))
		}
		chain = string(cid)
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.GetStatus{AccountID: acc, Chain: chain}))
}

func (s *Server) exportKey(w http.ResponseWriter, r *http.Request) error {
	var req ExportRequest
	to, acc, err := targetBody(r, &req)
	if err != nil {
		return err
	}
	secret, err := ask(r.Context(), s, to, &agent.Export{AccountID: acc, Signature: req.Signature, Message: req.Message})
	return private(w, http.StatusOK)(client.ExportedKey{Secret: secret}, err)
}

func (s *Server) teeInfo(w http.ResponseWriter, r *http.Request) error {
	if s.tee == nil {
		return Errorf(http.StatusServiceUnavailable, "no enclave is configured")
	}
	info, err := s.tee.Info(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// maxNonce bounds the caller's attestation nonce (docs/enclave.md).
const maxNonce = 128

func (s *Server) teeAttest(w http.ResponseWriter, r *http.Request) error {
	id, err := agentID(r, "agentId")
	if err != nil {
		return err
	}
	nonce := r.URL.Query().Get("nonce")
	if len(nonce) > maxNonce {
		return Errorf(http.StatusBadRequest, "nonce is too long: at most %d characters", maxNonce)
	}
	// docs/enclave.md: UTF-8 text without control characters. Other bytes
	// would be bound into the statement and then mangled by its JSON, so
	// the client's check would fail (found by FuzzAttestQuery).
	if !utf8.ValidString(nonce) || strings.IndexFunc(nonce, unicode.IsControl) >= 0 {
		return Errorf(http.StatusBadRequest, "nonce must be UTF-8 text without control characters")
	}
	if nonce == "" {
		// Without a caller nonce the statement is not fresh for the caller;
		// a server nonce at least makes every statement distinct.
		var b [16]byte
		_, _ = rand.Read(b[:])
		nonce = hex.EncodeToString(b[:])
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, id, &agent.Attest{AccountID: accountID(r), Nonce: nonce}))
}

// SetPolicyRequest is the body of PUT /agent/:id/policy.
type SetPolicyRequest struct {
	Policy    *policy.Policy `json:"policy"`
	Signature string         `json:"signature"`
	Message   string         `json:"message"`
}

func (s *Server) setPolicy(w http.ResponseWriter, r *http.Request) error {
	var req SetPolicyRequest
	to, acc, err := targetBody(r, &req)
	if err != nil {
		return err
	}
	if err := needPolicy(req.Policy, `{"policy": {...}, "signature", "message"}`); err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.SetPolicy{AccountID: acc, Policy: *req.Policy, Signature: req.Signature, Message: req.Message}))
}
