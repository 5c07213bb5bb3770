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
type Priority struct {
	mu    sync.Mutex
	paid  int
	clear chan struct{} // closed when paid falls to 0
	max   time.Duration
}

// NewPriority gives free requests at most yield of waiting each.
func NewPriority(yield time.Duration) *Priority {
	return &Priority{max: yield}
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
