package persistence

import "fmt"

// The request rules every Store enforces before it touches the database,
// in one place so that both stores (bbolt here, PostgreSQL in
// persistence/postgres) reject the same requests with the same messages;
// the conformance suite (persistence/storetest) holds them to it.

// ValidateGet checks the arguments of Store.Get.
func ValidateGet(table, key string) error {
	if err := validateTable(table); err != nil {
		return err
	}
	return validateKey(key)
}

// ValidateList checks the arguments of Store.List.
func ValidateList(table string, q Query) error {
	if err := validateTable(table); err != nil {
		return err
	}
	if q.Limit < 0 {
		return fmt.Errorf("%w: negative limit %d", ErrInvalid, q.Limit)
	}
	return nil
}

// ValidateBatch checks a batch of Store.Apply before it reaches the
// committer, so that a malformed op can never fail the transaction a whole
// group shares.
func ValidateBatch(ops []Op) error {
	if len(ops) == 0 {
		return fmt.Errorf("%w: empty batch", ErrInvalid)
	}
	for i, op := range ops {
		if err := validateOp(op); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return nil
}

func validateTable(table string) error { return validateName("table name", table, MaxTableLen) }

func validateKey(key string) error { return validateName("key", key, MaxKeyLen) }

// validateName requires a table name or key to be set and at most limit bytes.
func validateName(what, name string, limit int) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	case len(name) > limit:
		return fmt.Errorf("%w: %s of %d bytes (max %d)", ErrInvalid, what, len(name), limit)
	}
	return nil
}

func validateOp(op Op) error {
	if err := validateTable(op.Table); err != nil {
		return err
	}
	switch op.Kind {
	case OpPut, OpDelete, OpCheck:
		if err := validateKey(op.Key); err != nil {
			return fmt.Errorf("%s: %w", op.Table, err)
		}
	case OpDeletePrefix:
		// An empty prefix would wipe the table; nothing in Veil needs that,
		// and a bug that builds an empty prefix must not.
		if op.Key == "" {
			return fmt.Errorf("%w: %s: delete with empty prefix", ErrInvalid, op.Table)
		}
		if len(op.Key) > MaxKeyLen {
			return fmt.Errorf("%w: %s: prefix of %d bytes (max %d)", ErrInvalid, op.Table, len(op.Key), MaxKeyLen)
		}
		if op.Expect.Kind != ExpectAny {
			return fmt.Errorf("%w: %s: delete-prefix takes no expectation", ErrInvalid, op.Table)
		}
	default:
		return fmt.Errorf("%w: unknown op kind %d", ErrInvalid, op.Kind)
	}
	if op.Kind != OpPut && op.Value != nil {
		return fmt.Errorf("%w: %s/%q: value on a non-put op", ErrInvalid, op.Table, op.Key)
	}
	if len(op.Value) > MaxValueLen {
		return fmt.Errorf("%w: %s/%q: value of %d bytes (max %d)", ErrInvalid, op.Table, op.Key, len(op.Value), MaxValueLen)
	}
	switch op.Expect.Kind {
	case ExpectAny, ExpectAbsent:
	case ExpectVersion:
		if op.Expect.Version == 0 {
			return fmt.Errorf("%w: %s/%q: version 0 never exists (use Absent)", ErrInvalid, op.Table, op.Key)
		}
	default:
		return fmt.Errorf("%w: %s/%q: unknown expectation kind %d", ErrInvalid, op.Table, op.Key, op.Expect.Kind)
	}
	return nil
}
