package membudget

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
	"testing"
)

// recorder stands for debug.SetMemoryLimit.
type recorder struct {
	mu    sync.Mutex
	limit int64
	peak  int64
}

func (r *recorder) set(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.limit
	r.limit = n
	if n != math.MaxInt64 {
		r.peak = max(r.peak, n)
	}
	return old
}

// The limit is the base plus every in-flight request's budget, a multiple
// of its body with a floor; with none in flight it is the idle limit
// (base plus a floor when the budget alone triggers collection, else
// none). Release is idempotent.
func TestLimitFollowsTheRequestsInFlight(t *testing.T) {
	const base = 10 << 20
	for _, alone := range []bool{true, false} {
		idle := int64(math.MaxInt64)
		if alone {
			idle = base + FamilyFloor
		}
		r := &recorder{}
		b := newBudget(r.set, base, FamilyPerByte, FamilyFloor, alone)
		if r.limit != idle {
			t.Fatalf("alone %v, new: limit %d, want %d", alone, r.limit, idle)
		}
		big := b.Reserve(5 << 20)
		if want := int64(base + 5<<20*FamilyPerByte); r.limit != want {
			t.Fatalf("alone %v, one 5 MiB request: limit %d, want %d", alone, r.limit, want)
		}
		small := b.Reserve(1000)
		if want := int64(base + 5<<20*FamilyPerByte + FamilyFloor); r.limit != want {
			t.Fatalf("alone %v, and a small one: limit %d, want %d", alone, r.limit, want)
		}
		big()
		big()
		if want := int64(base + FamilyFloor); r.limit != want {
			t.Fatalf("alone %v, the big one released (twice): limit %d, want %d", alone, r.limit, want)
		}
		small()
		if r.limit != idle {
			t.Fatalf("alone %v, idle again: limit %d, want %d", alone, r.limit, idle)
		}
	}
}

// An adapter's budget is its own multiple and floor.
func TestAdapterBudget(t *testing.T) {
	r := &recorder{}
	b := newBudget(r.set, 0, AdapterPerByte, AdapterFloor, true)
	b.Reserve(5 << 20)
	if want := int64(5 << 20 * AdapterPerByte); r.limit != want {
		t.Errorf("a 5 MiB record: limit %d, want %d", r.limit, want)
	}
	b.Reserve(1000)
	if want := int64(5<<20*AdapterPerByte + AdapterFloor); r.limit != want {
		t.Errorf("and a small one: limit %d, want %d", r.limit, want)
	}
}

// Concurrent requests leave the budget where it started.
func TestConcurrentReservationsBalance(t *testing.T) {
	r := &recorder{}
	b := newBudget(r.set, 0, FamilyPerByte, FamilyFloor, false)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() { b.Reserve(i << 20)() })
	}
	wg.Wait()
	if r.limit != math.MaxInt64 || b.reserved != 0 {
		t.Errorf("after every request: limit %d, reserved %d", r.limit, b.reserved)
	}
	if r.peak < FamilyFloor || r.peak > 16*(15<<20)*FamilyPerByte {
		t.Errorf("peak limit %d outside what 16 requests can reserve", r.peak)
	}
}

// An operator's GOMEMLIMIT wins: no budget, and a nil budget reserves
// nothing.
func TestOperatorLimitWins(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	if ForFamily() != nil || ForAdapter() != nil {
		t.Fatal("a budget despite GOMEMLIMIT")
	}
	var b *Budget
	b.Reserve(5 << 20)()
}

// The base is the runtime's own holding: some, and not absurd.
func TestBaseIsWhatTheRuntimeHolds(t *testing.T) {
	if h := held(); h < 1<<20 || h > 1<<34 {
		t.Errorf("the runtime holds %d bytes", h)
	}
}

// Without GOGC (or with an empty one) the budget is the collector's only
// trigger: GOGC goes off and an idle process is bounded by its base plus
// a floor. An operator's GOGC stays, and idle is then unlimited, as Go's
// default, unless that GOGC is off.
func TestOperatorGOGCStays(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, c := range []struct {
		gogc    string // "-": unset
		pct     int    // what the runtime had from that GOGC at start
		wantPct int
		bounded bool
	}{
		{"-", 100, -1, true},
		{"", 100, -1, true},
		{"150", 150, 150, false},
		{"off", -1, -1, true},
	} {
		t.Setenv("GOGC", c.gogc) // restored after the test
		if c.gogc == "-" {
			os.Unsetenv("GOGC")
		}
		debug.SetGCPercent(c.pct)
		b := ForFamily()
		if b == nil || debug.SetGCPercent(100) != c.wantPct || (b.idle == b.base+FamilyFloor) != c.bounded ||
			!c.bounded && b.idle != math.MaxInt64 {
			t.Errorf("GOGC %q: budget %+v", c.gogc, b)
		}
	}
}
