// Package admission bounds the work a host takes on for one service: how
// many requests are in their plugin at once, and how many more may wait
// for a place. A request past both is refused at once, so a burst costs
// the host a bounded number of held bodies and plugin working sets, and
// the callers beyond it get a prompt 503 instead of a slow answer for all.
//
// A request enters after its body is read: a slow sender holds only the
// bytes it has sent, never a place (a place held while a body trickles in
// would let a few slow clients close a service).
package admission

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBusy is a request the service has no place for: every working place
// is taken and the queue is full, or its wait ran out.
var ErrBusy = errors.New("admission: the service is at capacity")

// Limits are one service's bounds.
type Limits struct {
	// Working is how many requests may be in the plugin at once; 0 means
	// no bound (a library default: the host sets one).
	Working int
	// Waiting is how many more may wait for a working place.
	Waiting int
	// WaitingBytes raises Waiting, per service, to as many bodies of the
	// service's cap as it holds: a queue of small bodies costs little, so
	// a burst of them need not be refused (see ForBodyCap).
	WaitingBytes int64
	// Wait is the longest a request waits for a place.
	Wait time.Duration
	// SmallWorking, when set, gives small requests (a body the host sends
	// its plugin inline) places of their own, this many: such a request
	// holds little memory and spends its time in the plugin mostly on the
	// round trip, not the cores, so bounding it by the cores leaves them
	// idle. 0: small requests share the places of the rest.
	SmallWorking int
}

// Small are the limits of the small requests' own places (SmallWorking of
// them, bodies of at most bodyCap bytes waiting as ForBodyCap allows, at
// least four per place); ok is false when there are none.
func (l Limits) Small(bodyCap int64) (_ Limits, ok bool) {
	if l.SmallWorking <= 0 {
		return l, false
	}
	s := Limits{Working: l.SmallWorking, Waiting: max(l.Waiting, 4*l.SmallWorking), WaitingBytes: l.WaitingBytes, Wait: l.Wait}
	return s.ForBodyCap(bodyCap), true
}

// maxWaitingPerPlace bounds what WaitingBytes adds: each waiter holds a
// connection and a goroutine too, so a tiny body cap must not make the
// queue tens of thousands long.
const maxWaitingPerPlace = 64

// ForBodyCap are the limits for a service whose bodies are at most bodyCap
// bytes: Waiting raised to WaitingBytes / bodyCap, up to 64 per working
// place.
func (l Limits) ForBodyCap(bodyCap int64) Limits {
	if l.WaitingBytes > 0 && bodyCap > 0 {
		l.Waiting = max(l.Waiting, int(min(l.WaitingBytes/bodyCap, int64(maxWaitingPerPlace*l.Working))))
	}
	return l
}

// Gate admits one service's requests under its Limits. The zero of a
// *Gate (nil) admits everything.
type Gate struct {
	places  chan struct{}
	waiting atomic.Int64
	limits  Limits
}

// New builds a gate; Limits with Working 0 give nil (no bound).
func New(l Limits) *Gate {
	if l.Working <= 0 {
		return nil
	}
	return &Gate{places: make(chan struct{}, l.Working), limits: l}
}

// Enter takes a working place, waiting while the queue has room (a freed
// place goes to the longest waiter), for at most the gate's Wait or until ctx ends (the caller went
// away: ctx's error). leave gives the place back; calls after the first do
// nothing.
func (g *Gate) Enter(ctx context.Context) (leave func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	select {
	case g.places <- struct{}{}:
		return sync.OnceFunc(g.leave), nil
	default:
	}
	if g.waiting.Add(1) > int64(g.limits.Waiting) {
		g.waiting.Add(-1)
		return nil, ErrBusy
	}
	defer g.waiting.Add(-1)
	wait := time.NewTimer(g.limits.Wait)
	defer wait.Stop()
	select {
	case g.places <- struct{}{}:
		return sync.OnceFunc(g.leave), nil
	case <-wait.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// leave gives one place back; Enter wraps it so that a second call does
// nothing (it would free another request's place).
func (g *Gate) leave() { <-g.places }

// Working is how many requests hold a place now.
func (g *Gate) Working() int {
	if g == nil {
		return 0
	}
	return len(g.places)
}

// Waiting is how many requests wait for a place now.
func (g *Gate) Waiting() int {
	if g == nil {
		return 0
	}
	return int(g.waiting.Load())
}

// Wait is the longest a request waits for a place (0 for a nil gate).
func (g *Gate) Wait() time.Duration {
	if g == nil {
		return 0
	}
	return g.limits.Wait
}
