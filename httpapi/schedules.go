package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
)

// listSchedules is GET /agent/:id/schedules: every schedule of the agent,
// oldest first.
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	id, err := agentID(r, "id")
	if err != nil {
		return err
	}
	v, err := call(r.Context(), s, id, &agent.ListSchedules{AccountID: accountFrom(r.Context()).ID})
	if err != nil {
		return moneyError(err)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// scheduleAction is POST /agent/:id/schedules/:scheduleId/{pause,resume,
// cancel}: the Schedule after the change; 409 when its status does not
// allow the action.
func (s *Server) scheduleAction(action string) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		return s.doScheduleAction(w, r, action)
	}
}

func (s *Server) doScheduleAction(w http.ResponseWriter, r *http.Request, action string) error {
	id, err := agentID(r, "id")
	if err != nil {
		return err
	}
	sid := chi.URLParam(r, "scheduleId")
	if u, err := uuid.Parse(sid); err != nil || u.String() != sid {
		return Errorf(http.StatusNotFound, "schedule not found")
	}
	v, err := call(r.Context(), s, id, &agent.ScheduleAction{AccountID: accountFrom(r.Context()).ID, ScheduleID: sid, Action: action})
	if err != nil {
		return moneyError(err)
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
