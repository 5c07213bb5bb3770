package senderlimit

import (
	"fmt"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time             { return c.t }
func (c *clock) advance(d time.Duration)    { c.t = c.t.Add(d) }
func newClock() *clock                      { return &clock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)} }
func limiter(c *clock, cfg Config) *Limiter { cfg.Now = c.now; return New(cfg) }

// A client's unpaid allowance is a bucket of UnpaidPerMinute, refilled at
// that rate; another client's is its own.
func TestUnpaidAllowanceIsPerClient(t *testing.T) {
	c := newClock()
	l := limiter(c, Config{UnpaidPerMinute: 6})
	for i := range 6 {
		if ok, _ := l.Unpaid("a"); !ok {
			t.Fatalf("unpaid request %d of 6 refused", i+1)
		}
	}
	ok, after := l.Unpaid("a")
	if ok || after != 10*time.Second {
		t.Fatalf("the 7th: ok %v, retry after %v (want 10 s: one token at 6 a minute)", ok, after)
	}
	if ok, _ := l.Unpaid("b"); !ok {
		t.Fatal("another client was refused for the first's requests")
	}
	c.advance(10 * time.Second)
	if ok, _ := l.Unpaid("a"); !ok {
		t.Fatal("a token was not back after 10 s")
	}
}

// Faults below the threshold hold nobody; reaching it holds that client
// alone for FirstHold; a client held again right after its hold ends is
// held twice as long, up to MaxHold; one that stays clean a window starts
// over.
func TestFaultsHoldTheirSenderOnly(t *testing.T) {
	c := newClock()
	l := limiter(c, Config{FaultsBeforeHold: 2, FaultWindow: time.Minute, FirstHold: 10 * time.Second, MaxHold: 30 * time.Second})
	if l.Fault("a") {
		t.Fatal("held after one fault")
	}
	if !l.Fault("a") {
		t.Fatal("not held after two faults within the window")
	}
	if held, after := l.Held("a"); !held || after != 10*time.Second {
		t.Fatalf("held %v for %v, want 10 s", held, after)
	}
	if held, _ := l.Held("b"); held {
		t.Fatal("another client is held for the first's faults")
	}
	for _, want := range []time.Duration{20 * time.Second, 30 * time.Second, 30 * time.Second} {
		c.advance(l.cfg.FirstHold * 4) // past the hold, within the window of its end
		if held, _ := l.Held("a"); held {
			t.Fatal("still held after the hold")
		}
		l.Fault("a")
		l.Fault("a")
		if _, after := l.Held("a"); after != want {
			t.Fatalf("the next hold is %v, want %v", after, want)
		}
	}
	c.advance(31*time.Second + 2*time.Minute)
	l.Fault("a")
	l.Fault("a")
	if _, after := l.Held("a"); after != 10*time.Second {
		t.Fatalf("after a clean window the hold is %v, want 10 s", after)
	}
	// two faults more than a window apart hold nobody
	c.advance(time.Hour)
	l.Fault("c")
	c.advance(2 * time.Minute)
	if l.Fault("c") {
		t.Fatal("faults two minutes apart held their sender")
	}
}

// The limiter remembers at most MaxClients: idle ones are forgotten
// first, and a held client is kept while its hold lasts.
func TestClientsAreBounded(t *testing.T) {
	c := newClock()
	l := limiter(c, Config{MaxClients: 10, FaultsBeforeHold: 1, FirstHold: time.Hour, MaxHold: time.Hour})
	l.Fault("held")
	for i := range 100 {
		c.advance(time.Second)
		l.Unpaid(fmt.Sprintf("client-%d", i))
		if n := len(l.clients); n > 10 {
			t.Fatalf("%d clients remembered, the bound is 10", n)
		}
	}
	if held, _ := l.Held("held"); !held {
		t.Error("a held client was forgotten while held")
	}
}
