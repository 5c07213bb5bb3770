package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// A SQLite backup is SQLite's own copy of one moment, never written over
// an existing file; InspectSQLite reads it back, and refuses a copy whose
// schema a newer Assay made and a file that is not a sound database. A
// PostgreSQL store is not backed up by the host (pg_dump is).
func TestSQLiteBackupAndInspect(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, "assay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := filepath.Join(dir, "copy.db")
	if err := st.Backup(ctx, out); err != nil {
		t.Fatal(err)
	}
	snap, err := store.InspectSQLite(ctx, out)
	if err != nil || snap.Version != snap.Latest || snap.Latest < 10 {
		t.Fatalf("inspect: %+v %v", snap, err)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Errorf("the copy's mode is %v, want 0600", fi.Mode().Perm())
	}
	if err := st.Backup(ctx, out); err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Errorf("a backup over an existing file: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version) VALUES (?)`, snap.Latest+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := store.InspectSQLite(ctx, out); err == nil || !strings.Contains(err.Error(), "newer than this binary's") {
		t.Errorf("a copy of a newer schema: %v", err)
	}
	junk := filepath.Join(dir, "junk.db")
	_ = os.WriteFile(junk, []byte("not a database, though long enough to have a header of sorts................................................................"), 0o600)
	if _, err := store.InspectSQLite(ctx, junk); err == nil {
		t.Error("a file that is no database passed the inspection")
	}
	pg, err := store.OpenPostgres(ctx, storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if err := pg.Backup(ctx, filepath.Join(dir, "pg.db")); !errors.Is(err, store.ErrBackupOutside) {
		t.Errorf("a PostgreSQL store's backup: %v", err)
	}
}
