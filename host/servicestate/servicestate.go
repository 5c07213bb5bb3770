// Package servicestate is whether each service, under its criteria
// version, is served: stop-serving and resume as rows in the store (so
// every host on a shared store honours them, within one poll), plus the
// stops a host makes for itself alone (a family whose corpus failed at
// launch on this host).
package servicestate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/ratelog"
	"github.com/assay-audit/assay/host/store"
)

// Key is a service under one criteria version.
type Key struct {
	Service, CriteriaID, CriteriaRevision string
}

func (k Key) String() string { return k.Service + " (" + k.CriteriaID + " " + k.CriteriaRevision + ")" }

// State is how a service version stands.
type State struct {
	Stopped bool
	Reason  string
	Since   time.Time
	Actor   string
	// Local is a stop of this host alone (not in the store).
	Local bool
	// Starting is a local stop while the service's launch proof runs: it
	// is served once the proof passes (StartLocal).
	Starting bool
	// EventID is the store row a shared state comes from; on a local stop,
	// the row that was the service's latest when it stopped (a resume row
	// after it asks this host to try again).
	EventID int64
}

// ErrReason is a reason that cannot be printed in an answer.
var ErrReason = errors.New("a reason is 1 to 300 printable characters")

// CheckReason accepts a reason an operator wrote: it is printed in every
// refusal of the service, so it must be short, printable text.
func CheckReason(r string) error {
	if r == "" || utf8.RuneCountInString(r) > 300 || !utf8.ValidString(r) {
		return ErrReason
	}
	for _, c := range r {
		if !unicode.IsPrint(c) {
			return ErrReason
		}
	}
	return nil
}

// Board holds the states a host serves by.
type Board struct {
	st  *store.Store
	log hclog.Logger
	now func() time.Time

	mu     sync.RWMutex
	shared map[Key]State
	local  map[Key]State
	// refreshed is when the shared states were last read
	refreshed time.Time
	// seen is the newest row read
	seen int64
	// refreshErrors keeps a store that stays unreachable to a line a
	// minute
	refreshErrors *ratelog.Limiter
}

// New builds a board over a store (nil: local stops only).
func New(st *store.Store, log hclog.Logger, now func() time.Time) *Board {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if now == nil {
		now = time.Now
	}
	return &Board{st: st, log: log, now: now, shared: map[Key]State{}, local: map[Key]State{},
		refreshErrors: ratelog.New(log, time.Minute, now)}
}

// State is k's state: a local stop wins over the store's resume.
func (b *Board) State(k Key) State {
	if b == nil {
		return State{}
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if s, ok := b.local[k]; ok && s.Stopped {
		return s
	}
	return b.shared[k]
}

// Refresh reads every service version's latest row from the store.
func (b *Board) Refresh(ctx context.Context) error {
	if b.st == nil {
		return nil
	}
	events, err := b.st.LatestServiceEvents(ctx)
	if err != nil {
		return err
	}
	next := make(map[Key]State, len(events))
	var seen int64
	for _, e := range events {
		k := Key{e.Service, e.CriteriaID, e.CriteriaRevision}
		next[k] = State{Stopped: e.Action == store.ServiceStop, Reason: e.Reason, Since: e.At, Actor: e.Actor, EventID: e.ID}
		seen = max(seen, e.ID)
	}
	b.mu.Lock()
	for k, s := range next {
		if old := b.shared[k]; old.Stopped != s.Stopped && !b.refreshed.IsZero() {
			b.log.Warn("service state changed in the store", "service", k.Service, "criteria", k.CriteriaID, "stopped", s.Stopped, "actor", s.Actor)
		}
	}
	b.shared, b.refreshed, b.seen = next, b.now(), max(b.seen, seen)
	b.mu.Unlock()
	return nil
}

// EventsSeen is the newest store row this board has read.
func (b *Board) EventsSeen() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.seen
}

// Run refreshes every interval until ctx ends: the bound on how long a
// stop or resume written by any host takes to reach this one.
func (b *Board) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := b.Refresh(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				// the last states read stay in force
				b.refreshErrors.Warn("service states not refreshed; the last ones read stay in force", "error", err)
			case err == nil:
				b.refreshErrors.Cleared("service states not refreshed; the last ones read stay in force", "service states read from the store again")
			}
		}
	}
}

// StopLocal stops k on this host only, until a resume row newer than
// the service's latest row now asks it to try again.
func (b *Board) StopLocal(k Key, reason, actor string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.local[k] = State{Stopped: true, Reason: reason, Since: b.now(), Actor: actor, Local: true, EventID: b.shared[k].EventID}
}

// StartLocal holds k back on this host while its launch proof runs:
// requests meet 503 service_starting, /readyz names what runs.
func (b *Board) StartLocal(k Key, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.local[k] = State{Stopped: true, Starting: true, Reason: reason, Since: b.now(), Actor: "launch proof", Local: true, EventID: b.shared[k].EventID}
}

// ClearLocal ends this host's own stop of k.
func (b *Board) ClearLocal(k Key) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.local, k)
}

// Resumed lists the services stopped on this host alone for which the
// store holds a resume row newer than the stop, each with that row's id:
// an operator's `assay service resume` asking this host to try again.
func (b *Board) Resumed() map[Key]int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := map[Key]int64{}
	for k, l := range b.local {
		if s, ok := b.shared[k]; ok && !s.Stopped && !l.Starting && s.EventID > l.EventID {
			out[k] = s.EventID
		}
	}
	return out
}

// Stop writes a stop row for k and applies it here at once.
func (b *Board) Stop(ctx context.Context, k Key, reason, actor string) error {
	if err := CheckReason(reason); err != nil {
		return err
	}
	e := store.ServiceEvent{At: b.now(), Service: k.Service, CriteriaID: k.CriteriaID, CriteriaRevision: k.CriteriaRevision,
		Action: store.ServiceStop, Reason: reason, Actor: actor}
	if b.st != nil {
		if _, err := b.st.AppendServiceEvent(ctx, e); err != nil {
			return fmt.Errorf("servicestate: stop: %w", err)
		}
	}
	b.mu.Lock()
	b.shared[k] = State{Stopped: true, Reason: reason, Since: e.At, Actor: actor}
	b.mu.Unlock()
	return nil
}
