package persistence

// OpenBoltHeld opens a store whose applier writes nothing into bbolt
// until release is called: every write stays in the write-ahead log and
// the pending overlay, so that every read goes through the merge of the
// two (bolt_pending.go). Call release before Close, which applies them.
func OpenBoltHeld(path string, opts BoltOptions) (s *Bolt, release func(), err error) {
	held := make(chan struct{})
	released := false
	s, err = openBolt(path, opts, testHooks{applyTaken: func() { <-held }})
	return s, func() {
		if !released {
			released = true
			close(held)
		}
	}, err
}
