// Package membudget ties a plugin process's soft memory limit to the
// request bodies it is working on. Go's collector lets a heap grow to
// twice what the last collection found live (GOGC=100); for an engine
// whose working set is a few times its input, that doubling is most of
// its peak memory. A soft limit (runtime/debug.SetMemoryLimit) makes the
// collector run sooner as memory nears it, so each request in flight is
// given a budget of a multiple of its body, and while none is in flight
// there is no limit at all (an idle process has nothing to collect).
//
// The limit is soft: a request whose working set outgrows its budget is
// slowed by extra collection (the runtime caps that at half the CPU), never
// refused. An operator who sets GOMEMLIMIT keeps their own limit: the
// budget then stays off.
package membudget

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// PerBodyByte is a request's budget per byte of its body, and MinPerRequest
// the least any request is given (a small body's working set is set by
// the engine, not the body). Measured on context-audit's max-size record
// (5 MiB; docs/benchmarks.md): its family's live set peaks near 5.4 times
// the body. A budget of 10 times cut the family's peak growth from about
// 59 to 49 MiB with no measurable change in request time; 8 times cut it
// to 43 MiB but cost about 3 % of the time, in collections and in page
// faults on memory the runtime returned to stay under the limit.
const (
	PerBodyByte   = 10
	MinPerRequest = 32 << 20
)

// Budget is one process's budget. Its methods are safe for concurrent use.
type Budget struct {
	set  func(int64) int64
	base int64

	mu       sync.Mutex
	reserved int64 // the budgets of the requests in flight
}

// New returns the process's budget, its base the memory the runtime holds
// now (call it once the process is idle and initialised), or nil when the
// operator has set GOMEMLIMIT.
func New() *Budget {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return nil
	}
	return newBudget(debug.SetMemoryLimit, held())
}

func newBudget(set func(int64) int64, base int64) *Budget {
	return &Budget{set: set, base: base}
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
// (exactly once). A nil Budget reserves nothing.
func (b *Budget) Reserve(body int) (release func()) {
	if b == nil {
		return func() {}
	}
	n := max(int64(body)*PerBodyByte, MinPerRequest)
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
				b.set(math.MaxInt64) // idle: no limit, Go's default
				return
			}
			b.set(b.base + b.reserved)
		})
	}
}
