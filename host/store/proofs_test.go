package store_test

import (
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// A passed proof is found under its key, by every host of the store; a
// second record of the same key (another host proved the same set
// meanwhile) keeps the first; forgetting them all makes every set
// unproven again.
func TestLaunchProofsAreKeptByKey(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		s, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, ok, err := s.ProofOf(ctx, "k1"); ok || err != nil {
			t.Fatalf("a fresh store holds a proof: %v %v", ok, err)
		}
		first := store.Proof{Key: "k1", Service: "svc", CriteriaID: "c/v1", CriteriaRevision: "1.0.0", Kind: "launch",
			Passed: time.Unix(1000, 0).UTC(), HostID: "h1", Version: "v1", Cases: 12, Planted: 40}
		if err := s.PutProof(ctx, first); err != nil {
			t.Fatal(err)
		}
		again := first
		again.HostID, again.Passed = "h2", time.Unix(2000, 0).UTC()
		if err := s.PutProof(ctx, again); err != nil {
			t.Fatalf("the same set proven by another host: %v", err)
		}
		got, ok, err := s.ProofOf(ctx, "k1")
		if err != nil || !ok || got != first {
			t.Fatalf("proof k1: %+v %v %v, want %+v", got, ok, err, first)
		}
		if _, ok, _ := s.ProofOf(ctx, "k2"); ok {
			t.Error("another key found a proof")
		}
		if n, err := s.ForgetProofs(ctx); err != nil || n != 1 {
			t.Fatalf("forget: %d %v", n, err)
		}
		if _, ok, _ := s.ProofOf(ctx, "k1"); ok {
			t.Error("a forgotten proof is still found")
		}
	})
}
