package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitFor polls cond: the gate's counters change in other goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 2000 {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNilGateAdmitsEverything(t *testing.T) {
	g := New(Limits{})
	if g != nil {
		t.Fatal("no working bound should give no gate")
	}
	for range 100 {
		leave, err := g.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer leave()
	}
	if g.Working() != 0 || g.Waiting() != 0 || g.Wait() != 0 {
		t.Error("a nil gate counts nothing")
	}
}

// Places are taken up to Working, then requests wait up to Waiting, then
// they are refused at once; a freed place goes to a waiter.
func TestPlacesThenQueueThenBusy(t *testing.T) {
	g := New(Limits{Working: 2, Waiting: 2, Wait: time.Minute})
	ctx := context.Background()
	a, err := g.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.Working() != 2 || g.Waiting() != 0 {
		t.Fatalf("working %d waiting %d", g.Working(), g.Waiting())
	}
	leaves := make(chan func(), 2)
	for range 2 {
		go func() {
			leave, err := g.Enter(ctx)
			if err != nil {
				t.Error(err)
				leave = func() {}
			}
			leaves <- leave
		}()
	}
	waitFor(t, "two waiters", func() bool { return g.Waiting() == 2 })
	if _, err := g.Enter(ctx); !errors.Is(err, ErrBusy) {
		t.Fatalf("a request past places and queue: %v", err)
	}
	if g.Waiting() != 2 {
		t.Fatalf("a refused request stayed counted: waiting %d", g.Waiting())
	}
	a()
	first := <-leaves
	a() // a second leave frees nothing
	if g.Working() != 2 || g.Waiting() != 1 {
		t.Fatalf("after one leave (twice): working %d waiting %d", g.Working(), g.Waiting())
	}
	b()
	first()
	(<-leaves)()
	if g.Working() != 0 || g.Waiting() != 0 {
		t.Errorf("all left: working %d waiting %d", g.Working(), g.Waiting())
	}
}

// A wait ends with ErrBusy when the gate's Wait runs out, and with the
// context's error when the caller goes away; either way the queue's place
// is given back.
func TestWaitEnds(t *testing.T) {
	g := New(Limits{Working: 1, Waiting: 1, Wait: 20 * time.Millisecond})
	hold, err := g.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	if _, err := g.Enter(context.Background()); !errors.Is(err, ErrBusy) {
		t.Errorf("wait ran out: %v", err)
	}
	if g.Waiting() != 0 {
		t.Errorf("waiting %d after the wait ran out", g.Waiting())
	}
	g.limits.Wait = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := g.Enter(ctx); got <- err }()
	waitFor(t, "the request queued", func() bool { return g.Waiting() == 1 })
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("caller gone: %v", err)
	}
	if g.Waiting() != 0 || g.Working() != 1 {
		t.Errorf("after the caller left: working %d waiting %d", g.Working(), g.Waiting())
	}
}

// Waiting 0 refuses at once whenever every place is taken.
func TestNoQueue(t *testing.T) {
	g := New(Limits{Working: 1, Wait: time.Hour})
	hold, _ := g.Enter(context.Background())
	if _, err := g.Enter(context.Background()); !errors.Is(err, ErrBusy) {
		t.Errorf("no queue: %v", err)
	}
	hold()
	leave, err := g.Enter(context.Background())
	if err != nil {
		t.Fatalf("a freed place: %v", err)
	}
	leave()
}

// The queue of a service of small bodies is longer: WaitingBytes of them.
func TestWaitingForBodyCap(t *testing.T) {
	l := Limits{Working: 2, Waiting: 8, WaitingBytes: 64 << 20}
	for bodyCap, want := range map[int64]int{5 << 20: 12, 256 << 10: 128, 1 << 20: 64, 64 << 20: 8, 1 << 30: 8, 0: 8, 1: 128} {
		if got := l.ForBodyCap(bodyCap).Waiting; got != want {
			t.Errorf("cap %d: waiting %d, want %d", bodyCap, got, want)
		}
	}
	if got := (Limits{Working: 1, Waiting: 3}).ForBodyCap(1); got.Waiting != 3 {
		t.Errorf("no WaitingBytes: waiting %d", got.Waiting)
	}
}

// Small places: SmallWorking of them, at least four waiting per place or
// what the bodies' bytes allow; none when SmallWorking is 0.
func TestSmallLimits(t *testing.T) {
	if _, ok := (Limits{Working: 2, Waiting: 8}).Small(1 << 16); ok {
		t.Error("small places without SmallWorking")
	}
	got, ok := (Limits{Working: 2, Waiting: 0, SmallWorking: 16, Wait: time.Second}).Small(1 << 16)
	if !ok || got.Working != 16 || got.Waiting != 64 || got.Wait != time.Second || got.SmallWorking != 0 {
		t.Errorf("small limits %+v %v: want 16 working, 64 waiting, the same wait", got, ok)
	}
	got, _ = (Limits{Working: 2, Waiting: 8, WaitingBytes: 64 << 20, SmallWorking: 16}).Small(1 << 16)
	if got.Waiting != 1024 {
		t.Errorf("small waiting from 64 MiB of 64 KiB bodies: %d, want 1024", got.Waiting)
	}
}

// A free request waits while a paid one is in hand, and goes once none
// is; it waits no longer than the bound when paid ones never pause.
func TestPriorityPutsPaidFirst(t *testing.T) {
	p := NewPriority(time.Hour, 1)
	if err := p.Yield(context.Background()); err != nil {
		t.Fatal("a free request waited with no paid one in hand:", err)
	}
	done1, done2 := p.Paid(), p.Paid()
	went := make(chan error, 1)
	go func() { went <- p.Yield(context.Background()) }()
	done1()
	done1() // a second call frees nothing more
	select {
	case <-went:
		t.Fatal("the free request went while a paid one was in hand")
	case <-time.After(50 * time.Millisecond):
	}
	done2()
	if err := <-went; err != nil {
		t.Fatal(err)
	}
	bounded := NewPriority(20*time.Millisecond, 1)
	defer bounded.Paid()()
	start := time.Now()
	if err := bounded.Yield(context.Background()); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("bounded yield: %v after %v", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Yield(ctx); err != nil {
		t.Fatal("no paid request in hand now, yet:", err)
	}
	defer p.Paid()()
	if err := p.Yield(ctx); err == nil {
		t.Fatal("an ended request's yield did not end")
	}
}

// Free requests take no turn without paid traffic; while a paid request
// is in hand, and until the yield bound has passed since the last one
// ended, only the turns work at once (the next waits for one to be given
// back, or for its own context); past the bound, none is needed again.
func TestTurnsWhilePaidTrafficIsRecent(t *testing.T) {
	now := time.Unix(1000, 0)
	p := NewPriority(100*time.Millisecond, 2)
	p.now = func() time.Time { return now }
	ctx := context.Background()
	take := func() func() {
		t.Helper()
		done, err := p.Turn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	for range 5 { // never given back: no turn was taken
		take()
	}
	paid := p.Paid()
	first, second := take(), take()
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := p.Turn(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third turn beside a paid request: %v", err)
	}
	got := make(chan func(), 1)
	go func() { got <- take() }()
	first()
	first() // once only
	third := <-got
	paid()
	now = now.Add(99 * time.Millisecond) // the paid request ended just now
	short2, cancel2 := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel2()
	if _, err := p.Turn(short2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third turn within the bound after the paid request: %v", err)
	}
	second()
	third()
	now = now.Add(2 * time.Millisecond)
	for range 5 {
		take() // past the bound: no turn needed
	}
}
