package sdk

import (
	"context"
	"encoding/json"
	"time"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Route says which kind of request a family is asked to check.
type Route int

const (
	// Precheck is the free route: validation and assessability only.
	Precheck Route = iota + 1
	// Op is a paid operation: validation now, measurement after payment.
	Op
)

// Outcome is what validation concluded.
type Outcome int

const (
	// Accepted: the submission is valid (and, on an op, measurable).
	Accepted Outcome = iota + 1
	// Refused: a named free refusal (400).
	Refused
	// CouldNotMeasure: a signed could-not-measure answer (422), never charged.
	CouldNotMeasure
)

// Request is one HTTP request as a family sees it: never a payment, never a
// caller's address, only the route, the body and the host's clock.
type Request struct {
	Route Route
	// Op is the paid op's name when Route is Op.
	Op string
	// Body is the request body. It is read-only: the texts of a record
	// adapted from it (Adapters.Adapt) share its memory. In a plugin it
	// is the host's own pages, mapped, and valid only until the request
	// ends (the report sent): a family keeps nothing of it, or of any
	// string made from it, past Check and Measure (copy what must stay).
	Body []byte
	// Now is the host's clock when the request arrived.
	Now time.Time
	// Adapters reaches format adapters through the host; nil when the host
	// offers none.
	Adapters AdapterCaller
}

// Checked is a family's answer to validation.
type Checked struct {
	Outcome Outcome
	// Body holds the family's members of the answer: a pre-check answer, a
	// refusal (see Refusal) or a could-not-measure answer. Nil for an
	// accepted op, which answers with its report after Measure.
	Body any
	// Code is the refusal code or could-not-measure kind. Left empty with a
	// Refusal body, the SDK takes the Refusal's code.
	Code string
	// Caller is the body's top-level caller member when it is a string;
	// HasCaller says the member is present at all. A family may leave both
	// unset: on the pre-check the SDK reads them from the body itself.
	Caller    string
	HasCaller bool
	// Unavailable says the check could not run because something it needs
	// through the host (an adapter) is unreachable: the host answers 503,
	// nothing is charged, and the request can be sent again.
	Unavailable bool
	// Measure runs the paid measurement; set exactly when Route is Op and
	// Outcome is Accepted. The parsed submission it closes over lives only
	// as long as the request.
	Measure func(ctx context.Context, clock func() time.Time) (Report, error)
}

// Report is a measured answer.
type Report struct {
	// Body holds the family's members of the report.
	Body any
	// Ledger holds the family's closed ledger fields for this answer (nil:
	// none; the host's own fields make the line).
	Ledger map[string]any
	// CheckEnd is the instant the check ended, as printed in the report.
	CheckEnd time.Time
}

// Family is the contract of a criteria-family plugin, in plain Go: the SDK
// turns it into the gRPC service, tests and benchmarks call it in process.
type Family interface {
	Describe() *pb.FamilyDescription
	Check(ctx context.Context, req Request) Checked
}

// Refusal is the error member of a refusal answer: a code from the criteria
// (or the family's ANNEX), a static message, and numeric facts.
type Refusal struct {
	Code    string
	Message string
	// Facts are numbers and published names only, never submission content.
	Facts map[string]any
}

// MarshalJSON renders {"error":{"code":..,"message":..,facts...}}.
func (r Refusal) MarshalJSON() ([]byte, error) {
	inner := make(map[string]any, len(r.Facts)+2)
	for k, v := range r.Facts {
		inner[k] = v
	}
	inner["code"] = r.Code
	inner["message"] = r.Message
	return json.Marshal(map[string]any{"error": inner})
}

// AdapterCaller reaches a format adapter through the host.
type AdapterCaller interface {
	Adapt(ctx context.Context, req *pb.AdaptRequest) (*pb.AdaptResponse, error)
}
