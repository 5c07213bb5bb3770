// Package ratelog keeps a failure that repeats from filling the log: while
// the store is unreachable every poll and every request fails the same
// way, and a line a second per source buries what an operator needs to
// read. The first failure is logged at once; the same one again at most
// once per interval, saying how many were not logged; and the return to
// working once.
package ratelog

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Limiter rate-limits log lines by their message.
type Limiter struct {
	log   hclog.Logger
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	state map[string]*failing
}

type failing struct {
	logged     time.Time
	suppressed int
}

// New limits log's repeated lines to one each every.
func New(log hclog.Logger, every time.Duration, now func() time.Time) *Limiter {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{log: log, every: every, now: now, state: map[string]*failing{}}
}

// Warn logs msg at WARN unless it was logged less than an interval ago.
func (l *Limiter) Warn(msg string, args ...any) { l.emit(hclog.Warn, msg, args) }

// Error logs msg at ERROR unless it was logged less than an interval ago.
func (l *Limiter) Error(msg string, args ...any) { l.emit(hclog.Error, msg, args) }

func (l *Limiter) emit(level hclog.Level, msg string, args []any) {
	if l == nil {
		return
	}
	now := l.now()
	l.mu.Lock()
	f := l.state[msg]
	if f != nil && now.Sub(f.logged) < l.every {
		f.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := 0
	if f == nil {
		f = &failing{}
		l.state[msg] = f
	}
	suppressed, f.logged, f.suppressed = f.suppressed, now, 0
	l.mu.Unlock()
	if suppressed > 0 {
		args = append(args, "repeats_not_logged", suppressed, "log_interval", l.every.String())
	}
	l.log.Log(level, msg, args...)
}

// Cleared ends msg's failure: if it was failing, recovered is logged at
// INFO with how many repeats went unlogged since the last line.
func (l *Limiter) Cleared(msg, recovered string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	f := l.state[msg]
	delete(l.state, msg)
	l.mu.Unlock()
	if f == nil {
		return
	}
	if f.suppressed > 0 {
		args = append(args, "repeats_not_logged", f.suppressed)
	}
	l.log.Info(recovered, args...)
}
