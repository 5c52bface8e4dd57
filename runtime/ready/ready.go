// Package ready is veild's readiness: a set of named checks (store
// reachable, every chain's node answering with a fresh head, enclave ready,
// cluster member in the topology) run together on each GET /readyz.
//
// Any component adds its own condition with Checker.Add: a type with a
// Name and a Check(ctx) error, or ready.Func. A check returns nil when it is
// ready and otherwise an error that says what is wrong and what to do
// (it is shown to operators in the 503 body). docs/operations.md lists the
// built-in checks.
package ready

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Check is one readiness condition.
type Check interface {
	// Name identifies the check in the report ("store", "chain/base").
	Name() string
	// Check returns nil when ready. It must return when ctx ends.
	Check(ctx context.Context) error
}

// Warning marks err as a condition to report without failing readiness: a
// check that returns Warning(err) shows ok with the warning in its result
// and in the report's warnings, and the report stays ready. It is for a
// component whose trouble should reach operators but must not take the
// whole server out of a load balancer (a relayer running low: the chains
// and every other payment still serve).
func Warning(err error) error {
	if err == nil {
		return nil
	}
	return warning{err}
}

type warning struct{ err error }

func (w warning) Error() string { return w.err.Error() }
func (w warning) Unwrap() error { return w.err }

// Func makes a Check of a function.
func Func(name string, fn func(ctx context.Context) error) Check { return funcCheck{name, fn} }

type funcCheck struct {
	name string
	fn   func(ctx context.Context) error
}

func (f funcCheck) Name() string                    { return f.name }
func (f funcCheck) Check(ctx context.Context) error { return f.fn(ctx) }

// DefaultTimeout bounds each check of a run.
const DefaultTimeout = 5 * time.Second

// Checker runs the registered checks. The zero value is usable; it is safe
// for concurrent use, and checks may be added while it serves.
type Checker struct {
	// Timeout bounds each check; 0 means DefaultTimeout.
	Timeout time.Duration

	mu     sync.Mutex
	checks []Check
}

// Add registers checks. A name registered twice is reported twice.
func (c *Checker) Add(checks ...Check) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks = append(c.checks, checks...)
}

// Result is one check's outcome.
type Result struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Warning is set when the check passed with a warning (Warning).
	Warning string `json:"warning,omitempty"`
	// Millis is how long the check took.
	Millis int64 `json:"ms"`
}

// Report is a run of every check: Ready when all passed.
type Report struct {
	Ready bool `json:"ready"`
	// Status is "ready" or "not ready".
	Status string   `json:"status"`
	Checks []Result `json:"checks"`
	// Failing names the failed checks (empty when ready).
	Failing []string `json:"failing"`
	// Warnings names the checks that passed with a warning; they do not
	// make the report not ready.
	Warnings []string `json:"warnings"`
}

// Run runs every check concurrently, each bounded by the timeout, and
// reports them in name order.
func (c *Checker) Run(ctx context.Context) Report {
	c.mu.Lock()
	checks := append([]Check(nil), c.checks...)
	c.mu.Unlock()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	results := make([]Result, len(checks))
	var wg sync.WaitGroup
	for i, ch := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = run(ctx, ch, timeout)
		}()
	}
	wg.Wait()
	sort.SliceStable(results, func(i, j int) bool { return results[i].Name < results[j].Name })
	r := Report{Ready: true, Status: "ready", Checks: results, Failing: []string{}, Warnings: []string{}}
	for _, res := range results {
		if res.Warning != "" {
			r.Warnings = append(r.Warnings, res.Name)
		}
		if !res.OK {
			r.Ready, r.Status = false, "not ready"
			r.Failing = append(r.Failing, res.Name)
		}
	}
	return r
}

func run(ctx context.Context, ch Check, timeout time.Duration) Result {
	res := Result{Name: ch.Name()}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("check panicked: %v", p)
			}
		}()
		done <- ch.Check(ctx)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// A check that ignores ctx must not hold the probe.
		err = ctx.Err()
	}
	res.Millis = time.Since(start).Milliseconds()
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		err = fmt.Errorf("no answer within %s", timeout)
	}
	var w warning
	if errors.As(err, &w) {
		res.OK, res.Warning = true, err.Error()
		return res
	}
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.OK = true
	return res
}

// ServeHTTP answers 200 with the report when every check passes, else 503
// with it: {"ready", "status", "checks": [{name, ok, error, warning, ms}],
// "failing", "warnings"}.
func (c *Checker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep := c.Run(r.Context())
	code := http.StatusOK
	if !rep.Ready {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(rep)
}
