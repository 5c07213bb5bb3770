package store_test

import (
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// A refund's reason is kept beside the ledger, append-only like it, and
// read back with its amendment; an amendment without one reads nil.
func TestRefundReasonBesideTheLedger(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		tx := "5j7s"
		id, err := s.AppendLine(ctx, store.Line{Service: "svc", CriteriaID: "c/v1", CriteriaRevision: "1.0.0", At: at, PriceUSDCUnits: 50000,
			TxID: &tx, CAD: store.CAD{Pending: true}, FamilyFields: `{}`})
		if err != nil {
			t.Fatal(err)
		}
		rate, day, basis := "1.3945", "2026-11-29", "BoC daily"
		if _, err := s.AppendAmendment(ctx, store.Amendment{LineID: id, Kind: "fmv", At: at, CAD: store.CAD{Rate: &rate, RateDate: &day, Basis: &basis}}); err != nil {
			t.Fatal(err)
		}
		units, reason := int64(50000), "paid twice"
		refundID, err := s.AppendAmendment(ctx, store.Amendment{LineID: id, Kind: "refund", At: at, RefundUnits: &units, Reason: &reason})
		if err != nil {
			t.Fatal(err)
		}
		am, err := s.Amendments(ctx)
		if err != nil || len(am) != 2 || am[0].Reason != nil || am[1].ID != refundID || am[1].Reason == nil || *am[1].Reason != reason {
			t.Fatalf("amendments %+v %v", am, err)
		}
		for _, stmt := range []string{`UPDATE refund_reasons SET reason = 'x'`, `DELETE FROM refund_reasons`} {
			if _, err := s.DB().ExecContext(ctx, stmt); err == nil {
				t.Errorf("%s was allowed", stmt)
			}
		}
		// a reason naming no amendment is refused: it could say nothing
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO refund_reasons (amendment_id, reason) VALUES (999999, 'x')`); err == nil {
			t.Error("a reason without its amendment was accepted")
		}
	})
}

// A store made before refund reasons (migration 9) gains them when a host
// of this version opens it, and keeps its ledger.
func TestRefundReasonsMigrateAnOlderStore(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		s, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatal(err)
		}
		units := int64(50000)
		id, err := s.AppendLine(ctx, store.Line{Service: "svc", CriteriaID: "c/v1", CriteriaRevision: "1", At: time.Now(), PriceUSDCUnits: units,
			CAD: store.CAD{Pending: true}, FamilyFields: `{}`})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendAmendment(ctx, store.Amendment{LineID: id, Kind: "refund", At: time.Now(), RefundUnits: &units}); err != nil {
			t.Fatal(err)
		}
		// back to the schema of migration 8
		for _, q := range append(undoIssued[:3:3], `DROP TABLE refund_reasons`, `ALTER TABLE hosts DROP COLUMN version`, `DROP TABLE launch_proofs`, `DELETE FROM schema_migrations WHERE version >= 9`) {
			if _, err := s.DB().ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		s.Close()
		if s, err = store.Open(ctx, spec, dir); err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer s.Close()
		am, err := s.Amendments(ctx)
		if err != nil || len(am) != 1 || am[0].Reason != nil || *am[0].RefundUnits != units {
			t.Fatalf("an older refund after the upgrade: %+v %v", am, err)
		}
		reason := "r"
		if _, err := s.AppendAmendment(ctx, store.Amendment{LineID: id, Kind: "refund", At: time.Now(), RefundUnits: &units, Reason: &reason}); err != nil {
			t.Fatalf("a refund with a reason after the upgrade: %v", err)
		}
	})
}
