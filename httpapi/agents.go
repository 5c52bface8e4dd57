package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

// nameRule is the 400's explanation of chains.ValidName.
const nameRule = chains.NameRule + ", given without the " + chains.NameSuffix + " suffix"

// AgentInfo is the spec's AgentInfo.
type AgentInfo struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Chains        []string          `json:"chains"`
	Addresses     map[string]string `json:"addresses"`
	MetaAddresses map[string]string `json:"metaAddresses"`
}

func infoOf(r *agent.Record) AgentInfo {
	return AgentInfo{ID: r.ID, Name: r.Name, Chains: r.Chains, Addresses: r.Addresses, MetaAddresses: r.MetaAddresses}
}

// CreateAgentRequest is the body of POST /agent/create.
type CreateAgentRequest struct {
	Name      string `json:"name"`
	Chain     string `json:"chain"`
	Wallet    string `json:"wallet"`
	Signature string `json:"signature"`
	Message   string `json:"message"`
}

// CreateAgentResponse is the spec's single-chain create answer, plus the
// AgentInfo fields chains, addresses and metaAddresses (additive: the spec's
// five fields are unchanged), which Wraith's TypeScript SDK reads from this
// answer (docs/compat-wraith.md).
type CreateAgentResponse struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Chain         string            `json:"chain"`
	Address       string            `json:"address"`
	MetaAddress   string            `json:"metaAddress"`
	Chains        []string          `json:"chains"`
	Addresses     map[string]string `json:"addresses"`
	MetaAddresses map[string]string `json:"metaAddresses"`
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
	r.Method(http.MethodGet, "/agent/{id}/conversations", handler(s.listConversations))
	r.Method(http.MethodPost, "/agent/{id}/conversations", handler(s.createConversation))
	r.Method(http.MethodGet, "/agent/{id}/conversations/{convId}/messages", handler(s.listMessages))
	r.Method(http.MethodDelete, "/agent/{id}/conversations/{convId}", handler(s.deleteConversation))
	r.Method(http.MethodGet, "/agent/{id}/notifications", handler(s.listNotifications))
	r.Method(http.MethodPost, "/agent/{id}/notifications/read", handler(s.markNotificationsRead))
	r.Method(http.MethodDelete, "/agent/{id}/notifications", handler(s.deleteNotifications))
	r.Method(http.MethodPost, "/agent/{id}/chat", handler(s.chat))
	r.Method(http.MethodGet, "/agent/{id}/policy", handler(s.getPolicy))
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

// ask sends m to the agent with this id and returns its answer as the type
// m declares (agent.Request[R]), with the agent's domain errors mapped to
// the API's. An answer of another type, or no value where one is due, is a
// protocol mismatch between this layer and the agent's messages (or a
// codec that decoded another type): a 500 whose log line names both types,
// never a panic.
func ask[R any](ctx context.Context, s *Server, id string, m agent.Request[R]) (R, error) {
	v, err := call(ctx, s, id, m)
	if err != nil {
		return v, apiError(err)
	}
	return v, nil
}

// call is ask without the error mapping, for handlers that map the agent's
// errors themselves (moneyError).
func call[R any](ctx context.Context, s *Server, id string, m agent.Request[R]) (R, error) {
	var zero R
	v, err := s.agents.Request(ctx, id, m)
	if err != nil {
		return zero, err
	}
	if r, ok := v.(R); ok && !nilPointer(v) {
		return r, nil
	}
	if _, none := any(zero).(agent.None); none && v == nil {
		return zero, nil
	}
	return zero, fmt.Errorf("httpapi: protocol mismatch: agent %s answered %T (nil: %t) to %T, where a %T was expected", id, v, v == nil || nilPointer(v), m, zero)
}

// nilPointer reports a typed nil pointer: no answer where one is due.
func nilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// apiError turns the errors of the layers below into user-facing ones.
func apiError(err error) error {
	var wse *walletsig.Error
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
	case errors.Is(err, agent.ErrReplayed):
		return &Error{Status: http.StatusBadRequest, Message: "this signature was already used: sign a new message (with a new Issued At)", Err: err}
	case errors.Is(err, policy.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	case errors.Is(err, enclave.ErrInvalidInput):
		return &Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(err.Error(), "enclave: "), Err: err}
	case errors.Is(err, enclave.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Message: "the enclave is not reachable right now; retry later", Err: err}
	case errors.Is(err, chains.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Message: "the chain is not reachable right now; retry later", Err: err}
	}
	return err
}

// agentID reads a path parameter that must be an agent UUID; anything else
// is an agent that does not exist, answered without activating an actor.
func agentID(r *http.Request, param string) (string, error) {
	id := chi.URLParam(r, param)
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return "", Errorf(http.StatusNotFound, "agent not found")
	}
	return id, nil
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
	recs, err := agent.Directory{Store: s.store}.ByAccount(r.Context(), accountFrom(r.Context()).ID)
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
	rec, err := ask(r.Context(), s, id, &agent.Get{AccountID: accountFrom(r.Context()).ID})
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
	id, err := agent.Directory{Store: s.store}.IDByName(r.Context(), name)
	if errors.Is(err, persistence.ErrNotFound) {
		return Errorf(http.StatusNotFound, "agent not found")
	}
	if err != nil {
		return err
	}
	return s.writeAgentInfo(w, r, id)
}

// agentByWallet answers the oldest agent the wallet owns in the caller's
// account (docs/api.md).
func (s *Server) agentByWallet(w http.ResponseWriter, r *http.Request) error {
	wallet, _, err := walletsig.NormalizeWallet(chi.URLParam(r, "address"))
	if err != nil {
		return apiError(err)
	}
	id, err := agent.Directory{Store: s.store}.IDByWallet(r.Context(), accountFrom(r.Context()).ID, wallet)
	if errors.Is(err, persistence.ErrNotFound) {
		return Errorf(http.StatusNotFound, "agent not found")
	}
	if err != nil {
		return err
	}
	return s.writeAgentInfo(w, r, id)
}

func (s *Server) agentStatus(w http.ResponseWriter, r *http.Request) error {
	id, err := agentID(r, "id")
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
	v, err := ask(r.Context(), s, id, &agent.GetStatus{AccountID: accountFrom(r.Context()).ID, Chain: chain})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// ExportRequest is the body of POST /agent/:id/export.
type ExportRequest struct {
	Signature string `json:"signature"`
	Message   string `json:"message"`
}

func (s *Server) exportKey(w http.ResponseWriter, r *http.Request) error {
	id, err := agentID(r, "id")
	if err != nil {
		return err
	}
	var req ExportRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	secret, err := ask(r.Context(), s, id, &agent.Export{AccountID: accountFrom(r.Context()).ID, Signature: req.Signature, Message: req.Message})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]string{"secret": secret})
	return nil
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.ListConversations{AccountID: acc}))
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusCreated)(ask(r.Context(), s, to, &agent.CreateConversation{AccountID: acc}))
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) error {
	conv := chi.URLParam(r, "convId")
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.ListMessages{AccountID: acc, ConversationID: conv}))
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	conv := chi.URLParam(r, "convId")
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.DeleteConversation{AccountID: acc, ConversationID: conv}))
}

func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.ListNotifications{AccountID: acc}))
}

func (s *Server) markNotificationsRead(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.MarkNotificationsRead{AccountID: acc}))
}

func (s *Server) deleteNotifications(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.DeleteNotifications{AccountID: acc}))
}

// target reads the agent of the {id} path parameter and the caller's
// account.
func (s *Server) target(r *http.Request) (id, account string, err error) {
	id, err = agentID(r, "id")
	if err != nil {
		return "", "", err
	}
	return id, accountFrom(r.Context()).ID, nil
}

// written writes an agent's answer with status, or returns its error: use
// it around ask, written(w, http.StatusOK)(ask(ctx, s, id, msg)). An
// agent.None answer is the status with an empty body.
func written(w http.ResponseWriter, status int) func(v any, err error) error {
	return func(v any, err error) error {
		if err != nil {
			return err
		}
		if _, none := v.(agent.None); none {
			w.WriteHeader(status)
			return nil
		}
		writeJSON(w, status, v)
		return nil
	}
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
	v, err := ask(r.Context(), s, id, &agent.Attest{AccountID: accountFrom(r.Context()).ID, Nonce: nonce})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// SetPolicyRequest is the body of PUT /agent/:id/policy.
type SetPolicyRequest struct {
	Policy    *policy.Policy `json:"policy"`
	Signature string         `json:"signature"`
	Message   string         `json:"message"`
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := s.target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(ask(r.Context(), s, to, &agent.GetPolicy{AccountID: acc}))
}

func (s *Server) setPolicy(w http.ResponseWriter, r *http.Request) error {
	id, err := agentID(r, "id")
	if err != nil {
		return err
	}
	var req SetPolicyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Policy == nil {
		return Errorf(http.StatusBadRequest, "policy is required: send {\"policy\": {...}, \"signature\", \"message\"} (an empty policy {} removes every limit)")
	}
	v, err := ask(r.Context(), s, id, &agent.SetPolicy{AccountID: accountFrom(r.Context()).ID, Policy: *req.Policy, Signature: req.Signature, Message: req.Message})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
