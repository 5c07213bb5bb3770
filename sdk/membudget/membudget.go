// Package membudget ties a plugin process's memory to the requests it is
// working on. Go's collector, left to GOGC=100, lets a heap grow to twice
// what the last collection found live; for an engine whose working set is
// a few times its input, that doubling is most of its peak. Here the
// process's soft memory limit (runtime/debug.SetMemoryLimit) is its size
// at idle plus a budget for each request in flight, a multiple of the
// request's body with a floor, and the collector runs when memory nears
// that limit rather than at each doubling (GOGC off): the budget is the
// one memory policy, so a plugin neither outgrows it nor collects more
// often than it needs to.
//
// The limit is soft: a request whose working set outgrows its budget is
// slowed by extra collection (the runtime caps that at half the CPU), never
// refused. An operator who sets GOMEMLIMIT keeps their own limit and Go's
// collector (no budget); one who sets only GOGC keeps that, with the
// budget as a limit on top (and, with GOGC=off, as the collector's
// trigger while idle too).
package membudget

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The budgets, per byte of a request's body and the least any request is
// given (a small body's working set is set by the engine, not the body).
// Measured on context-audit's max-size record (5 MiB; docs/benchmarks.md):
// the family's live set peaks near 5.4 times the body and the adapter's
// near 2.6 times.
const (
	FamilyPerByte  = 10
	FamilyFloor    = 32 << 20
	AdapterPerByte = 4
	AdapterFloor   = 16 << 20
)

// Budget is one process's budget. Its methods are safe for concurrent use.
type Budget struct {
	set            func(int64) int64
	base           int64
	perByte, floor int64
	// idle is the limit with no request in flight: base plus one floor
	// when the budget alone triggers collection, else none
	idle int64

	mu       sync.Mutex
	reserved int64 // the budgets of the requests in flight
}

// ForFamily is a family process's budget (nil when the operator set
// GOMEMLIMIT). Call it once the process is idle and initialised: its
// memory then is the base.
func ForFamily() *Budget { return fromEnv(FamilyPerByte, FamilyFloor) }

// ForAdapter is an adapter process's budget, as ForFamily.
func ForAdapter() *Budget { return fromEnv(AdapterPerByte, AdapterFloor) }

func fromEnv(perByte, floor int64) *Budget {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return nil
	}
	if os.Getenv("GOGC") == "" { // unset or empty: Go's default, which the budget replaces
		debug.SetGCPercent(-1)
	}
	// the setting in force (the operator's GOGC=off counts as off)
	pct := debug.SetGCPercent(-1)
	debug.SetGCPercent(pct)
	return newBudget(debug.SetMemoryLimit, held(), perByte, floor, pct < 0)
}

// newBudget sets the idle limit; alone says the limit is the collector's
// only trigger (GOGC off), so idle memory must be bounded too.
func newBudget(set func(int64) int64, base, perByte, floor int64, alone bool) *Budget {
	b := &Budget{set: set, base: base, perByte: perByte, floor: floor, idle: math.MaxInt64}
	if alone {
		b.idle = base + floor
	}
	set(b.idle)
	return b
}

// held is the memory the Go runtime holds from the system: what a memory
// limit counts.
func held() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// Reserve budgets one request of body bytes until release is called
// (exactly once; later calls do nothing). A nil Budget reserves nothing.
func (b *Budget) Reserve(body int) (release func()) {
	if b == nil {
		return func() {}
	}
	n := max(int64(body)*b.perByte, b.floor)
	b.mu.Lock()
	b.reserved += n
	b.set(b.base + b.reserved)
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.reserved -= n
			if b.reserved == 0 {
				b.set(b.idle)
				return
			}
			b.set(b.base + b.reserved)
		})
	}
}
