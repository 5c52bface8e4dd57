package connopts

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Getenv is the environment a connector's ConfigFromEnv reads:
// os.Getenv when getenv is nil.
func Getenv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}

// List reads variable name as comma-separated items, each parsed by item
// (false: malformed); an empty item is skipped. set is false when the
// variable is unset or empty; want is an item's form, for the error.
func List[T any](getenv func(string) string, name, want string, item func(string) (T, bool)) (out []T, set bool, err error) {
	v := getenv(name)
	if v == "" {
		return nil, false, nil
	}
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		t, ok := item(s)
		if !ok {
			return nil, true, fmt.Errorf("%s: %q: want %s", name, s, want)
		}
		out = append(out, t)
	}
	return out, true, nil
}

// Positive reads variable name as a positive integer; 0 when it is unset
// or empty.
func Positive(getenv func(string) string, name string) (uint64, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, v)
	}
	return n, nil
}
