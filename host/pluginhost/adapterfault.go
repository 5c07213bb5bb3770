package pluginhost

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ErrAdapterFault is an adapter that answered a record wrongly (or
// failed on it, or is out of service on this host): the request is the
// adapter's to fail, and sending it again would not help. It never
// stops a service; the family never sees the answer.
var ErrAdapterFault = errors.New("format adapter fault")

// Fault causes: a closed set, for log lines and metric labels.
const (
	FaultFailed    = "failed"      // the call failed in the adapter (a panic, an error of its own)
	FaultEmpty     = "empty"       // neither a record nor a refusal
	FaultUndecoded = "undecodable" // the answer is not an AdaptResponse
	FaultLevel     = "level"       // a level outside L0, L1, L2
	FaultSpan      = "span"        // a text span outside the record
	FaultCount     = "count"       // a negative count of the adapter's own
	FaultRefusal   = "refusal"     // a refusal without a code of the protocol's shape
	FaultOut       = "taken_out"   // out of service on this host after repeated faults
)

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

var refusalCode = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// checkAnswer checks what the host can of an adapter's answer before a
// family sees it: that it decodes, says something, names a level the
// protocol has, keeps every text span inside the record of recordLen
// bytes, and counts no negative number of what it disclosed. Caps on entries are the family's
// (its criteria set them). It returns the cause and a detail of static
// text and numbers, or "" when the answer holds.
func checkAnswer(f sdk.Frame, recordLen uint64) (cause, detail string) {
	resp := &pb.AdaptResponse{}
	if err := proto.Unmarshal(f, resp); err != nil {
		return FaultUndecoded, "the answer does not decode as an AdaptResponse"
	}
	if ref := resp.GetRefusal(); ref != nil {
		if !refusalCode.MatchString(ref.GetCode()) {
			return FaultRefusal, fmt.Sprintf("a refusal's code is not 1 to 64 of a-z, 0-9 and _ (%d bytes)", len(ref.GetCode()))
		}
		return "", ""
	}
	rec := resp.GetRecord()
	if rec == nil {
		return FaultEmpty, "the answer holds neither a record nor a refusal"
	}
	switch rec.GetLevel() {
	case "L0", "L1", "L2":
	default:
		return FaultLevel, fmt.Sprintf("the level is not L0, L1 or L2 (%d bytes)", len(rec.GetLevel()))
	}
	// stated counts are the record's own, reproduced as stated (a negative
	// one is the criteria's to judge); a disclosure's count is the
	// adapter's own
	for i, d := range rec.GetDisclosures() {
		if d.GetCount() < 0 {
			return FaultCount, fmt.Sprintf("disclosure %d has a negative count", i+1)
		}
	}
	for m, msg := range rec.GetMessages() {
		for b, blk := range msg.GetBlocks() {
			if s := blk.GetTextSpan(); s != nil && (s.GetOffset() > recordLen || s.GetLength() > recordLen-s.GetOffset()) {
				return FaultSpan, fmt.Sprintf("message %d block %d: a text span ending at byte %d of a %d-byte record", m+1, b+1, s.GetOffset()+s.GetLength(), recordLen)
			}
		}
	}
	return "", ""
}
