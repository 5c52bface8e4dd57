package software

// SetTestKDF lowers argon2id's cost for the package's tests and returns
// a function that restores it.
func SetTestKDF() func() {
	old := defaultKDF
	defaultKDF = KDFParams{Time: 1, Memory: 64, Threads: 1}
	return func() { defaultKDF = old }
}
