// Package storetest opens the stores the host's tests run against: a
// SQLite file in a temp dir, and a fresh schema on the PostgreSQL every
// developer machine and CI runs (127.0.0.1:5432, database test, trust auth;
// ASSAY_TEST_POSTGRES overrides the URL).
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/assay-audit/assay/host/store"
)

// PostgresBase is the server URL without a schema.
func PostgresBase() string {
	if u := os.Getenv("ASSAY_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// PostgresURL creates a fresh schema (dropped when the test ends) and
// returns a URL whose search_path selects it.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	db, err := sql.Open("pgx", PostgresBase())
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "assay_t_" + hex.EncodeToString(b)
	if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
		tb.Fatalf("PostgreSQL at %s: %v", PostgresBase(), err)
	}
	tb.Cleanup(func() {
		db, err := sql.Open("pgx", PostgresBase())
		if err == nil {
			_, _ = db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
			db.Close()
		}
	})
	sep := "?"
	if strings.Contains(PostgresBase(), "?") {
		sep = "&"
	}
	return PostgresBase() + sep + "search_path=" + schema
}

// Kinds names the two stores.
var Kinds = []string{"sqlite", "postgres"}

// Spec returns a store spec for kind (and, for sqlite, the data dir).
func Spec(tb testing.TB, kind string) (spec, dataDir string) {
	tb.Helper()
	dir := tb.TempDir()
	if kind == "postgres" {
		return PostgresURL(tb), dir
	}
	return "sqlite:" + filepath.Join(dir, "assay.db"), dir
}

// Open opens a fresh store of kind, closed when the test ends.
func Open(tb testing.TB, kind string) *store.Store {
	tb.Helper()
	spec, dir := Spec(tb, kind)
	s, err := store.Open(context.Background(), spec, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
