package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// A command that opens a serving host's SQLite store (assay ledger
// report, refund, ...) waits for the host's commit in progress instead of
// failing "database is locked": its transactions take the write lock when
// they begin, where SQLite's busy timeout applies, not midway, where a
// transaction that has read gets SQLITE_BUSY at once. The test holds the
// write lock from a connection of its own for a moment, as a host's
// commit would; the store opens, and a write goes through, once it goes.
func TestAStoreWaitsForAnotherWriterInsteadOfFailing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := store.Open(ctx, "sqlite", dir)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	path := filepath.Join(dir, "assay.db")
	// another writer's commit, over in a moment
	hold := func() { time.AfterFunc(300*time.Millisecond, storetest.HoldWriteLock(t, path)) }
	hold()
	st, err := store.OpenExisting(ctx, "sqlite", dir)
	if err != nil {
		t.Fatalf("opening beside another writer's commit: %v", err)
	}
	defer st.Close()
	hold()
	if _, err := st.AdmitFree(ctx, "svc", "caller-key", time.Now(), 10, 0); err != nil {
		t.Fatalf("a write beside another writer's commit: %v", err)
	}
}
