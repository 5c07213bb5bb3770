package pluginhost

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/assay-audit/assay/sdk/hostcheck"
	"github.com/assay-audit/assay/sdk/wire"
)

// ErrAdapterFault is an adapter that answered a record wrongly, failed on
// it, crashed or hung while holding it, or is restarting: the request is
// the adapter's to fail. It never stops a service; the family never sees
// the answer.
var ErrAdapterFault = errors.New("format adapter fault")

// Fault causes: a closed set, for log lines and metric labels (the
// answer's own are hostcheck.Answer's, which authors run in their tests).
const (
	FaultFailed    = "failed"  // the call failed in the adapter (a panic, an error of its own)
	FaultCrashed   = "crashed" // the adapter's process ended while it held the record
	FaultDeadline  = "deadline"
	FaultEmpty     = hostcheck.FaultEmpty
	FaultUndecoded = hostcheck.FaultUndecoded
	FaultLevel     = hostcheck.FaultLevel
	FaultSpan      = hostcheck.FaultSpan
	FaultCount     = hostcheck.FaultCount
	FaultRefusal   = hostcheck.FaultRefusal
	// CauseRestarting is no fault of the record's: the adapter's process
	// is being restarted and the request was not sent to it.
	CauseRestarting = "restarting"
)

// checkAnswer is the SDK's check of an answer: the host applies exactly
// what plugintest and authors' tests apply.
func checkAnswer(f wire.Frame, recordLen uint64) (cause, detail string) {
	return hostcheck.Answer(f, recordLen)
}

// AdapterFault says which adapter failed a request, and how. Every
// field is the plugin's own (its pinned binary, its description) or a
// fixed word and numbers: never a byte of the record.
type AdapterFault struct {
	Format, Plugin, Binary, Version string
	Cause                           string
	// Detail is static text and numbers.
	Detail string
	// RetryAfter, for CauseRestarting, is when the adapter should be back.
	RetryAfter time.Duration
	// Mates, for FaultCrashed, counts the other records the process held
	// when it died: with none, this record is the one that ended it; with
	// some, any of them may have.
	Mates int
}

// Restarting says the request never reached the adapter: it was being
// restarted, and the same request sent after RetryAfter is served.
func (f AdapterFault) Restarting() bool { return f.Cause == CauseRestarting }

// FaultError carries an AdapterFault out of a session.
type FaultError struct{ Fault AdapterFault }

func (e *FaultError) Error() string {
	return fmt.Sprintf("%s: %s (%s): %s", ErrAdapterFault, e.Fault.Plugin, e.Fault.Cause, e.Fault.Detail)
}

// Unwrap makes a FaultError an ErrAdapterFault.
func (e *FaultError) Unwrap() error { return ErrAdapterFault }

// faultSlot is where the host service records the first fault of a
// request's adapter calls, for the request's session to report.
type faultSlot = atomic.Pointer[AdapterFault]

// An adapter's answers are counted over the last FaultWindow, in
// windowBuckets buckets. With FaultingAt faults or more in the window,
// and more faults than good answers, the adapter is shown "faulting"
// (in the catalog and /readyz) until good answers outnumber its faults
// or the faults leave the window. Faulting is a state shown, never one
// that refuses: a fault is the record's that caused it, so no caller's
// records change how another's are served (docs/operators.md).
const (
	FaultWindow   = time.Minute
	FaultingAt    = 5
	windowBuckets = 6
)

// health counts an adapter's answers and faults over the window.
type health struct {
	mu        sync.Mutex
	buckets   [windowBuckets]bucket
	lastCause string
}

type bucket struct {
	slot          int64 // which FaultWindow/windowBuckets interval since the epoch
	good, faulted int
}

const bucketSpan = FaultWindow / windowBuckets

// record counts one answer at now; cause is empty for a good one.
func (h *health) record(now time.Time, cause string) {
	slot := now.UnixNano() / int64(bucketSpan)
	h.mu.Lock()
	defer h.mu.Unlock()
	b := &h.buckets[slot%windowBuckets]
	if b.slot != slot {
		*b = bucket{slot: slot}
	}
	if cause == "" {
		b.good++
		return
	}
	b.faulted++
	h.lastCause = cause
}

// counts is the window's good answers and faults at now, and the last
// fault's cause.
func (h *health) counts(now time.Time) (good, faulted int, lastCause string) {
	slot := now.UnixNano() / int64(bucketSpan)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.buckets {
		if slot-b.slot < windowBuckets {
			good += b.good
			faulted += b.faulted
		}
	}
	return good, faulted, h.lastCause
}

// fault names this adapter in a fault of cause.
func (a *Adapter) fault(cause, detail string) AdapterFault {
	return AdapterFault{Format: a.desc.GetFormatId(), Plugin: a.spec.Name, Binary: filepath.Base(a.spec.Path),
		Version: a.desc.GetAdapterVersion(), Cause: cause, Detail: detail}
}

// faulted counts a fault against the adapter and returns it as an error.
func (a *Adapter) faulted(f AdapterFault) error {
	a.health.record(time.Now(), f.Cause)
	return &FaultError{f}
}

// Adapter states, as the catalog and /readyz show them.
const (
	StateServing    = "serving"
	StateFaulting   = "faulting"
	StateRestarting = "restarting"
)

// State is the adapter's state now: restarting (its process is down and
// requests for its format are answered at once, 503 with Retry-After),
// faulting (serving, with mostly faults in the last FaultWindow), or
// serving.
func (a *Adapter) State() string {
	if _, err := a.live(); err != nil {
		return StateRestarting
	}
	good, faulted, _ := a.health.counts(time.Now())
	if faulted >= FaultingAt && faulted > good {
		return StateFaulting
	}
	return StateServing
}
