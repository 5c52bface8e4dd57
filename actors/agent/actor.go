package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime"
)

// ErrNotFound reports an agent that does not exist (or is not the caller's).
var ErrNotFound = errors.New("agent: not found")

// Deps are the services an agent actor uses.
type Deps struct {
	Store persistence.Store
	Log   *slog.Logger
}

// Loader returns the runtime's activation function for agent actors.
func Loader(d Deps) runtime.Loader {
	return func(ctx context.Context, id string) (runtime.Agent, error) {
		a := &Actor{deps: d, id: id}
		rec, err := d.Store.Get(ctx, TableAgents, id)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
			// Not created (yet): the actor answers not-found to everything
			// but a create message for its id.
		case err != nil:
			return nil, fmt.Errorf("agent %s: load: %w", id, err)
		default:
			if a.rec, err = decodeRecord(rec.Value); err != nil {
				return nil, err
			}
			a.version = rec.Version
		}
		return a, nil
	}
}

// Actor is one activated agent.
type Actor struct {
	deps    Deps
	id      string
	rec     *Record
	version uint64
}

// Receive handles one message.
func (a *Actor) Receive(ctx context.Context, msg any) (any, error) {
	switch msg.(type) {
	default:
		return nil, fmt.Errorf("agent %s: unknown message %T", a.id, msg)
	}
}
