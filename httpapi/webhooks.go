package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/webhook"
)

func viewOf(w *webhook.Webhook, withSecret bool) WebhookView {
	v := WebhookView{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: w.CreatedAt}
	if v.Events == nil {
		v.Events = []string{}
	}
	if w.AgentID != "" {
		id := w.AgentID
		v.AgentID = &id
	}
	if withSecret {
		v.Secret = w.Secret
	}
	return v
}

func (s *Server) webhookRoutes(r chi.Router) {
	r.Method(http.MethodPost, "/webhooks", handler(s.createWebhook))
	r.Method(http.MethodGet, "/webhooks", handler(s.listWebhooks))
	r.Method(http.MethodDelete, "/webhooks/{webhookId}", handler(s.deleteWebhook))
	r.Method(http.MethodPost, "/webhooks/{webhookId}/test", handler(s.testWebhook))
	r.Method(http.MethodGet, "/webhooks/{webhookId}/deliveries", handler(s.webhookDeliveries))
}

func (s *Server) webhooks() *webhook.Registry { return webhook.NewRegistry(s.store, s.now) }

func webhookError(err error) error {
	switch {
	case errors.Is(err, webhook.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Message: "webhook not found", Err: err}
	case errors.Is(err, webhook.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	case errors.Is(err, webhook.ErrTooMany):
		return &Error{Status: http.StatusConflict, Message: err.Error(), Err: err}
	}
	return err
}

// webhookID reads the {webhookId} path parameter; anything but a UUID is a
// webhook that does not exist.
func webhookID(r *http.Request) (string, error) { return pathID(r, "webhookId", "webhook") }

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req CreateWebhookRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	url, err := webhook.CheckURL(req.URL, s.webhookAllowPrivate)
	if err != nil {
		return webhookError(err)
	}
	events, err := checkEventTypes(req.Events)
	if err != nil {
		return err
	}
	acc := accountID(r)
	if req.AgentID != "" {
		if !isUUID(req.AgentID) {
			return Errorf(http.StatusBadRequest, "agentId %q is not an agent id (a UUID); leave it out to receive every agent's events", truncate(req.AgentID, 40))
		}
		// The agent must be the caller's: another account's is not found.
		if _, err := ask(r.Context(), s, req.AgentID, &agent.Get{AccountID: acc}); err != nil {
			return err
		}
	}
	hook, err := s.webhooks().Create(r.Context(), acc, url, events, req.AgentID)
	if err != nil {
		return webhookError(err)
	}
	return private(w, http.StatusCreated)(viewOf(hook, true), nil)
}

// checkEventTypes validates and deduplicates the subscribed types; none
// means every type.
func checkEventTypes(in []string) ([]string, error) {
	if len(in) > webhook.MaxEvents {
		return nil, Errorf(http.StatusBadRequest, "events names %d types; at most %d", len(in), webhook.MaxEvents)
	}
	known := map[string]bool{}
	for _, t := range agent.EventTypes() {
		known[t] = true
	}
	out := []string{}
	seen := map[string]bool{}
	for _, t := range in {
		t = strings.TrimSpace(t)
		if !known[t] {
			return nil, Errorf(http.StatusBadRequest, "unknown event type %q: use any of %s, or leave events out for all", truncate(t, 40), strings.Join(agent.EventTypes(), ", "))
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, err := s.webhooks().List(r.Context(), accountID(r))
	if err != nil {
		return err
	}
	out := make([]WebhookView, 0, len(hooks))
	for i := range hooks {
		out = append(out, viewOf(&hooks[i], false))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := webhookID(r)
	if err != nil {
		return err
	}
	if err := s.webhooks().Delete(r.Context(), accountID(r), id); err != nil {
		return webhookError(err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// testWebhook queues a "test" event for this webhook; the deliverer sends
// it within a second or so, and GET …/deliveries shows the outcome.
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := webhookID(r)
	if err != nil {
		return err
	}
	d, err := s.webhooks().Test(r.Context(), accountID(r), id)
	if err != nil {
		return webhookError(err)
	}
	writeJSON(w, http.StatusAccepted, deliveryView(d))
	return nil
}

func deliveryView(d *webhook.Delivery) DeliveryView {
	v := DeliveryView{ID: d.EventID, Type: d.Type, Status: d.Status, Attempts: d.Attempts,
		NextAttemptAt: d.NextAttemptAt, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt}
	if d.AgentID != "" {
		v.AgentID = &d.AgentID
	}
	if d.LastStatusCode != 0 {
		v.LastStatusCode = &d.LastStatusCode
	}
	if d.LastError != "" {
		v.LastError = &d.LastError
	}
	return v
}

const maxDeliveries = 100

func (s *Server) webhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	id, err := webhookID(r)
	if err != nil {
		return err
	}
	limit := maxDeliveries
	if q := r.URL.Query().Get("limit"); q != "" {
		var n int
		if _, err := fmt.Sscanf(q, "%d", &n); err != nil || n < 1 || n > maxDeliveries || fmt.Sprint(n) != q {
			return Errorf(http.StatusBadRequest, "limit must be a whole number from 1 to %d", maxDeliveries)
		}
		limit = n
	}
	ds, err := s.webhooks().Deliveries(r.Context(), accountID(r), id, limit)
	if err != nil {
		return webhookError(err)
	}
	out := make([]DeliveryView, 0, len(ds))
	for i := range ds {
		out = append(out, deliveryView(&ds[i]))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
