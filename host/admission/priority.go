package admission

import (
	"context"
	"sync"
	"time"
)

// Priority puts paid requests before free ones on a host's cores: while
// any paid request is in hand, a free one waits to enter (at most a
// bound, so paid traffic that never pauses cannot starve the free tier).
// Separate places keep a flood of pre-checks from refusing paid calls;
// this keeps it from slowing them, since a request in its place still
// shares the cores (the host's and its plugin's) with every other.
//
// Holding free requests back is not enough alone: when the last paid
// request ends, every free one held is let go at once, and the next paid
// request finds them all ahead of it on the cores. So while paid traffic
// is recent (a paid request in hand, or one ended within the yield
// bound), free requests also take turns, a few at a time (Turn).
type Priority struct {
	mu      sync.Mutex
	paid    int
	clear   chan struct{} // closed when paid falls to 0
	lastEnd time.Time     // when paid last fell to 0
	max     time.Duration
	turns   chan struct{}
	now     func() time.Time
}

// NewPriority gives free requests at most yield of waiting each, and
// while paid traffic is recent lets turns of them work at once.
func NewPriority(yield time.Duration, turns int) *Priority {
	return &Priority{max: yield, turns: make(chan struct{}, max(turns, 1)), now: time.Now}
}

// Paid marks a paid request in hand until the returned func is called
// (once). The zero of a *Priority (nil) marks nothing.
func (p *Priority) Paid() (done func()) {
	if p == nil {
		return func() {}
	}
	p.mu.Lock()
	if p.paid == 0 {
		p.clear = make(chan struct{})
	}
	p.paid++
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		p.paid--
		if p.paid == 0 {
			close(p.clear)
			p.lastEnd = p.now()
		}
		p.mu.Unlock()
	})
}

// Yield waits, before a free request enters, while a paid one is in
// hand: until none is, the bound passes, or ctx ends (its error then).
func (p *Priority) Yield(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if p.paid == 0 {
		p.mu.Unlock()
		return nil
	}
	clear := p.clear
	p.mu.Unlock()
	t := time.NewTimer(p.max)
	defer t.Stop()
	select {
	case <-clear:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Turn is a free request's turn, taken once it holds a place (so the
// places still bound how many wait, and the bodies they hold) and held
// until done is called (once): while paid traffic is recent, only a few
// free requests work at a time, so a paid request arriving finds at most
// that many ahead of it on the cores and in the store's commits. Without
// recent paid traffic no turn is needed: free requests then run as many
// at a time as their places allow.
func (p *Priority) Turn(ctx context.Context) (done func(), err error) {
	if p == nil || !p.recent() {
		return func() {}, nil
	}
	select {
	case p.turns <- struct{}{}:
		return sync.OnceFunc(func() { <-p.turns }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// recent is true while a paid request is in hand or one ended within the
// yield bound.
func (p *Priority) recent() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paid > 0 || !p.lastEnd.IsZero() && p.now().Sub(p.lastEnd) < p.max
}
