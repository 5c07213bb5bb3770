package testhost

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/assay-audit/assay/host/internal/storetest"
)

// HoldWriteLock takes SQLite's write lock on the host's store (the
// default one, in DataDir) from a connection of the test's own: no write
// of the host's commits until release, which the test's end also calls.
func (h *Host) HoldWriteLock(tb testing.TB) (release func()) {
	tb.Helper()
	return storetest.HoldWriteLock(tb, h.storePath())
}

// LedgerRows counts the store's ledger lines through a connection of the
// test's own, which touches none of the host's.
func (h *Host) LedgerRows(tb testing.TB) int {
	tb.Helper()
	var n int
	if err := storetest.OwnConn(tb, h.storePath()).QueryRowContext(context.Background(), "SELECT count(*) FROM ledger").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func (h *Host) storePath() string { return filepath.Join(h.DataDir, "assay.db") }
