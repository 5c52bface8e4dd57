package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
)

// fixedAgents answers every request with v, err.
type fixedAgents struct {
	v   any
	err error
}

func (f fixedAgents) Request(context.Context, string, any) (any, error) { return f.v, f.err }

func TestAskChecksTheAnswersType(t *testing.T) {
	boom := errors.New("boom")
	rec := &agent.Record{ID: "a"}
	for _, tc := range []struct {
		name       string
		v          any
		err        error
		wantErr    string // "" = no error
		wantStatus int    // of a user-facing error
	}{
		{name: "right type", v: rec},
		{name: "error passes through", err: boom, wantErr: "boom"},
		{name: "domain error mapped", err: agent.ErrNotFound, wantErr: "agent not found", wantStatus: http.StatusNotFound},
		{name: "wrong type", v: "secret", wantErr: "answered string (nil: false) to *agent.Get, where a *agent.Record was expected"},
		{name: "no answer", wantErr: "answered <nil> (nil: true)"},
		{name: "typed nil answer", v: (*agent.Record)(nil), wantErr: "answered *agent.Record (nil: true)"},
	} {
		s := New(Config{Agents: fixedAgents{tc.v, tc.err}})
		got, err := ask(context.Background(), s, "id", &agent.Get{AccountID: "acc"})
		var he *Error
		switch {
		case tc.wantErr == "" && (err != nil || got != rec):
			t.Errorf("%s: ask = %v, %v", tc.name, got, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil):
			t.Errorf("%s: ask = %v, %v; want error %q", tc.name, got, err, tc.wantErr)
		case tc.wantStatus != 0 && (!errors.As(err, &he) || he.Status != tc.wantStatus):
			t.Errorf("%s: ask error %v; want status %d", tc.name, err, tc.wantStatus)
		}
	}
}

func TestAskAcceptsNoAnswerForNone(t *testing.T) {
	s := New(Config{Agents: fixedAgents{}})
	if _, err := ask(context.Background(), s, "id", &agent.MarkNotificationsRead{AccountID: "acc"}); err != nil {
		t.Fatalf("ask(MarkNotificationsRead) with a nil answer: %v", err)
	}
	s = New(Config{Agents: fixedAgents{v: &agent.Record{}}})
	if _, err := ask(context.Background(), s, "id", &agent.MarkNotificationsRead{AccountID: "acc"}); err == nil {
		t.Fatal("ask(MarkNotificationsRead) accepted a *agent.Record answer")
	}
}

// A wrong answer type reaches the client as a 500 in the error format and
// the log as a line naming both types; the handler does not panic.
func TestWrongAnswerTypeIsA500WithALogLine(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := New(Config{Agents: fixedAgents{v: "secret"}, Logger: log})
	r := chi.NewRouter()
	s.agentRoutes(r)
	req := httptest.NewRequest(http.MethodGet, "/agent/6f1c0c5e-6a4e-4d43-9d0c-6a1f1c2b3d4e/policy", nil)
	req = req.WithContext(context.WithValue(req.Context(), keyLogger, log))
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	var body errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusInternalServerError || body.StatusCode != 500 {
		t.Fatalf("got %d %s; want a 500 in the error format", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "secret") {
		t.Errorf("the answer leaked to the client: %s", w.Body)
	}
	if !strings.Contains(logs.String(), "protocol mismatch") || !strings.Contains(logs.String(), "*agent.PolicyView") {
		t.Errorf("log does not name the mismatch: %s", logs.String())
	}
}
