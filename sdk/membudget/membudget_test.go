package membudget

import (
	"math"
	"sync"
	"testing"
)

// The limit is the base plus every in-flight request's budget, a multiple
// of its body with a floor, and no limit once none is in flight; release
// is idempotent.
func TestLimitFollowsTheRequestsInFlight(t *testing.T) {
	var limit int64 = math.MaxInt64
	b := newBudget(func(n int64) int64 { old := limit; limit = n; return old }, 10<<20)
	big := b.Reserve(5 << 20)
	if want := int64(10<<20 + 5<<20*PerBodyByte); limit != want {
		t.Fatalf("one 5 MiB request: limit %d, want %d", limit, want)
	}
	small := b.Reserve(1000)
	if want := int64(10<<20 + 5<<20*PerBodyByte + MinPerRequest); limit != want {
		t.Fatalf("and a small one: limit %d, want %d", limit, want)
	}
	big()
	big()
	if want := int64(10<<20 + MinPerRequest); limit != want {
		t.Fatalf("the big one released (twice): limit %d, want %d", limit, want)
	}
	small()
	if limit != math.MaxInt64 {
		t.Fatalf("idle: limit %d, want none", limit)
	}
}

// Concurrent requests leave the budget where it started.
func TestConcurrentReservationsBalance(t *testing.T) {
	var mu sync.Mutex
	limit, peak := int64(math.MaxInt64), int64(0)
	b := newBudget(func(n int64) int64 {
		mu.Lock()
		defer mu.Unlock()
		old := limit
		limit = n
		if n != math.MaxInt64 {
			peak = max(peak, n)
		}
		return old
	}, 0)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() { b.Reserve(i << 20)() })
	}
	wg.Wait()
	if limit != math.MaxInt64 || b.reserved != 0 {
		t.Errorf("after every request: limit %d, reserved %d", limit, b.reserved)
	}
	if peak < MinPerRequest || peak > 16*(15<<20)*PerBodyByte {
		t.Errorf("peak limit %d outside what 16 requests can reserve", peak)
	}
}

// An operator's GOMEMLIMIT wins: no budget, and a nil budget reserves
// nothing.
func TestOperatorLimitWins(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	b := New()
	if b != nil {
		t.Fatal("a budget despite GOMEMLIMIT")
	}
	b.Reserve(5 << 20)()
}

// The base New reads is the runtime's own holding: some, and not absurd.
func TestBaseIsWhatTheRuntimeHolds(t *testing.T) {
	if h := held(); h < 1<<20 || h > 1<<34 {
		t.Errorf("the runtime holds %d bytes", h)
	}
}
