// Package failpoint is Veil's one fault-injection mechanism, in the style
// of etcd's gofail: the code names its dangerous steps (after a transaction
// is signed, before a group commit reaches the disk, ...) and calls a Hook
// there; only tests enable a hook. Production code passes none, and a nil
// Hook does nothing.
//
// A failpoint's name is its component and its step, "evm.after-sign",
// "commit.before-commit": each package declares its names as constants
// beside the code that hits them. Two kinds of test enable them:
//
//   - a package's own test passes a Hook (a func) in the component's
//     options; an error it returns aborts the step right there, as a
//     crash would (the step does not finish, the caller gets the error);
//
//   - the robustness test of veild (cmd/veild/robustness_test.go) arms a
//     Set from the environment: an armed failpoint ends the process there,
//     at random, with the exit status of a SIGKILL (Set.Hook).
//
//     VEIL_FAILPOINTS=evm.after-broadcast,commit.before-commit=0.01  # or "all"
//     VEIL_FAILPOINT_PROB=0.05   # default probability per hit
//     VEIL_FAILPOINT_SEED=42     # default: random (logged)
package failpoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hook is the one signature of a failpoint hook: called with the name of
// the step the code reached. A nil Hook does nothing.
type Hook func(name string) error

// Hit calls h at the failpoint name, if h is set. The caller returns a
// non-nil error from the step unchanged, without finishing it.
func (h Hook) Hit(name string) error {
	if h == nil {
		return nil
	}
	return h(name)
}

// The environment variables FromEnv reads.
const (
	EnvNames = "VEIL_FAILPOINTS"
	EnvProb  = "VEIL_FAILPOINT_PROB"
	EnvSeed  = "VEIL_FAILPOINT_SEED"
)

// ExitCode is the status a fired failpoint exits with: 128+SIGKILL, what a
// shell reports for a killed process, since a fired failpoint stands for one.
const ExitCode = 137

// DefaultProb is the probability of firing per hit when neither the name
// nor VEIL_FAILPOINT_PROB gives one.
const DefaultProb = 0.05

// Marker starts the line a fired failpoint writes to stderr before it
// exits: "<Marker><name>". Tests count kills per failpoint by it.
const Marker = "veil failpoint fired: "

// ErrSpec reports a malformed VEIL_FAILPOINTS, VEIL_FAILPOINT_PROB or
// VEIL_FAILPOINT_SEED.
var ErrSpec = errors.New("bad failpoint setting")

// Set is the armed failpoints of a process. A nil *Set arms nothing; its
// methods are safe to call.
type Set struct {
	prob map[string]float64 // armed name -> probability per hit
	seed uint64

	mu   sync.Mutex
	rng  *rand.Rand
	fire func(name string)
}

// FromEnv reads the three variables through getenv. It returns nil, nil
// when VEIL_FAILPOINTS is unset or empty. known is every name the caller
// has a hook for; any other name is an error, so a typo cannot leave a
// test silently unarmed.
func FromEnv(getenv func(string) string, known []string) (*Set, error) {
	spec := strings.TrimSpace(getenv(EnvNames))
	if spec == "" {
		return nil, nil
	}
	return Parse(spec, getenv(EnvProb), getenv(EnvSeed), known)
}

// Parse builds a Set from a comma-separated list of names, each optionally
// "=probability" ("all" arms every known name), a default probability
// ("" is DefaultProb) and a seed ("" picks one from the clock).
func Parse(spec, prob, seed string, known []string) (*Set, error) {
	def := DefaultProb
	if p := strings.TrimSpace(prob); p != "" {
		var err error
		if def, err = parseProb(p); err != nil {
			return nil, fmt.Errorf("%w: %s=%q: %w", ErrSpec, EnvProb, prob, err)
		}
	}
	s := &Set{prob: map[string]float64{}, fire: exit}
	if sd := strings.TrimSpace(seed); sd != "" {
		v, err := strconv.ParseUint(sd, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s=%q: want an unsigned integer", ErrSpec, EnvSeed, seed)
		}
		s.seed = v
	} else {
		s.seed = uint64(time.Now().UnixNano())
	}
	s.rng = rand.New(rand.NewPCG(s.seed, 0x7665696c)) // "veil"
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, ps, hasProb := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		p := def
		if hasProb {
			var err error
			if p, err = parseProb(strings.TrimSpace(ps)); err != nil {
				return nil, fmt.Errorf("%w: %s: %q: %w", ErrSpec, EnvNames, item, err)
			}
		}
		switch {
		case name == "all":
			for _, k := range known {
				if _, set := s.prob[k]; !set {
					s.prob[k] = p
				}
			}
		case slices.Contains(known, name):
			s.prob[name] = p
		default:
			return nil, fmt.Errorf("%w: %s: unknown failpoint %q (known: %s)", ErrSpec, EnvNames, name, strings.Join(known, ", "))
		}
	}
	if len(s.prob) == 0 {
		return nil, fmt.Errorf("%w: %s=%q names no failpoint", ErrSpec, EnvNames, spec)
	}
	return s, nil
}

func parseProb(s string) (float64, error) {
	p, err := strconv.ParseFloat(s, 64)
	if err != nil || !(p >= 0 && p <= 1) { // !(…) also rejects NaN
		return 0, errors.New("want a probability from 0 to 1")
	}
	return p, nil
}

// Hit is what the Set does at failpoint name: when name is armed, it ends
// the process with probability p. It returns when the failpoint does not fire.
func (s *Set) Hit(name string) {
	if s == nil {
		return
	}
	p, armed := s.prob[name]
	if !armed || p == 0 {
		return
	}
	// One generator under a lock: a seed then replays the same sequence of
	// decisions for the same sequence of hits.
	s.mu.Lock()
	fire := s.rng.Float64() < p
	f := s.fire
	s.mu.Unlock()
	if fire {
		f(name)
	}
}

// Hook is the set as a hook for the components (nil when s is nil, so
// that an unarmed process runs exactly as in production). It never
// returns an error: a failpoint that fires ends the process.
func (s *Set) Hook() Hook {
	if s == nil {
		return nil
	}
	return func(name string) error { s.Hit(name); return nil }
}

// Armed lists the armed names with their probabilities, sorted by name.
func (s *Set) Armed() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.prob))
	for n, p := range s.prob {
		out = append(out, n+"="+strconv.FormatFloat(p, 'g', -1, 64))
	}
	slices.Sort(out)
	return out
}

// Seed is the seed of the decisions, to replay a run.
func (s *Set) Seed() uint64 {
	if s == nil {
		return 0
	}
	return s.seed
}

// OnFire replaces what a firing failpoint does (by default: write the
// marker line to stderr and exit with ExitCode). Tests of this package use
// it; call it before the Set is shared.
func (s *Set) OnFire(f func(name string)) { s.fire = f }

// exit ends the process as abruptly as the Go runtime allows: no deferred
// calls, no flushing, no shutdown. One write(2) for the marker line, so it
// is whole on stderr.
func exit(name string) {
	_, _ = os.Stderr.WriteString(Marker + name + "\n")
	os.Exit(ExitCode)
}
