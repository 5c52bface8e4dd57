package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/runtime/audit"
)

// The keys API (docs/api.md "API keys"): an admin key creates, lists,
// revokes and rotates its account's keys while the server runs; the
// operator (an admin key of the bootstrap account) also those of any
// account, named with account=NAME. Only hashes are stored; a key's text
// is answered once, by create and rotate.

func (s *Server) keyRoutes(r chi.Router) {
	r.Method(http.MethodGet, "/keys", handler(s.listKeys))
	r.Method(http.MethodPost, "/keys", handler(s.createKey))
	r.Method(http.MethodGet, "/keys/{keyId}", handler(s.getKey))
	r.Method(http.MethodDelete, "/keys/{keyId}", handler(s.revokeKey))
	r.Method(http.MethodPost, "/keys/{keyId}/rotate", handler(s.rotateKey))
	r.Method(http.MethodGet, "/audit", handler(s.listAudit))
}

// The keys API's wire types are the Go client's (wire.go's rule).
type (
	// APIKey is a key as the API shows it; Secret only in the answer of
	// create and rotate.
	APIKey = client.APIKey
	// CreateKeyRequest is POST /keys's body.
	CreateKeyRequest = client.CreateKeyRequest
	// RotatedKey is POST /keys/{keyId}/rotate's answer.
	RotatedKey = client.RotatedKey
)

func wireLimit(l *apikey.Limit) *client.KeyRateLimit {
	if l == nil {
		return nil
	}
	return &client.KeyRateLimit{PerSecond: l.PerSecond, Burst: l.Burst}
}

func (s *Server) keyView(k apikey.Key, accName string) APIKey {
	v := APIKey{ID: k.ID, Name: k.Name, Scope: string(k.Scope), Account: accName, Test: k.Test, CreatedAt: k.CreatedAt,
		ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, RateLimit: wireLimit(k.RateLimit), Status: "active"}
	if k.RotatedTo != "" {
		id := k.RotatedTo
		v.RotatedTo = &id
	}
	switch {
	case k.RevokedAt != nil:
		v.Status = "revoked"
	case k.ExpiresAt != nil && !s.now().Before(*k.ExpiresAt):
		v.Status = "expired"
	}
	return v
}

func keyError(err error) error {
	switch {
	case errors.Is(err, apikey.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Message: "API key not found", Err: err}
	case errors.Is(err, apikey.ErrInvalid), errors.Is(err, apikey.ErrBadName):
		return &Error{Status: http.StatusBadRequest, Message: strings.TrimPrefix(strings.TrimPrefix(err.Error(), "apikey: "), "invalid key settings: "), Err: err}
	}
	return err
}

// accountParam is the account a keys or audit request is about: the
// caller's, or (operator only) the one ?account= names.
func (s *Server) accountParam(r *http.Request) (apikey.Account, error) {
	name := r.URL.Query().Get("account")
	return s.accountNamed(r, name, false)
}

func (s *Server) accountNamed(r *http.Request, name string, create bool) (apikey.Account, error) {
	acc := accountFrom(r.Context())
	if name == "" || name == acc.Name {
		return acc, nil
	}
	if !apikey.IsOperator(acc, keyFrom(r.Context())) {
		return apikey.Account{}, Errorf(http.StatusForbidden, "only an admin key of the %q account may manage another account", apikey.BootstrapAccount)
	}
	if create {
		a, err := apikey.EnsureAccount(r.Context(), s.store, name, s.now())
		return a, keyError(err)
	}
	a, err := apikey.AccountByName(r.Context(), s.store, name)
	return a, keyError(err)
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	acc, err := s.accountParam(r)
	if err != nil {
		return err
	}
	keys, err := apikey.List(r.Context(), s.store, acc.ID)
	if err != nil {
		return err
	}
	out := make([]APIKey, 0, len(keys))
	for _, k := range keys {
		k.Scope = apikey.EffectiveScope(acc, k)
		out = append(out, s.keyView(k, acc.Name))
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	var req CreateKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Name) == "" {
		return Errorf(http.StatusBadRequest, "name is required: say what the key is for (e.g. \"ci\", \"billing bot\")")
	}
	scope, err := apikey.ParseScope(req.Scope)
	if req.Scope == "" {
		return Errorf(http.StatusBadRequest, "scope is required: one of read, chat, full, admin")
	}
	if err != nil {
		return keyError(err)
	}
	o := apikey.Options{Name: strings.TrimSpace(req.Name), Scope: scope, ExpiresAt: req.ExpiresAt, Test: req.Test}
	if l := req.RateLimit; l != nil {
		o.RateLimit = &apikey.Limit{PerSecond: l.PerSecond, Burst: l.Burst}
	}
	if req.ExpiresIn != "" {
		if req.ExpiresAt != nil {
			return Errorf(http.StatusBadRequest, "give expiresAt or expiresIn, not both")
		}
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil || d <= 0 {
			return Errorf(http.StatusBadRequest, "expiresIn %q is not a positive duration (e.g. \"720h\")", truncate(req.ExpiresIn, 40))
		}
		t := s.now().Add(d)
		o.ExpiresAt = &t
	}
	if err := o.Check(s.now()); err != nil {
		return keyError(err)
	}
	if req.Account != "" && !apikey.IsOperator(accountFrom(r.Context()), keyFrom(r.Context())) {
		return Errorf(http.StatusForbidden, "only an admin key of the %q account may create keys for another account", apikey.BootstrapAccount)
	}
	acc, err := s.accountNamed(r, req.Account, true)
	if err != nil {
		return err
	}
	keys, err := apikey.List(r.Context(), s.store, acc.ID)
	if err != nil {
		return err
	}
	live := 0
	for _, k := range keys {
		if k.RevokedAt == nil {
			live++
		}
	}
	if live >= apikey.MaxKeysPerAccount {
		return Errorf(http.StatusConflict, "account %q has %d live keys, the most it may have: revoke one first", acc.Name, live)
	}
	secret, k, err := apikey.Issue(r.Context(), s.store, acc, o, s.now())
	if err != nil {
		return keyError(err)
	}
	auditNote(r, func(rec *audit.Record) {
		rec.Detail = "created key " + k.ID + " (" + k.Name + ", scope " + string(k.Scope) + ") for account " + acc.Name
	})
	v := s.keyView(k, acc.Name)
	v.Secret = secret
	return private(w, http.StatusCreated)(v, nil)
}

// keyParam reads {keyId} and the key, which must be the caller's account's
// (any account's for the operator).
func (s *Server) keyParam(r *http.Request) (apikey.Key, apikey.Account, error) {
	id := chi.URLParam(r, "keyId")
	caller := accountFrom(r.Context())
	scopeAcc := caller.ID
	if apikey.IsOperator(caller, keyFrom(r.Context())) {
		scopeAcc = ""
	}
	k, err := apikey.Get(r.Context(), s.store, scopeAcc, id)
	if err != nil {
		return apikey.Key{}, apikey.Account{}, keyError(err)
	}
	acc := caller
	if k.AccountID != caller.ID {
		if acc, err = apikey.AccountByID(r.Context(), s.store, k.AccountID); err != nil {
			return apikey.Key{}, apikey.Account{}, err
		}
	}
	k.Scope = apikey.EffectiveScope(acc, k)
	return k, acc, nil
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request) error {
	k, acc, err := s.keyParam(r)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, s.keyView(k, acc.Name))
	return nil
}

// revokeKey revokes at once: every member of a cluster reads keys from
// the shared store on every request, so the next request with it is
// refused everywhere. The account's last active admin key is kept, so an
// account cannot lock itself out of its keys (veild apikey create, with
// the server stopped, is the way back).
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	k, acc, err := s.keyParam(r)
	if err != nil {
		return err
	}
	if k.RevokedAt == nil && k.Scope == apikey.ScopeAdmin {
		keys, err := apikey.List(r.Context(), s.store, acc.ID)
		if err != nil {
			return err
		}
		others := 0
		for _, o := range keys {
			if o.ID != k.ID && o.RevokedAt == nil && apikey.EffectiveScope(acc, o) == apikey.ScopeAdmin && s.keyView(o, "").Status == "active" {
				others++
			}
		}
		if others == 0 {
			return Errorf(http.StatusConflict, "key %s is account %q's last active admin key: create another admin key before revoking it", k.ID, acc.Name)
		}
	}
	k, err = apikey.Revoke(r.Context(), s.store, acc.ID, k.ID, s.now())
	if err != nil {
		return keyError(err)
	}
	k.Scope = apikey.EffectiveScope(acc, k)
	auditNote(r, func(rec *audit.Record) {
		rec.Detail = "revoked key " + k.ID + " (" + k.Name + ") of account " + acc.Name
	})
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, s.keyView(k, acc.Name))
	return nil
}

func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request) error {
	k, acc, err := s.keyParam(r)
	if err != nil {
		return err
	}
	secret, nk, old, err := apikey.Rotate(r.Context(), s.store, acc.ID, k.ID, s.now())
	if err != nil {
		return keyError(err)
	}
	old.Scope = apikey.EffectiveScope(acc, old)
	auditNote(r, func(rec *audit.Record) {
		rec.Detail = "rotated key " + old.ID + " to " + nk.ID + " (" + nk.Name + ") of account " + acc.Name
	})
	v := s.keyView(nk, acc.Name)
	v.Secret = secret
	return private(w, http.StatusCreated)(RotatedKey{Key: v, Revoked: s.keyView(old, acc.Name)}, nil)
}
