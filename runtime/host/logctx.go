package host

import (
	"context"
	"log/slog"
)

type loggerKey struct{}

// WithLogger returns ctx carrying l. The HTTP layer puts a logger with the
// request id here, so actors log the request's id on every line they write
// while handling it.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// Logger returns the logger ctx carries, or fallback.
func Logger(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return fallback
}
