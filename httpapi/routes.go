package httpapi

import "github.com/go-chi/chi/v5"

// Routes exposes the router for inspection (chi.Walk), as the OpenAPI test
// does; serving goes through ServeHTTP.
func (s *Server) Routes() chi.Routes { return s.router }
