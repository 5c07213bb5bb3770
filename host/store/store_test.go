package store_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
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
