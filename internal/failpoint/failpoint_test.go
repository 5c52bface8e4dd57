package failpoint

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var known = []string{"evm.after-sign", "evm.after-broadcast", "commit.before-commit"}

func TestParse(t *testing.T) {
	tests := []struct {
		spec, prob, seed string
		want             []string // Armed(); nil means an error
	}{
		{"evm.after-sign", "", "1", []string{"evm.after-sign=0.05"}},
		{" evm.after-sign , commit.before-commit=0.5,", "0.2", "1", []string{"commit.before-commit=0.5", "evm.after-sign=0.2"}},
		{"all", "1", "", []string{"commit.before-commit=1", "evm.after-broadcast=1", "evm.after-sign=1"}},
		// An explicit probability wins over "all", in either order.
		{"evm.after-sign=0,all", "0.1", "", []string{"commit.before-commit=0.1", "evm.after-broadcast=0.1", "evm.after-sign=0"}},
		{"all,evm.after-sign=0", "0.1", "", []string{"commit.before-commit=0.1", "evm.after-broadcast=0.1", "evm.after-sign=0"}},
		{"evm.after-signed", "", "", nil},
		{"evm.after-sign=2", "", "", nil},
		{"evm.after-sign=-0.1", "", "", nil},
		{"evm.after-sign=NaN", "", "", nil},
		{"evm.after-sign=", "", "", nil},
		{"evm.after-sign", "often", "", nil},
		{"evm.after-sign", "", "-1", nil},
		{",,", "", "", nil},
	}
	for _, tc := range tests {
		s, err := Parse(tc.spec, tc.prob, tc.seed, known)
		if tc.want == nil {
			if err == nil || !errors.Is(err, ErrSpec) {
				t.Errorf("Parse(%q, %q, %q) = %v, want ErrSpec", tc.spec, tc.prob, tc.seed, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q, %q, %q): %v", tc.spec, tc.prob, tc.seed, err)
			continue
		}
		if got := s.Armed(); !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q, %q, %q).Armed() = %v, want %v", tc.spec, tc.prob, tc.seed, got, tc.want)
		}
	}
}

func TestUnknownNameIsNamedInTheError(t *testing.T) {
	_, err := Parse("evm.after-sing", "", "", known)
	if err == nil || !strings.Contains(err.Error(), `"evm.after-sing"`) || !strings.Contains(err.Error(), "evm.after-sign") {
		t.Fatalf("err = %v, want the bad name and the known ones", err)
	}
}

func TestFromEnvUnsetArmsNothing(t *testing.T) {
	s, err := FromEnv(func(string) string { return "" }, known)
	if err != nil || s != nil {
		t.Fatalf("FromEnv with nothing set = %v, %v; want nil, nil", s, err)
	}
	// A nil set is inert.
	s.Hit("evm.after-sign")
	if s.Armed() != nil || s.Seed() != 0 {
		t.Fatal("nil set reports armed failpoints")
	}
	env := map[string]string{EnvNames: "evm.after-sign", EnvProb: "1", EnvSeed: "7"}
	s, err = FromEnv(func(k string) string { return env[k] }, known)
	if err != nil || s.Seed() != 7 || !slices.Equal(s.Armed(), []string{"evm.after-sign=1"}) {
		t.Fatalf("FromEnv = %v (%v), %v", s.Armed(), s.Seed(), err)
	}
}

// fires records the hits of s that fired, out of n hits of each name.
func fires(s *Set, n int, names ...string) []string {
	var got []string
	s.OnFire(func(name string) { got = append(got, name) })
	for range n {
		for _, name := range names {
			s.Hit(name)
		}
	}
	return got
}

func TestHit(t *testing.T) {
	s, _ := Parse("evm.after-sign=1,evm.after-broadcast=0", "", "1", known)
	got := fires(s, 10, "evm.after-sign", "evm.after-broadcast", "commit.before-commit")
	if len(got) != 10 || slices.ContainsFunc(got, func(n string) bool { return n != "evm.after-sign" }) {
		t.Fatalf("fired %v, want evm.after-sign 10 times only", got)
	}
	// A probability in between fires about that often.
	s, _ = Parse("commit.before-commit=0.25", "", "3", known)
	if n := len(fires(s, 4000, "commit.before-commit")); n < 800 || n > 1200 {
		t.Fatalf("fired %d of 4000 hits at p=0.25", n)
	}
}

func TestSeedReplays(t *testing.T) {
	run := func(seed string) []int {
		s, _ := Parse("all", "0.3", seed, known)
		var at []int
		i := 0
		s.OnFire(func(string) { at = append(at, i) })
		for i = range 200 {
			s.Hit(known[i%len(known)])
		}
		return at
	}
	a, b, c := run("42"), run("42"), run("43")
	if !slices.Equal(a, b) {
		t.Fatal("the same seed fired at different hits")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds fired at the same hits")
	}
}

// The default action ends the process with ExitCode after the marker line.
func TestFireExits(t *testing.T) {
	if os.Getenv("VEIL_FAILPOINT_TEST_CHILD") != "" {
		s, err := FromEnv(os.Getenv, known)
		if err != nil {
			os.Exit(2)
		}
		s.Hit("evm.after-broadcast")
		os.Exit(0) // not reached
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFireExits$")
	cmd.Env = append(os.Environ(), "VEIL_FAILPOINT_TEST_CHILD=1", EnvNames+"=evm.after-broadcast", EnvProb+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitCode {
		t.Fatalf("child ended with %v, want exit %d; output: %s", err, ExitCode, out)
	}
	if !strings.Contains(string(out), Marker+"evm.after-broadcast\n") {
		t.Fatalf("no marker line in %q", out)
	}
}

func TestHook(t *testing.T) {
	var none Hook
	if err := none.Hit("evm.after-sign"); err != nil {
		t.Fatalf("nil hook: %v", err)
	}
	var unarmed *Set
	if unarmed.Hook() != nil {
		t.Fatal("an unarmed set gives a hook")
	}
	crash := errors.New("crash")
	h := Hook(func(name string) error {
		if name == "evm.after-sign" {
			return crash
		}
		return nil
	})
	if err := h.Hit("evm.after-sign"); !errors.Is(err, crash) {
		t.Fatalf("hook at its point: %v", err)
	}
	if err := h.Hit("commit.before-commit"); err != nil {
		t.Fatalf("hook elsewhere: %v", err)
	}
	s, err := Parse("evm.after-sign=1", "", "1", known)
	if err != nil {
		t.Fatal(err)
	}
	var fired []string
	s.OnFire(func(name string) { fired = append(fired, name) })
	if err := s.Hook().Hit("evm.after-sign"); err != nil {
		t.Fatalf("a set's hook returned %v", err)
	}
	_ = s.Hook().Hit("commit.before-commit")
	if !slices.Equal(fired, []string{"evm.after-sign"}) {
		t.Fatalf("fired %v", fired)
	}
}
