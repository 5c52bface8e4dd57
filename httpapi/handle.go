package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"reflect"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
)

// The steps the handlers share, each written once: read an id from the
// path, read the agent of {id} with the caller's account, decode the body,
// ask the agent, write its answer. A handler calls them in the order its
// rules are checked (which error answers when several apply) and states
// only its own rules in between; an endpoint whose only rule is its
// message is asks.

// ask sends m to the agent with this id and returns its answer as the type
// m declares (agent.Request[R]), with the agent's domain errors mapped to
// the API's. An answer of another type, or no value where one is due, is a
// protocol mismatch between this layer and the agent's messages (or a
// codec that decoded another type): a 500 whose log line names both types,
// never a panic.
func ask[R any](ctx context.Context, s *Server, id string, m agent.Request[R]) (R, error) {
	return askMapped(ctx, s, id, m, apiError)
}

// askMoney is ask for the invoice and schedule messages, whose errors
// moneyError maps.
func askMoney[R any](ctx context.Context, s *Server, id string, m agent.Request[R]) (R, error) {
	return askMapped(ctx, s, id, m, moneyError)
}

// askMapped is ask with the error mapping mapErr.
func askMapped[R any](ctx context.Context, s *Server, id string, m agent.Request[R], mapErr func(error) error) (R, error) {
	v, err := call(ctx, s, id, m)
	if err != nil {
		return v, mapErr(err)
	}
	return v, nil
}

// call is ask without the error mapping.
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

// isUUID reports an id in the form the server issues them (a UUID in its
// canonical text); any other text names nothing.
func isUUID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// pathID reads a path parameter that must be an id the server issued;
// anything else is a 404 "<what> not found", answered without activating
// an actor.
func pathID(r *http.Request, param, what string) (string, error) {
	id := chi.URLParam(r, param)
	if !isUUID(id) {
		return "", Errorf(http.StatusNotFound, "%s not found", what)
	}
	return id, nil
}

// agentID reads a path parameter that must be an agent id.
func agentID(r *http.Request, param string) (string, error) { return pathID(r, param, "agent") }

// accountID is the caller's account.
func accountID(r *http.Request) string { return accountFrom(r.Context()).ID }

// target reads the agent of the {id} path parameter and the caller's
// account.
func target(r *http.Request) (id, account string, err error) {
	id, err = agentID(r, "id")
	if err != nil {
		return "", "", err
	}
	return id, accountID(r), nil
}

// targetBody is target, then the JSON body into v.
func targetBody(r *http.Request, v any) (id, account string, err error) {
	id, account, err = target(r)
	if err != nil {
		return "", "", err
	}
	if err := decodeJSON(r, v); err != nil {
		return "", "", err
	}
	return id, account, nil
}

// ownAgent reads the agent of {id}, which must be the caller's: another
// account's, or none, is the 404 of every agent endpoint.
func (s *Server) ownAgent(r *http.Request) (id string, rec *agent.Record, err error) {
	id, acc, err := target(r)
	if err != nil {
		return "", nil, err
	}
	rec, err = ask(r.Context(), s, id, &agent.Get{AccountID: acc})
	return id, rec, err
}

// asks is the handler of an endpoint under /agent/{id} that asks the agent
// one message and answers what it answers, with status: msg reads the
// message from the request for the caller's account, and its error is the
// answer. msg's rules are checked before the agent id (a sub-resource's
// 404, a query's or body's 400, come first).
func asks[M agent.Request[R], R any](s *Server, status int, msg func(r *http.Request, account string) (M, error)) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		m, err := msg(r, accountID(r))
		if err != nil {
			return err
		}
		to, err := agentID(r, "id")
		if err != nil {
			return err
		}
		return written(w, status)(ask[R](r.Context(), s, to, m))
	}
}

// written writes an answer with status, or returns its error: use it
// around ask, written(w, http.StatusOK)(ask(ctx, s, id, msg)). An
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

// private is written for an answer no cache may keep (a key, a secret, a
// text to sign now): Cache-Control: no-store on a success.
func private(w http.ResponseWriter, status int) func(v any, err error) error {
	return func(v any, err error) error {
		if err == nil {
			w.Header().Set("Cache-Control", "no-store")
		}
		return written(w, status)(v, err)
	}
}
