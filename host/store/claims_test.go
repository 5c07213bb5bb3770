package store_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

func claimLine(tx string, at time.Time) store.Line {
	return store.Line{Service: "svc", CriteriaID: "c/v1", CriteriaRevision: "1", At: at, PriceUSDCUnits: 50000,
		TxID: &tx, CAD: store.CAD{Pending: true}, FamilyFields: `{}`}
}

// Many hosts racing to claim one payment: exactly one opens it, no other
// takes its lease while it runs; the line and the move to delivered are
// one transaction, refused whole for a holder whose lease was taken over.
func TestClaimsAreExactAcrossHosts(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		stores := []*store.Store{storetest.Open(t, kind)}
		if kind == "postgres" {
			spec, dir := storetest.Spec(t, kind)
			for range 2 {
				s, err := store.Open(ctx, spec, dir)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				stores = append(stores, s)
			}
			stores = stores[1:]
		}
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		var opened, leased atomic.Int64
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[i%len(stores)]
				owner := "h" + string(rune('a'+i%26)) + "/1"
				ok, err := s.OpenClaim(ctx, store.Claim{PaymentID: "p1", Service: "svc", Op: "op", PriceUSDCUnits: 50000,
					Owner: owner, LeaseUntil: now.Add(10 * time.Second), Created: now})
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					opened.Add(1)
					return
				}
				if ok, err := s.LeaseClaim(ctx, "p1", owner, now, now.Add(10*time.Second)); err != nil {
					t.Error(err)
				} else if ok {
					leased.Add(1)
				}
			}()
		}
		wg.Wait()
		if opened.Load() != 1 || leased.Load() != 0 {
			t.Fatalf("%d opened, %d leased inside the lease; want 1 and 0", opened.Load(), leased.Load())
		}
		s := stores[0]
		c, err := s.GetClaim(ctx, "p1")
		if err != nil || c.State != store.ClaimSettling {
			t.Fatalf("claim %+v %v", c, err)
		}
		holder := c.Owner
		c.TxID, c.Payer, c.Network = "tx1", "payer", "net"
		if err := s.SettleClaim(ctx, "p1", "someone/else", c, now); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("settled by a host without the lease: %v", err)
		}
		if err := s.SettleClaim(ctx, "p1", holder, c, now); err != nil {
			t.Fatal(err)
		}
		// the holder dies; after the lease another host takes it over
		later := now.Add(11 * time.Second)
		if ok, err := s.LeaseClaim(ctx, "p1", "hz/2", later, later.Add(10*time.Second)); err != nil || !ok {
			t.Fatalf("take over after the lease: %v %v", ok, err)
		}
		if _, err := s.IssueClaim(ctx, "p1", holder, claimLine("tx1", later), nil, later); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("the old holder delivered: %v", err)
		}
		if lines, _ := s.Lines(ctx); len(lines) != 0 {
			t.Fatalf("a refused delivery left %d lines", len(lines))
		}
		if _, err := s.IssueClaim(ctx, "p1", "hz/2", claimLine("tx1", later), nil, later); err != nil {
			t.Fatal(err)
		}
		if c, _ := s.GetClaim(ctx, "p1"); c.State != store.ClaimIssued || c.TxID != "tx1" {
			t.Errorf("after delivery: %+v", c)
		}
		if ok, _ := s.LeaseClaim(ctx, "p1", "hy/3", later.Add(time.Hour), later.Add(2*time.Hour)); ok {
			t.Error("a delivered claim was leased again")
		}
		if taken, _ := s.TxClaimed(ctx, "tx1"); !taken {
			t.Error("the settled transaction is not known")
		}
	})
}

// A restarted host frees the leases its earlier run held, and only those.
func TestReleaseLeasesOfAnEarlierRun(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		for _, c := range []struct{ id, owner string }{{"a", "host1/old"}, {"b", "host2/live"}} {
			if _, err := s.OpenClaim(ctx, store.Claim{PaymentID: c.id, Service: "svc", Op: "op", Owner: c.owner, LeaseUntil: now.Add(time.Hour), Created: now}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.ReleaseLeasesOf(ctx, "host1", "host1/new")
		if err != nil || n != 2 {
			t.Fatalf("release: %d undelivered, %v", n, err)
		}
		if ok, _ := s.LeaseClaim(ctx, "a", "host1/new", now, now.Add(time.Minute)); !ok {
			t.Error("the earlier run's lease was not released")
		}
		if ok, _ := s.LeaseClaim(ctx, "b", "host1/new", now, now.Add(time.Minute)); ok {
			t.Error("another host's live lease was released")
		}
	})
}

// A claim keeps what the chain will know its payment by: the embedded
// facilitator's transaction id with its blockhash, or, for a remote
// facilitator (whose transaction id comes only once it settled), the
// blockhash and memo; a transaction id without a blockhash is not kept.
func TestAClaimKeepsWhatTheChainKnowsItBy(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		for _, c := range []store.Claim{
			{PaymentID: "local", TxID: "Tx1", Blockhash: "Hash1"},
			{PaymentID: "remote", Blockhash: "Hash2", Memo: "assay:00000000000000000000000000000000"},
			{PaymentID: "offline", TxID: "House1"},
		} {
			c.Service, c.Op, c.PriceUSDCUnits, c.Owner, c.LeaseUntil, c.Created = "svc", "op", 1, "h/1", now.Add(time.Second), now
			if ok, err := s.OpenClaim(ctx, c); err != nil || !ok {
				t.Fatalf("open %s: %v %v", c.PaymentID, ok, err)
			}
		}
		for id, want := range map[string][3]string{"local": {"Tx1", "Hash1", ""}, "remote": {"", "Hash2", "assay:00000000000000000000000000000000"}, "offline": {"", "", ""}} {
			c, err := s.GetClaim(ctx, id)
			if err != nil || [3]string{c.TxID, c.Blockhash, c.Memo} != want {
				t.Errorf("%s: %+v %v, want %v", id, c, err, want)
			}
		}
	})
}

// A claim opened settled (the embedded facilitator without a chain) is
// read back settled with its settlement, at once (on SQLite the read is
// on a connection of its own and must see the commit); the payment's
// second open finds it, and another payment naming its transaction is
// refused as a duplicate.
func TestAClaimOpensSettled(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		fee := int64(5000)
		c := store.Claim{PaymentID: "p1", Service: "svc", Op: "op", PriceUSDCUnits: 50000, Payer: "Payer1", House: true,
			Owner: "h/1", LeaseUntil: now.Add(time.Minute), Created: now, TxID: "Tx1", Network: "solana:devnet",
			FeeLamports: &fee, Blockhash: "Hash1", Memo: "assay:00000000000000000000000000000001"}
		if ok, err := s.OpenSettledClaim(ctx, c, now); err != nil || !ok {
			t.Fatalf("open settled: %v %v", ok, err)
		}
		got, err := s.GetClaim(ctx, "p1")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != store.ClaimSettled || got.TxID != "Tx1" || got.Network != "solana:devnet" || got.FeeLamports == nil ||
			*got.FeeLamports != 5000 || got.Payer != "Payer1" || !got.House || got.Blockhash != "Hash1" || got.Memo != c.Memo {
			t.Fatalf("read back %+v", got)
		}
		if taken, err := s.TxClaimed(ctx, "Tx1"); err != nil || !taken {
			t.Fatalf("tx claimed: %v %v", taken, err)
		}
		if ok, err := s.OpenSettledClaim(ctx, c, now); err != nil || ok {
			t.Fatalf("second open: %v %v, want not opened", ok, err)
		}
		c.PaymentID = "p2"
		if _, err := s.OpenSettledClaim(ctx, c, now); !errors.Is(err, store.ErrDuplicateTx) {
			t.Fatalf("another payment with the same transaction: %v, want ErrDuplicateTx", err)
		}
		// delivered from settled, as a claim that went through settling
		if _, err := s.IssueClaim(ctx, "p1", "h/1", claimLine("Tx1", now), nil, now); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetClaim(ctx, "p1"); got.State != store.ClaimIssued {
			t.Fatalf("after delivery: %s", got.State)
		}
	})
}

// WithdrawClaim deletes only what an offline settlement opened and no
// report followed: the owner's house claim in state settled. A claim
// that is another owner's, not a house one, still settling or delivered
// stays.
func TestWithdrawTakesBackOnlyAnUndeliveredHouseClaim(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		s := storetest.Open(t, kind)
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		open := func(id string, house bool) store.Claim {
			c := store.Claim{PaymentID: id, Service: "svc", Op: "op", PriceUSDCUnits: 1, Payer: "Payer1", House: house,
				Owner: "h/1", LeaseUntil: now.Add(time.Minute), Created: now, TxID: "Tx-" + id, Network: "solana:devnet"}
			if ok, err := s.OpenSettledClaim(ctx, c, now); err != nil || !ok {
				t.Fatalf("open %s: %v %v", id, ok, err)
			}
			return c
		}
		open("withdrawn", true)
		open("paid", false)
		open("delivered", true)
		if _, err := s.IssueClaim(ctx, "delivered", "h/1", claimLine("Tx-delivered", now), nil, now); err != nil {
			t.Fatal(err)
		}
		open("others", true)
		settling := store.Claim{PaymentID: "settling", Service: "svc", Op: "op", PriceUSDCUnits: 1, House: true,
			Owner: "h/1", LeaseUntil: now.Add(time.Minute), Created: now}
		if ok, err := s.OpenClaim(ctx, settling); err != nil || !ok {
			t.Fatalf("open settling: %v %v", ok, err)
		}
		for _, id := range []string{"withdrawn", "paid", "delivered", "settling"} {
			if err := s.WithdrawClaim(ctx, id, "h/1"); err != nil {
				t.Fatalf("withdraw %s: %v", id, err)
			}
		}
		if err := s.WithdrawClaim(ctx, "others", "h/2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetClaim(ctx, "withdrawn"); !errors.Is(err, store.ErrNoClaim) {
			t.Errorf("the withdrawn claim: %v, want ErrNoClaim", err)
		}
		for _, id := range []string{"paid", "delivered", "settling", "others"} {
			if _, err := s.GetClaim(ctx, id); err != nil {
				t.Errorf("%s: %v, want kept", id, err)
			}
		}
		// the payment is as before: it opens again
		open("withdrawn", true)
	})
}
