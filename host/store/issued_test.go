package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// An issued report's line, its claim's move and its kept answer are one
// transaction: the answer is there while its window lasts and gone after
// (the claim stays issued, the line stays), and a holder that lost the
// lease writes none of the three.
func TestAnIssuedAnswerIsKeptWithItsLineForItsWindow(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		open := func(id string) {
			t.Helper()
			if _, err := s.OpenSettledClaim(ctx, store.Claim{PaymentID: id, Service: "svc", Op: "op", PriceUSDCUnits: 50000,
				Owner: "h/1", LeaseUntil: now.Add(time.Minute), Created: now, TxID: "tx-" + id, Network: "n"}, now); err != nil {
				t.Fatal(err)
			}
		}
		open("p1")
		kept := &store.Issued{SealKID: "k1", Sealed: "c2VhbGVk", Expires: now.Add(24 * time.Hour)}
		if _, err := s.IssueClaim(ctx, "p1", "other/1", claimLine("tx-p1", now), kept, now); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("another holder issued the claim: %v", err)
		}
		if _, err := s.IssuedAnswer(ctx, "p1", now); !errors.Is(err, store.ErrNotIssued) {
			t.Fatalf("an answer kept for a refused issue: %v", err)
		}
		if ls, _ := s.Lines(ctx); len(ls) != 0 {
			t.Fatalf("%d lines after a refused issue", len(ls))
		}
		if _, err := s.IssueClaim(ctx, "p1", "h/1", claimLine("tx-p1", now), kept, now); err != nil {
			t.Fatal(err)
		}
		c, err := s.GetClaim(ctx, "p1")
		if err != nil || c.State != store.ClaimIssued {
			t.Fatalf("claim after issue: %+v %v", c, err)
		}
		got, err := s.IssuedAnswer(ctx, "p1", now.Add(23*time.Hour))
		if err != nil || got.Sealed != kept.Sealed || got.SealKID != "k1" || !got.Expires.Equal(kept.Expires) {
			t.Fatalf("kept answer inside its window: %+v %v", got, err)
		}
		if _, err := s.IssuedAnswer(ctx, "p1", kept.Expires); !errors.Is(err, store.ErrNotIssued) {
			t.Fatalf("a kept answer at its window's end: %v", err)
		}
		// a second, later one survives the sweep of the first
		open("p2")
		if _, err := s.IssueClaim(ctx, "p2", "h/1", claimLine("tx-p2", now), &store.Issued{SealKID: "k1", Sealed: "eA==", Expires: now.Add(48 * time.Hour)}, now); err != nil {
			t.Fatal(err)
		}
		if n, err := s.SweepIssued(ctx, now.Add(25*time.Hour)); err != nil || n != 1 {
			t.Fatalf("sweep: %d %v", n, err)
		}
		if _, err := s.IssuedAnswer(ctx, "p2", now.Add(25*time.Hour)); err != nil {
			t.Fatalf("the later answer after the sweep: %v", err)
		}
		if c, _ := s.GetClaim(ctx, "p1"); c.State != store.ClaimIssued {
			t.Fatalf("the swept answer's claim: %s", c.State)
		}
		if ls, _ := s.Lines(ctx); len(ls) != 2 {
			t.Fatalf("%d lines, want 2", len(ls))
		}
	})
}

// One claim per payment identifier: a second payment sent with the same
// identifier's lookup opens nothing (settling or settled), and the
// identifier finds the first.
func TestAPaymentIdentifierHoldsOneClaim(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		c := store.Claim{PaymentID: "pA", Service: "svc", Op: "op", PriceUSDCUnits: 50000, Owner: "h/1",
			LeaseUntil: now.Add(time.Minute), Created: now, IDLookup: "i1:abc"}
		if ok, err := s.OpenClaim(ctx, c); err != nil || !ok {
			t.Fatalf("first: %v %v", ok, err)
		}
		c.PaymentID = "pB"
		if _, err := s.OpenClaim(ctx, c); !errors.Is(err, store.ErrIdentifierClaimed) {
			t.Fatalf("second payment, same identifier: %v", err)
		}
		c.PaymentID, c.TxID, c.Network = "pC", "txC", "n"
		if _, err := s.OpenSettledClaim(ctx, c, now); !errors.Is(err, store.ErrIdentifierClaimed) {
			t.Fatalf("a settled one, same identifier: %v", err)
		}
		got, err := s.ClaimByIdentifier(ctx, "i1:abc")
		if err != nil || got.PaymentID != "pA" || got.IDLookup != "i1:abc" {
			t.Fatalf("by identifier: %+v %v", got, err)
		}
		if _, err := s.ClaimByIdentifier(ctx, "i1:none"); !errors.Is(err, store.ErrNoClaim) {
			t.Fatalf("an unknown identifier: %v", err)
		}
		// claims without an identifier never collide on it
		for _, id := range []string{"pD", "pE"} {
			if ok, err := s.OpenClaim(ctx, store.Claim{PaymentID: id, Service: "svc", Op: "op", Owner: "h/1", LeaseUntil: now, Created: now}); err != nil || !ok {
				t.Fatalf("%s without an identifier: %v %v", id, ok, err)
			}
		}
	})
}

// undoIssued takes a store back to the schema before migration 10.
var undoIssued = []string{`DROP TABLE issued_answers`, `DROP INDEX payment_claims_id_lookup`, `ALTER TABLE payment_claims DROP COLUMN id_lookup`}

// A store whose claims were "delivered" (before reports were issued
// before their answers) calls them issued once a host of this version
// opens it.
func TestDeliveredClaimsMigrateToIssued(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		s, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{undoIssued[0], undoIssued[1], undoIssued[2],
			`INSERT INTO payment_claims (payment_id, service, op, price_usdc_units, state, house, owner, lease_until_ns, created_ns) VALUES ('old', 's', 'o', 1, 'delivered', false, '', 0, 0)`,
			`ALTER TABLE hosts DROP COLUMN version`, `DROP TABLE launch_proofs`, `DELETE FROM schema_migrations WHERE version >= 10`} {
			if _, err := s.DB().ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		s.Close()
		if s, err = store.Open(ctx, spec, dir); err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer s.Close()
		if c, err := s.GetClaim(ctx, "old"); err != nil || c.State != store.ClaimIssued {
			t.Fatalf("an older delivered claim: %+v %v", c, err)
		}
	})
}

// A claim opened with its report's issue (the embedded facilitator
// offline) is one transaction: the claim issued, its line, its kept
// answer; a second request with the same payment, transaction or
// identifier writes nothing and says which.
func TestAClaimOpenedAndIssuedAtOnce(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		c := store.Claim{PaymentID: "pA", Service: "svc", Op: "op", PriceUSDCUnits: 50000, Owner: "h/1", LeaseUntil: now.Add(time.Minute),
			Created: now, TxID: "txA", Network: "n", House: true, IDLookup: "i1:a"}
		kept := &store.Issued{SealKID: "k", Sealed: "c2VhbGVk", Expires: now.Add(time.Hour)}
		if _, err := s.OpenAndIssueClaim(ctx, c, claimLine("txA", now), kept, now); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetClaim(ctx, "pA"); err != nil || got.State != store.ClaimIssued || got.IDLookup != "i1:a" {
			t.Fatalf("the claim: %+v %v", got, err)
		}
		if _, err := s.IssuedAnswer(ctx, "pA", now); err != nil {
			t.Fatalf("its kept answer: %v", err)
		}
		for name, tc := range map[string]struct {
			c    store.Claim
			want error
		}{
			"the same payment":     {store.Claim{PaymentID: "pA", TxID: "txB", IDLookup: "i1:b"}, store.ErrClaimTaken},
			"the same transaction": {store.Claim{PaymentID: "pC", TxID: "txA", IDLookup: "i1:c"}, store.ErrDuplicateTx},
			"the same identifier":  {store.Claim{PaymentID: "pD", TxID: "txD", IDLookup: "i1:a"}, store.ErrIdentifierClaimed},
		} {
			tc.c.Service, tc.c.Op, tc.c.Owner, tc.c.Network, tc.c.Created, tc.c.LeaseUntil = "svc", "op", "h/2", "n", now, now
			if _, err := s.OpenAndIssueClaim(ctx, tc.c, claimLine(tc.c.TxID, now), kept, now); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", name, err, tc.want)
			}
		}
		if ls, _ := s.Lines(ctx); len(ls) != 1 {
			t.Fatalf("%d lines, want the first request's alone", len(ls))
		}
	})
}
