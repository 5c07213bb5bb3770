package store_test

import (
	"testing"

	"github.com/assay-audit/assay/host/store"
)

// A SQLite store, made or reopened, runs in WAL mode with
// synchronous=FULL: every commit fsyncs the WAL, so a committed claim or
// ledger line survives power loss (under NORMAL the last commits could be
// rolled back). The values are read back from SQLite itself.
func TestSQLiteCommitsAreDurable(t *testing.T) {
	dir := t.TempDir()
	check := func(t *testing.T, s *store.Store) {
		t.Helper()
		var sync int
		if err := s.DB().QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if sync != 2 {
			t.Errorf("PRAGMA synchronous = %d, want 2 (FULL)", sync)
		}
		var mode string
		if err := s.DB().QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" {
			t.Errorf("PRAGMA journal_mode = %q, want wal", mode)
		}
	}
	t.Run("open", func(t *testing.T) {
		s, err := store.Open(ctx, "sqlite", dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		check(t, s)
	})
	t.Run("open existing", func(t *testing.T) {
		s, err := store.OpenExisting(ctx, "sqlite", dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		check(t, s)
	})
}
