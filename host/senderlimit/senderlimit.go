// Package senderlimit makes a client's costly unpaid work cost that
// client, not the others on the host: an allowance of unpaid requests on
// paid routes per client (each is adapted before its 402, for free, as
// the criteria require), and a hold on a client whose records keep
// crashing or hanging a plugin, before anyone else is slowed. Counts are
// this host's, in memory: a restart forgets them, which costs nothing but
// a fresh allowance.
package senderlimit

import (
	"sort"
	"sync"
	"time"
)

// Config states the limits; the zero value of each field takes its
// default.
type Config struct {
	// UnpaidPerMinute is each client's allowance of unpaid requests on
	// paid routes (default 60): a token bucket of that size, refilled at
	// that rate.
	UnpaidPerMinute int
	// FaultsBeforeHold is how many plugin faults (a crash, a hang) a
	// client's records may cause within FaultWindow before its requests
	// are held (default 2).
	FaultsBeforeHold int
	FaultWindow      time.Duration // default 1 minute
	// FirstHold is a client's first hold (default 10 s); each hold that
	// follows another's end within FaultWindow doubles, up to MaxHold
	// (default 10 minutes).
	FirstHold, MaxHold time.Duration
	// MaxClients bounds the clients remembered (default 100,000): past it,
	// the idle ones are forgotten first.
	MaxClients int
	Now        func() time.Time
}

func (c *Config) defaults() {
	if c.UnpaidPerMinute <= 0 {
		c.UnpaidPerMinute = 60
	}
	if c.FaultsBeforeHold <= 0 {
		c.FaultsBeforeHold = 2
	}
	if c.FaultWindow <= 0 {
		c.FaultWindow = time.Minute
	}
	if c.FirstHold <= 0 {
		c.FirstHold = 10 * time.Second
	}
	if c.MaxHold <= 0 {
		c.MaxHold = 10 * time.Minute
	}
	if c.MaxClients <= 0 {
		c.MaxClients = 100_000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Limiter counts per client (a network address, as the trusted-proxy
// rules give it). Its methods are safe for concurrent use.
type Limiter struct {
	cfg     Config
	mu      sync.Mutex
	clients map[string]*client
}

type client struct {
	tokens   float64
	filled   time.Time
	faults   []time.Time
	heldTill time.Time
	hold     time.Duration
	seen     time.Time
}

// New is a limiter with cfg's limits.
func New(cfg Config) *Limiter {
	cfg.defaults()
	return &Limiter{cfg: cfg, clients: map[string]*client{}}
}

// Limits are the stated figures, for the catalog and the docs.
func (l *Limiter) Limits() Config { return l.cfg }

// get is addr's record, made on first sight (mu held).
func (l *Limiter) get(addr string, now time.Time) *client {
	c, ok := l.clients[addr]
	if !ok {
		if len(l.clients) >= l.cfg.MaxClients {
			l.sweep(now)
		}
		c = &client{tokens: float64(l.cfg.UnpaidPerMinute), filled: now}
		l.clients[addr] = c
	}
	c.seen = now
	return c
}

// sweep forgets the clients that would start afresh anyway: a full
// bucket, no hold, no fault in the window (mu held). If every client is
// busy, the least recently seen half goes, but for the held ones.
func (l *Limiter) sweep(now time.Time) {
	for addr, c := range l.clients {
		if now.Sub(c.seen) >= l.cfg.FaultWindow && !now.Before(c.heldTill) {
			delete(l.clients, addr)
		}
	}
	if len(l.clients) < l.cfg.MaxClients {
		return
	}
	idle := make([]string, 0, len(l.clients))
	for addr, c := range l.clients {
		if !now.Before(c.heldTill) {
			idle = append(idle, addr)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return l.clients[idle[i]].seen.Before(l.clients[idle[j]].seen) })
	for _, addr := range idle[:min(len(idle), len(l.clients)-l.cfg.MaxClients/2)] {
		delete(l.clients, addr)
	}
}

// Unpaid spends one of addr's unpaid requests: ok, or how long until one
// is back.
func (l *Limiter) Unpaid(addr string) (ok bool, retryAfter time.Duration) {
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.get(addr, now)
	rate := float64(l.cfg.UnpaidPerMinute) / float64(time.Minute)
	c.tokens = min(float64(l.cfg.UnpaidPerMinute), c.tokens+float64(now.Sub(c.filled))*rate)
	c.filled = now
	if c.tokens >= 1 {
		c.tokens--
		return true, 0
	}
	return false, time.Duration((1 - c.tokens) / rate)
}

// Refund gives addr one unpaid request back (it paid for one): a client
// that pays never runs out of the unpaid requests that fetch its 402s.
func (l *Limiter) Refund(addr string) {
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.get(addr, now)
	c.tokens = min(float64(l.cfg.UnpaidPerMinute), c.tokens+1)
}

// Refused counts a presented payment the gate refused as an unpaid
// request: it spends one; with none left, addr is held as for a fault
// (a flood of bogus payments would otherwise pass the unpaid allowance).
func (l *Limiter) Refused(addr string) {
	if ok, _ := l.Unpaid(addr); !ok {
		now := l.cfg.Now()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.holdLocked(l.get(addr, now), now)
	}
}

// Held says whether addr's requests are held for the faults its records
// caused, and for how long yet.
func (l *Limiter) Held(addr string) (held bool, retryAfter time.Duration) {
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.clients[addr]
	if !ok || !now.Before(c.heldTill) {
		return false, 0
	}
	return true, c.heldTill.Sub(now)
}

// Fault counts a plugin fault addr's record caused (a crash or a hang);
// it reports whether addr is now held.
func (l *Limiter) Fault(addr string) bool {
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.get(addr, now)
	kept := c.faults[:0]
	for _, at := range c.faults {
		if now.Sub(at) < l.cfg.FaultWindow {
			kept = append(kept, at)
		}
	}
	c.faults = append(kept, now)
	if len(c.faults) < l.cfg.FaultsBeforeHold {
		return false
	}
	l.holdLocked(c, now)
	c.faults = c.faults[:0]
	return true
}

// holdLocked holds c from now (mu held). A hold soon after the last one
// doubles: a sender that goes on after a hold is slowed more each time.
func (l *Limiter) holdLocked(c *client, now time.Time) {
	switch {
	case c.hold == 0 || now.Sub(c.heldTill) > l.cfg.FaultWindow:
		c.hold = l.cfg.FirstHold
	default:
		c.hold = min(2*c.hold, l.cfg.MaxHold)
	}
	c.heldTill = now.Add(c.hold)
}
