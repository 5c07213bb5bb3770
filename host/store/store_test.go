package store_test

import (
	"context"
	"database/sql"
	"errors"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	_ "github.com/jackc/pgx/v5/stdlib"
)

var ctx = context.Background()

func each(t *testing.T, f func(t *testing.T, kind string)) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) { f(t, kind) })
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		for i := 0; i < 3; i++ {
			s, err := store.Open(ctx, spec, dir)
			if err != nil {
				t.Fatalf("open %d: %v", i, err)
			}
			k, err := s.FreeTierKey(ctx)
			if err != nil || len(k) != 32 {
				t.Fatalf("free-tier key: %v", err)
			}
			s.Close()
		}
	})
}

const interval = 5 * time.Second

func TestFreeTierIntervalAndDay(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		t0 := time.Date(2026, 11, 29, 0, 0, 1, 0, time.UTC)
		admit := func(at time.Time) store.Admission {
			a, err := s.AdmitFree(ctx, "svc", "k", at, 100, interval)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		if a := admit(t0); !a.Admitted || a.Count != 1 {
			t.Fatalf("first call: %+v", a)
		}
		if a := admit(t0.Add(1500 * time.Millisecond)); a.Admitted || a.Exhausted || a.RetryAfter != 3500*time.Millisecond {
			t.Fatalf("inside the interval: %+v", a)
		}
		if a := admit(t0.Add(interval - time.Nanosecond)); a.Admitted {
			t.Fatal("admitted 1 ns early")
		}
		at := t0.Add(interval) // exactly 5,000 ms apart is allowed
		for i := 2; i <= 100; i++ {
			if a := admit(at); !a.Admitted || a.Count != int64(i) {
				t.Fatalf("call %d: %+v", i, a)
			}
			at = at.Add(interval)
		}
		if a := admit(at); a.Admitted || !a.Exhausted {
			t.Fatalf("call 101: %+v", a)
		}
		// a new UTC day gives a new allowance, but the interval holds across midnight
		last := at.Add(-interval)
		midnight := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
		if last.Add(interval).After(midnight) {
			if a := admit(midnight); a.Admitted {
				t.Fatal("interval not enforced across midnight")
			}
		}
		if a := admit(midnight.Add(10 * time.Second)); !a.Admitted || a.Count != 1 {
			t.Fatalf("next day: %+v", a)
		}
		// another key is independent
		if a, _ := s.AdmitFree(ctx, "svc", "other", t0, 100, interval); !a.Admitted {
			t.Fatal("keys are not independent")
		}
		use, err := s.FreeUse(ctx, "svc")
		if err != nil || len(use) != 2 || use[0].N != 101 || use[1].N != 1 {
			t.Fatalf("free use %+v %v", use, err)
		}
	})
}

func TestIntervalAcrossMidnight(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		late := time.Date(2026, 11, 29, 23, 59, 58, 0, time.UTC)
		if a, _ := s.AdmitFree(ctx, "svc", "k", late, 100, interval); !a.Admitted {
			t.Fatal("first")
		}
		a, _ := s.AdmitFree(ctx, "svc", "k", late.Add(3*time.Second), 100, interval)
		if a.Admitted || a.RetryAfter != 2*time.Second {
			t.Fatalf("3 s later, past midnight: %+v", a)
		}
	})
}

// A burst of concurrent calls from one caller at one instant admits exactly
// one; two stores on one database (two hosts) admit no more than one would.
func TestFreeTierBurstIsExact(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		stores := []*store.Store{storetest.Open(t, kind)}
		if kind == "postgres" {
			spec, dir := storetest.Spec(t, kind)
			a, err := store.Open(ctx, spec, dir)
			if err != nil {
				t.Fatal(err)
			}
			b, err := store.Open(ctx, spec, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			defer b.Close()
			stores = []*store.Store{a, b}
		}
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 1000; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a, err := stores[i%len(stores)].AdmitFree(ctx, "svc", "burst", now, 100, interval)
				if err != nil {
					t.Error(err)
					return
				}
				if a.Admitted {
					admitted.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := admitted.Load(); n != 1 {
			t.Errorf("%d admitted, want exactly 1", n)
		}
	})
}

func TestLedgerIsAppendOnly(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		tx := "5j7s"
		at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		line := store.Line{Service: "svc", CriteriaID: "c/v1", CriteriaRevision: "1.0.0", At: at, PriceUSDCUnits: 50000,
			TxID: &tx, House: false, CAD: store.CAD{Pending: true}, FamilyFields: `{"op":"compare"}`}
		id, err := s.AppendLine(ctx, line)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendLine(ctx, line); !errors.Is(err, store.ErrDuplicateTx) {
			t.Errorf("second line for one transaction: %v", err)
		}
		refund := int64(50000)
		if _, err := s.AppendAmendment(ctx, store.Amendment{LineID: id, Kind: "refund", At: at, RefundUnits: &refund}); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{`UPDATE ledger SET price_usdc_units = 0`, `DELETE FROM ledger`, `UPDATE ledger_amendments SET kind = 'x'`, `DELETE FROM ledger_amendments`} {
			if _, err := s.DB().ExecContext(ctx, stmt); err == nil {
				t.Errorf("%s was allowed", stmt)
			}
		}
		lines, err := s.Lines(ctx)
		if err != nil || len(lines) != 1 || lines[0].PriceUSDCUnits != 50000 || *lines[0].TxID != tx || !lines[0].CAD.Pending || lines[0].Day != "2026-11-29" || !lines[0].At.Equal(at) {
			t.Fatalf("lines %+v %v", lines, err)
		}
		am, err := s.Amendments(ctx)
		if err != nil || len(am) != 1 || *am[0].RefundUnits != 50000 || am[0].LineID != id {
			t.Fatalf("amendments %+v %v", am, err)
		}
	})
}

// A search_path naming a schema that does not exist yet: the store creates
// it (and the tables in it), instead of failing with SQLSTATE 3F000.
func TestPostgresCreatesAMissingSearchPathSchema(t *testing.T) {
	base := storetest.PostgresBase()
	schema := "assay_new_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	t.Cleanup(func() { _, _ = admin.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`) })
	s, err := store.Open(ctx, base+sep+"search_path="+schema, t.TempDir())
	if err != nil {
		t.Fatalf("open with a new schema: %v", err)
	}
	defer s.Close()
	var n int
	if err := admin.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'ledger'`, schema).Scan(&n); err != nil || n != 1 {
		t.Fatalf("ledger table in %s: %d (%v)", schema, n, err)
	}
}

// Hosts starting together on a database with no schema yet all open it:
// the search_path schema and the migrations are made once, under one
// lock (CREATE SCHEMA IF NOT EXISTS alone lets one of two fail on
// pg_namespace's unique index).
func TestHostsCreatingOneSchemaAtOnce(t *testing.T) {
	for round := 0; round < 5; round++ {
		url := storetest.PostgresURL(t)
		db, err := sql.Open("pgx", storetest.PostgresBase())
		if err != nil {
			t.Fatal(err)
		}
		schema := url[strings.LastIndex(url, "=")+1:]
		if _, err := db.Exec(`DROP SCHEMA ` + schema); err != nil {
			t.Fatal(err)
		}
		db.Close()
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := store.Open(ctx, url, t.TempDir())
				if err != nil {
					t.Errorf("round %d host %d: %v", round, i, err)
					return
				}
				s.Close()
			}()
		}
		wg.Wait()
	}
}

// An operator's command opens only a store a host has made: a missing
// SQLite file, a missing schema or a schema without Assay's tables is
// refused (nothing is created), and the store is named without its
// password.
func TestOpenExistingMakesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := store.OpenExisting(ctx, "sqlite", dir); !errors.Is(err, store.ErrNoStore) {
		t.Errorf("missing sqlite: %v", err)
	}
	if _, err := store.OpenExisting(ctx, "sqlite:"+dir+"/other/x.db", dir); !errors.Is(err, store.ErrNoStore) {
		t.Errorf("missing sqlite path: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused opens left %d files", len(entries))
	}
	made, err := store.Open(ctx, "sqlite", dir)
	if err != nil {
		t.Fatal(err)
	}
	made.Close()
	s, err := store.OpenExisting(ctx, "sqlite", dir)
	if err != nil {
		t.Fatalf("an existing sqlite store: %v", err)
	}
	if want := "sqlite " + filepath.Join(dir, "assay.db"); s.Where() != want {
		t.Errorf("where %q, want %q", s.Where(), want)
	}
	s.Close()

	url := storetest.PostgresURL(t) // an empty schema: no host ran here
	if _, err := store.OpenExisting(ctx, url, dir); !errors.Is(err, store.ErrNoStore) {
		t.Errorf("empty schema: %v", err)
	}
	missing := strings.Replace(url, "search_path=", "search_path=nosuch_", 1)
	if _, err := store.OpenExisting(ctx, missing, dir); !errors.Is(err, store.ErrNoStore) {
		t.Errorf("missing schema: %v", err)
	}
	db, _ := sql.Open("pgx", storetest.PostgresBase())
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, missing[strings.LastIndex(missing, "=")+1:]).Scan(&n); err != nil || n != 0 {
		t.Errorf("the refused open created the schema (%d, %v)", n, err)
	}
	made, err = store.Open(ctx, url, dir)
	if err != nil {
		t.Fatal(err)
	}
	made.Close()
	withPassword := strings.Replace(url, "postgres@", "postgres:hunter2@", 1)
	s, err = store.OpenExisting(ctx, withPassword, dir)
	if err != nil {
		t.Fatalf("an existing schema: %v", err)
	}
	defer s.Close()
	if w := s.Where(); strings.Contains(w, "hunter2") || !strings.Contains(w, "127.0.0.1:5432/test schema assay_t_") {
		t.Errorf("where %q", w)
	}
}

// Of hosts making their first key active at once one wins, and nothing
// of the others' keys is kept; a rotation takes the next generation.
func TestFirstSigningKeyActivationIsAtomic(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		stores := make([]*store.Store, 6)
		for i := range stores {
			s, err := store.Open(ctx, spec, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			stores[i] = s
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := signing.SealedKey{KID: "kid-" + strconv.Itoa(i), Created: time.Now(), Sealed: "sealed"}
				won, err := s.ActivateSigningKey(ctx, k, true)
				if err != nil {
					t.Error(err)
				}
				if won {
					wins.Add(1)
				}
			}()
		}
		wg.Wait()
		keys, active, err := stores[0].SigningKeys(ctx)
		if err != nil || wins.Load() != 1 || len(keys) != 1 || active != keys[0].KID {
			t.Fatalf("%d wins, keys %+v, active %q, %v", wins.Load(), keys, active, err)
		}
		if err := stores[1].AddSigningKeys(ctx, []signing.SealedKey{{KID: "retired", Created: time.Now(), Sealed: "s"}, keys[0]}); err != nil {
			t.Fatal(err)
		}
		if won, err := stores[2].ActivateSigningKey(ctx, signing.SealedKey{KID: "rotated", Created: time.Now(), Sealed: "s"}, false); err != nil || !won {
			t.Fatalf("rotation: %v %v", won, err)
		}
		keys, active, _ = stores[3].SigningKeys(ctx)
		if len(keys) != 3 || active != "rotated" {
			t.Errorf("after a retired key and a rotation: %d keys, active %q", len(keys), active)
		}
	})
}

// A store made before activations were rows (migration 6) keeps its
// latest key active, and every earlier one listed.
func TestKeysFromBeforeActivationsStayActive(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		s, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatal(err)
		}
		// back to the schema of migration 5, with two keys in it (7 undone too)
		for _, q := range []string{`DROP TABLE signing_key_activations`, `DROP TABLE hosts`, `ALTER TABLE payment_claims DROP COLUMN blockhash`, `ALTER TABLE payment_claims DROP COLUMN memo`, `DROP TABLE refund_reasons`, undoIssued[0], undoIssued[1], undoIssued[2], `DROP TABLE launch_proofs`, `DELETE FROM schema_migrations WHERE version >= 6`,
			`INSERT INTO signing_keys (kid, created_ns, sealed) VALUES ('old', 1, 's')`, `INSERT INTO signing_keys (kid, created_ns, sealed) VALUES ('new', 2, 's')`} {
			if _, err := s.DB().Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		s.Close()
		if s, err = store.Open(ctx, spec, dir); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		keys, active, err := s.SigningKeys(ctx)
		if err != nil || len(keys) != 2 || active != "new" {
			t.Errorf("after the migration: %+v active %q %v", keys, active, err)
		}
	})
}

// A search_path schema PostgreSQL would fold to lower case or cut to 63
// bytes is refused before any connection, with its length and no name.
func TestSearchPathSchemaNamesAreTakenAsWritten(t *testing.T) {
	for _, bad := range []string{"Audits", "audits-2026", "9lives", strings.Repeat("a", 70)} {
		_, err := store.Open(context.Background(), "postgres://assay@127.0.0.1:1/none?search_path="+bad, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "search_path schema") || strings.Contains(err.Error(), bad) {
			t.Errorf("schema %q: %v", bad, err)
		}
	}
	for _, good := range []string{"audits", "_a1", strings.Repeat("a", 63)} {
		_, err := store.Open(context.Background(), "postgres://assay@127.0.0.1:1/none?connect_timeout=1&search_path="+good, t.TempDir())
		if err != nil && strings.Contains(err.Error(), "search_path schema") {
			t.Errorf("schema %q refused: %v", good, err)
		}
	}
}

// A sqlite:PATH store in a folder that does not exist is refused, the
// folder never made; in an existing one it is created.
func TestSQLitePathFolderMustExist(t *testing.T) {
	dir := t.TempDir()
	if _, err := store.Open(context.Background(), "sqlite:"+dir+"/missing/x.db", dir); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a missing folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("the missing folder was made: %v", err)
	}
	s, err := store.Open(context.Background(), "sqlite:"+dir+"/x.db", dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// A PostgreSQL URL naming a database that does not exist is refused with
// the server's own reason, not a hint about creating the schema.
func TestAWrongDatabaseNameSaysSo(t *testing.T) {
	u, err := neturl.Parse(storetest.PostgresBase())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/assay_no_such_db"
	q := u.Query()
	q.Set("search_path", "assay")
	u.RawQuery = q.Encode()
	_, err = store.Open(context.Background(), u.String(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `database "assay_no_such_db" does not exist`) || strings.Contains(err.Error(), "CREATE") {
		t.Fatalf("a wrong database name: %v", err)
	}
}
