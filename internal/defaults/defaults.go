// Package defaults holds the rule every options struct of Veil follows: a
// zero or negative count, size or period means "the default".
package defaults

// Number is what an option that Positive defaults can be (time.Duration
// among them).
type Number interface {
	~int | ~int32 | ~int64 | ~uint64 | ~float64
}

// Positive returns v when it is above zero, else def.
func Positive[T Number](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
