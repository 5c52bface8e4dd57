package httpapi

import (
	"github.com/go-chi/chi/v5"
)

// agentRoutes mounts the agent endpoints of the spec.
func (s *Server) agentRoutes(r chi.Router) {
}
