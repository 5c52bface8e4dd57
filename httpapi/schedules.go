package httpapi

import (
	"net/http"

	"github.com/veilhq/veil/actors/agent"
)

// listSchedules is GET /agent/:id/schedules: every schedule of the agent,
// oldest first.
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	to, acc, err := target(r)
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(askMoney(r.Context(), s, to, &agent.ListSchedules{AccountID: acc}))
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
	to, acc, err := target(r)
	if err != nil {
		return err
	}
	sid, err := pathID(r, "scheduleId", "schedule")
	if err != nil {
		return err
	}
	return written(w, http.StatusOK)(askMoney(r.Context(), s, to, &agent.ScheduleAction{AccountID: acc, ScheduleID: sid, Action: action}))
}
