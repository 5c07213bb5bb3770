package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// A sign-in nonce is spent once across every host of a store, even when
// two spend it at the same instant; a sweep deletes the records whose
// keep has passed and leaves the rest; a store whose schema rows were set
// back before v13 migrates again without losing them.
func TestSignInNoncesAreSpentOnce(t *testing.T) {
	each(t, func(t *testing.T, kind string) {
		spec, dir := storetest.Spec(t, kind)
		a, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		b := a
		if kind == "postgres" { // a second host on the same database
			if b, err = store.Open(ctx, spec, dir); err != nil {
				t.Fatal(err)
			}
			defer b.Close()
		}
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		var wg sync.WaitGroup
		var mu sync.Mutex
		fresh := 0
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := a
				if i%2 == 1 {
					st = b
				}
				ok, err := st.UseSignInNonce(ctx, "00112233445566778899aabbccddeeff", t0.Add(5*time.Minute))
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					fresh++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if fresh != 1 {
			t.Fatalf("one nonce spent by 16 at once: %d were told it was fresh, want 1", fresh)
		}
		if ok, err := b.UseSignInNonce(ctx, "ffeeddccbbaa99887766554433221100", t0.Add(10*time.Minute)); !ok || err != nil {
			t.Fatalf("another nonce: %v %v", ok, err)
		}
		if n, err := a.SweepSignInNonces(ctx, t0.Add(6*time.Minute)); n != 1 || err != nil {
			t.Fatalf("sweep at +6 min: %d %v, want the first nonce alone", n, err)
		}
		if n, _ := a.SignInNonces(ctx); n != 1 {
			t.Fatalf("after the sweep: %d nonces kept, want 1", n)
		}
		// kept while it is kept: spent still
		if ok, _ := a.UseSignInNonce(ctx, "ffeeddccbbaa99887766554433221100", t0.Add(10*time.Minute)); ok {
			t.Error("a kept nonce was fresh again")
		}
		if _, err := a.DB().ExecContext(ctx, `DELETE FROM schema_migrations WHERE version >= 13`); err != nil {
			t.Fatal(err)
		}
		again, err := store.Open(ctx, spec, dir)
		if err != nil {
			t.Fatalf("reopen after the schema rows were set back: %v", err)
		}
		defer again.Close()
		if n, _ := again.SignInNonces(ctx); n != 1 {
			t.Errorf("after migrating again: %d nonces kept, want 1", n)
		}
	})
}
