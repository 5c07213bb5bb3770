package pluginhost

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/assay-audit/assay/sdk"
)

// ErrAdapterFault is an adapter that answered a record wrongly (or
// failed on it, or is out of service on this host): the request is the
// adapter's to fail, and sending it again would not help. It never
// stops a service; the family never sees the answer.
var ErrAdapterFault = errors.New("format adapter fault")

// Fault causes: a closed set, for log lines and metric labels (the
// answer's own are sdk.CheckAnswer's, which authors run in their tests).
const (
	FaultFailed    = "failed" // the call failed in the adapter (a panic, an error of its own)
	FaultEmpty     = sdk.FaultEmpty
	FaultUndecoded = sdk.FaultUndecoded
	FaultLevel     = sdk.FaultLevel
	FaultSpan      = sdk.FaultSpan
	FaultCount     = sdk.FaultCount
	FaultRefusal   = sdk.FaultRefusal
	FaultOut       = "taken_out" // out of service on this host after repeated faults
)

// checkAnswer is the SDK's check of an answer: the host applies exactly
// what plugintest and authors' tests apply.
func checkAnswer(f sdk.Frame, recordLen uint64) (cause, detail string) {
	return sdk.CheckAnswer(f, recordLen)
}

// AdapterFault says which adapter failed a request, and how. Every
// field is the plugin's own (its pinned binary, its description) or a
// fixed word and numbers: never a byte of the record.
type AdapterFault struct {
	Format, Plugin, Binary, Version string
	Cause                           string
	// Detail is static text and numbers.
	Detail string
}

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

// TakeOutAfter is how many faults in a row take an adapter out of service
// on this host: each request for its format is then refused at once as
// the adapter's fault, until the host restarts.
const TakeOutAfter = 5

// health counts an adapter's faults in a row.
type health struct {
	mu     sync.Mutex
	inARow int
	out    bool
}

// record counts one answer; out says the adapter was just taken out.
func (h *health) record(fault bool) (justOut bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !fault {
		h.inARow = 0
		return false
	}
	h.inARow++
	if !h.out && h.inARow >= TakeOutAfter {
		h.out = true
		return true
	}
	return false
}

func (h *health) isOut() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out
}

// Out reports whether the adapter is out of service on this host.
func (a *Adapter) Out() bool { return a.health.isOut() }

// fault names this adapter in a fault of cause.
func (a *Adapter) fault(cause, detail string) AdapterFault {
	return AdapterFault{Format: a.desc.GetFormatId(), Plugin: a.spec.Name, Binary: filepath.Base(a.spec.Path),
		Version: a.desc.GetAdapterVersion(), Cause: cause, Detail: detail}
}
