-- Every record of every Veil table, in one table: (tbl, rkey) is the key,
-- rvalue the value, version the record's version (1 on creation, +1 on
-- every Put; a deleted key has no row).
--
-- Table names and keys are BYTEA so that they hold any bytes (the Store
-- contract allows binary keys) and compare byte-wise, which is the order
-- List returns. CockroachDB reads BYTEA as its BYTES type.
CREATE TABLE veil_records (
    tbl     BYTEA  NOT NULL,
    rkey    BYTEA  NOT NULL,
    rvalue  BYTEA  NOT NULL,
    version BIGINT NOT NULL CHECK (version > 0),
    PRIMARY KEY (tbl, rkey)
);
