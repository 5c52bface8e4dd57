// Package devserver is what the embedded Stellar and Solana devnets share
// that is not the chain: their Options, the store Open opens when the
// caller gives none, the order of start-up (load or create the ledger,
// serve, bootstrap), the ops that write the ledger's entries, the HTTP
// server's stop and the stand-in of a build without them.
package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// Options configures a devnet's Start.
type Options struct {
	// Store keeps the ledger. When nil, Start opens a bbolt file in Dir
	// (<chain>-devnet.db) and closes it on Close.
	Store persistence.Store
	// Dir is where the store lives when Store is nil. Required then.
	Dir string
	// Addr is the listen address (default 127.0.0.1:0, a free port).
	Addr string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives the devnet's events (default slog.Default()).
	Log *slog.Logger
}

// Server is a devnet's store and HTTP server.
type Server struct {
	pkg      string // the devnet package's name, for errors
	addr     string // where Start listens
	log      *slog.Logger
	store    persistence.Store
	ownStore bool

	srv       *http.Server
	done      chan struct{}
	closeOnce sync.Once
}

// Open applies opts' defaults (in place) and opens the store of the
// devnet of package pkg ("stellardev") and chain ("stellar") when opts
// gives none; opts.Store is then that store, and opts.Log names the chain
// ("devnet"="stellar") in every event.
func Open(opts *Options, pkg, chain string) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	opts.Log = opts.Log.With("devnet", chain)
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	s := &Server{pkg: pkg, addr: opts.Addr, log: opts.Log, store: opts.Store, done: make(chan struct{})}
	if s.store == nil {
		if opts.Dir == "" {
			return nil, fmt.Errorf("%s: Options.Store or Options.Dir is required", pkg)
		}
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("%s: %w", pkg, err)
		}
		st, err := persistence.OpenBolt(filepath.Join(opts.Dir, chain+"-devnet.db"), persistence.BoltOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pkg, err)
		}
		s.store, s.ownStore = st, true
		opts.Store = st
	}
	return s, nil
}

// Ledger is the chain that Start brings up.
type Ledger struct {
	// Load reads the ledger from the store, or writes its genesis there.
	Load func(context.Context) error
	// Handler serves the chain's API.
	Handler http.Handler
	// Bootstrap creates, with real transactions, what a fresh ledger
	// lacks (it finds nothing to do on a ledger that has it).
	Bootstrap func(context.Context) error
}

// Start loads l, serves l.Handler on Options.Addr until Close and
// bootstraps l; it returns the base URL ("http://127.0.0.1:port"). On
// failure it has closed the server and the store it opened.
func (s *Server) Start(ctx context.Context, l Ledger) (string, error) {
	if err := l.Load(ctx); err != nil {
		_ = s.Close()
		return "", err
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		_ = s.Close()
		return "", fmt.Errorf("%s: listen %s: %w", s.pkg, s.addr, err)
	}
	s.srv = &http.Server{Handler: l.Handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}()
	if err := l.Bootstrap(ctx); err != nil {
		_ = s.Close()
		return "", err
	}
	return "http://" + ln.Addr().String(), nil
}

// Close stops serving and closes the store if Open opened it.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if s.srv != nil {
			err = s.srv.Shutdown(ctx)
			<-s.done
		}
		if s.ownStore {
			err = errors.Join(err, s.store.Close())
		}
	})
	return err
}

// PutOrDelete is the op that writes v as JSON at key, or deletes key when
// v is nil (an entry the transaction removed).
func PutOrDelete[T any](table, key string, v *T) persistence.Op {
	if v == nil {
		return persistence.Delete(table, key, persistence.Any())
	}
	val, _ := json.Marshal(v)
	return persistence.Put(table, key, val, persistence.Any())
}

// Absent is the devnet of a binary built without it (-tags nodevnet); C
// is the connector's Config type. It is never created: Start returns
// Unavailable.
type Absent[C any] struct{}

// URL is empty.
func (*Absent[C]) URL() string { return "" }

// Config is the zero configuration.
func (*Absent[C]) Config() C {
	var c C
	return c
}

// Close does nothing.
func (*Absent[C]) Close() error { return nil }

// Unavailable is Start's error in a build without the devnet of chain
// ("Stellar"), whose network env names instead.
func Unavailable(chain, env string) error {
	return fmt.Errorf("%w: built with -tags nodevnet (no embedded %s devnet); set %s", chains.ErrUnavailable, chain, env)
}
