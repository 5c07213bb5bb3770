package testhost

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
)

// HoldWriteLock takes SQLite's write lock on the host's store (the
// default one, in DataDir) from a connection of the test's own: no write
// of the host's commits until release, which the test's end also calls.
func (h *Host) HoldWriteLock(tb testing.TB) (release func()) {
	tb.Helper()
	db := h.ownConn(tb)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		tb.Fatal(err)
	}
	release = sync.OnceFunc(func() {
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			tb.Error(err)
		}
		conn.Close()
	})
	tb.Cleanup(release)
	return release
}

// LedgerRows counts the store's ledger lines through a connection of the
// test's own, which touches none of the host's.
func (h *Host) LedgerRows(tb testing.TB) int {
	tb.Helper()
	var n int
	if err := h.ownConn(tb).QueryRowContext(context.Background(), "SELECT count(*) FROM ledger").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func (h *Host) ownConn(tb testing.TB) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.DataDir, "assay.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
