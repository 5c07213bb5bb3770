package store

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// uniqueOn recognises a unique-constraint failure on one column (the
// index named for it on PostgreSQL, the column in SQLite's message).
func uniqueOn(err error, column string) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505" && strings.HasSuffix(pg.ConstraintName, "_"+column)
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed: payment_claims."+column)
}

// isUniqueViolation recognises a unique-constraint failure on either
// database without matching on values.
func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}
