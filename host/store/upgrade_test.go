package store_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// A rolling upgrade's store: one a newer Assay migrated a version further
// opens (SchemaAhead says so; every migration is additive, so this
// binary's statements still hold); one two versions ahead is refused. A
// host's row carries its build, and a row an older Assay rewrote (its own
// start, not the version) reads as unknown instead of another build's.
func TestAStoreOneVersionAheadOpens(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		s, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatal(err)
		}
		started := time.Unix(100, 0)
		if err := s.PutHost(ctx, store.HostStatus{HostID: "h1", Label: "a", Version: "abc123", Started: started, Seen: started, Ready: true}); err != nil {
			t.Fatal(err)
		}
		hosts, err := s.Hosts(ctx)
		if err != nil || len(hosts) != 1 || hosts[0].Version != "abc123" {
			t.Fatalf("hosts: %+v %v", hosts, err)
		}
		// an older Assay restarted with this host id rewrites its start
		if _, err := s.DB().ExecContext(ctx, `UPDATE hosts SET started_ns = started_ns + 1`); err != nil {
			t.Fatal(err)
		}
		if hosts, _ = s.Hosts(ctx); hosts[0].Version != "" {
			t.Errorf("a row rewritten by an older Assay reads as version %q", hosts[0].Version)
		}
		var latest int
		if err := s.DB().QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&latest); err != nil {
			t.Fatal(err)
		}
		if s.SchemaAhead() != 0 {
			t.Errorf("SchemaAhead on the binary's own schema: %d", s.SchemaAhead())
		}
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (`+itoa(latest+1)+`)`); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s, err = store.Open(ctx, spec, dir); err != nil {
			t.Fatalf("a store one version ahead: %v", err)
		}
		if s.SchemaAhead() != 1 {
			t.Errorf("SchemaAhead: %d, want 1", s.SchemaAhead())
		}
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES (`+itoa(latest+2)+`)`); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s, err = store.Open(ctx, spec, dir); err == nil || !strings.Contains(err.Error(), "at most one version ahead") {
			t.Errorf("a store two versions ahead: %v", err)
			if s != nil {
				s.Close()
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
