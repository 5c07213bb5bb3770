package store_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// A store is stamped once with the payment identity it settles as: the
// first stamp stays (a second, of another identity, reads the first
// back), writes the floor row at FloorVersion, which every build with
// the "at most one version ahead" check refuses, and which this build
// leaves out of its own schema version (it opens the store as its own,
// nothing ahead). On the stamped store the database itself refuses a
// house proof's claim and a payments-off line, as the statements of a
// build from before the stamp write them, and takes a claim paid outside
// and a house wallet's line with its transaction.
func TestAPaymentIdentityStampsTheStoreOnce(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		s, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { s.Close() }()
		var before int
		if err := s.DB().QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.PaymentIdentity(ctx); ok || err != nil {
			t.Fatalf("a fresh store carries a stamp: %v %v", ok, err)
		}
		at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
		first := store.PaymentIdentity{Network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", Asset: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", PayTo: "Seller1", StampedAt: at}
		got, err := s.StampPaymentIdentity(ctx, first)
		if err != nil || got != first {
			t.Fatalf("the first stamp: %+v %v", got, err)
		}
		other := first
		other.PayTo, other.StampedAt = "Seller2", at.Add(time.Hour)
		if got, err = s.StampPaymentIdentity(ctx, other); err != nil || got != first {
			t.Fatalf("a second stamp read back %+v (%v), want the first", got, err)
		}
		if got, ok, err := s.PaymentIdentity(ctx); !ok || err != nil || got != first || got.Same(other) {
			t.Fatalf("the stamp: %+v %v %v", got, ok, err)
		}
		var max int
		if err := s.DB().QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&max); err != nil {
			t.Fatal(err)
		}
		// what an older build computes: its schema is at most before+1
		// versions, and a store past that is refused ("run a newer Assay")
		if max != store.FloorVersion || max <= before+1 {
			t.Fatalf("MAX(version) %d, want the floor %d above the schema's %d", max, store.FloorVersion, before)
		}
		s.Close()
		if s, err = store.Open(ctx, spec, dir); err != nil {
			t.Fatalf("this build on its stamped store: %v", err)
		}
		if s.SchemaAhead() != 0 {
			t.Errorf("this build reads its stamped store as %d versions ahead", s.SchemaAhead())
		}
		refusedAsOld(t, s, kind)
	})
}

// refusedAsOld inserts the rows a host that takes no money writes, as a
// build from before the stamp does (group.go's statements), and the rows
// of real payments beside them.
func refusedAsOld(t *testing.T, s *store.Store, kind string) {
	t.Helper()
	claim := `INSERT INTO payment_claims (payment_id, service, op, price_usdc_units, payer, state, house, owner, lease_until_ns, created_ns, tx_id, blockhash, memo)
		VALUES ($1, 'stream-divergence', 'compare', 50000, 'Payer', 'settling', $2, 'old/1', 0, 0, $3, NULL, NULL)`
	line := `INSERT INTO ledger (service, criteria_id, criteria_revision, ts_ns, day, payer, price_usdc_units, tx_id, fee_lamports, house, cad_pending, family_fields)
		VALUES ('stream-divergence', 'stream-divergence/v1', '1.0.0', 1, '2026-12-07', 'Payer', $1, $2, NULL, $3, $4, '{}')`
	if kind == "sqlite" {
		claim, line = strings.ReplaceAll(claim, "$", "?"), strings.ReplaceAll(line, "$", "?")
	}
	db := s.DB()
	if _, err := db.ExecContext(ctx, claim, "house-proof", true, "tx-house"); err == nil || !strings.Contains(err.Error(), "settles on a chain") {
		t.Errorf("a house proof's claim on a stamped store: %v", err)
	}
	if _, err := db.ExecContext(ctx, claim, "paid", false, "tx-paid"); err != nil {
		t.Errorf("a claim paid outside: %v", err)
	}
	if _, err := db.ExecContext(ctx, line, 0, nil, true, false); err == nil || !strings.Contains(err.Error(), "settles on a chain") {
		t.Errorf("a payments-off line on a stamped store: %v", err)
	}
	if _, err := db.ExecContext(ctx, line, 50000, "tx-wallet", true, false); err != nil {
		t.Errorf("a house wallet's line with its transaction: %v", err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE payment_claims SET state = 'issued' WHERE payment_id = 'paid'`); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SettledOnChain(ctx); !ok || err != nil {
		t.Errorf("a store with a claim paid outside: settled on chain %v %v", ok, err)
	}
}

// A stamped SQLite store backs up and inspects as its own schema
// version: the floor row is no version.
func TestAStampedStoreBacksUp(t *testing.T) {
	dir := t.TempDir()
	s, err := store.OpenSQLite(ctx, filepath.Join(dir, "assay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := s.SettledOnChain(ctx); ok || err != nil {
		t.Fatalf("a fresh store settled on chain: %v %v", ok, err)
	}
	if _, err := s.StampPaymentIdentity(ctx, store.PaymentIdentity{Network: "n", Asset: "a", PayTo: "p", StampedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "copy.db")
	if err := s.Backup(ctx, out); err != nil {
		t.Fatal(err)
	}
	snap, err := store.InspectSQLite(ctx, out)
	if err != nil || snap.Version != snap.Latest {
		t.Fatalf("inspect a stamped store's copy: %+v %v", snap, err)
	}
	c, err := store.OpenSQLite(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id, ok, err := c.PaymentIdentity(ctx); !ok || err != nil || id.PayTo != "p" {
		t.Errorf("the copy's stamp: %+v %v %v", id, ok, err)
	}
}
