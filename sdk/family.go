package sdk

import (
	"context"
	"encoding/json"
	"errors"
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

// Borrowed is a request body the family reads but does not own: in a
// plugin it is the host's own pages, mapped read-only, and valid only
// until the request ends (its report sent). The texts of a record
// adapted from it (Request.Adapters) share its memory too. A family keeps
// nothing of it, or of any string that aliases it, past Check and the
// Measurer it returns; what must stay, it copies (Copy). Its underlying
// type is []byte, so json.Unmarshal and any []byte parameter take it
// (json.Unmarshal copies what it decodes into strings).
type Borrowed []byte

// Copy is the body in memory of the family's own, valid for as long as
// the family keeps it.
func (b Borrowed) Copy() []byte { return append([]byte(nil), b...) }

// Request is one HTTP request as a family sees it: never a payment, never a
// caller's address, only the route, the body and the host's clock.
type Request struct {
	Route Route
	// Op is the paid op's name when Route is Op.
	Op string
	// Body is the request body, borrowed for the request's life.
	Body Borrowed
	// Now is the host's clock when the request arrived.
	Now time.Time
	// Adapters reaches format adapters through the host; nil when the host
	// offers none.
	Adapters AdapterCaller
}

// Checked is a family's answer to validation, made only by its
// constructors, so that no invalid combination can be built: RefuseRequest
// (400), CannotMeasure (a signed 422), Assessed (a pre-check's answer),
// Accept (an op measured after payment), AdaptersUnavailable (503). The
// zero Checked is no answer: the SDK reports it to the host as the
// family's fault, as it does an answer of the wrong route (Assessed on an
// op, Accept on a pre-check).
type Checked struct {
	outcome     Outcome
	body        any
	code        string
	caller      string
	hasCaller   bool
	unavailable bool
	measure     Measurer
}

// Measurer runs the paid measurement after the host has the payment.
// clock is the host's; the report's CheckEnd is the instant the check
// ended as the report prints it (zero: the clock when the Measurer
// returned). It may close over what Check parsed, and over the request's
// Borrowed body and adapted texts: it runs within the request.
type Measurer func(ctx context.Context, clock func() time.Time) (Report, error)

// RefuseRequest is a named free refusal (400): {"error": {...}}.
func RefuseRequest(r Refusal) Checked {
	return Checked{outcome: Refused, body: r, code: string(r.Code)}
}

// RefuseWith is a refusal with a body of the family's own shape, for a
// criteria whose refusal carries more than the error member. code is the
// criteria's refusal code (the host logs and counts it); put it in the
// body too if callers are to read it.
func RefuseWith(code RefusalCode, body any) Checked {
	return Checked{outcome: Refused, body: body, code: string(code)}
}

// CannotMeasureKind is a criteria's could-not-measure kind: the host
// counts it (assay_could_not_measure_total{kind}) and logs it. Like a
// RefusalCode it is a published name from the criteria or the ANNEX,
// never submission content. A family declares its kinds as constants of
// this type.
type CannotMeasureKind string

// CannotMeasure is a signed could-not-measure answer (422), never
// charged: kind is the criteria's, body the family's members.
func CannotMeasure(kind CannotMeasureKind, body any) Checked {
	return Checked{outcome: CouldNotMeasure, body: body, code: string(kind)}
}

// Assessed is an accepted pre-check's answer: the family's members.
func Assessed(body any) Checked { return Checked{outcome: Accepted, body: body} }

// Accept is an accepted op: m measures it after payment.
func Accept(m Measurer) Checked { return Checked{outcome: Accepted, measure: m} }

// AdaptersUnavailable says the check could not run because an adapter it
// needs through the host is unreachable: the host answers 503, nothing is
// charged, and the request can be sent again.
func AdaptersUnavailable() Checked { return Checked{unavailable: true} }

// WithCaller sets the pre-check's caller (the free tier counts by it).
// Without it the SDK reads the body's top-level "caller" member.
func (c Checked) WithCaller(caller string) Checked {
	c.caller, c.hasCaller = caller, true
	return c
}

// Outcome is what validation concluded (0 for no answer, or for
// AdaptersUnavailable).
func (c Checked) Outcome() Outcome { return c.outcome }

// Code is the refusal code (a RefusalCode) or could-not-measure kind (a
// CannotMeasureKind), as the wire carries it.
func (c Checked) Code() string { return c.code }

// Body is the answer's members: a pre-check's, a refusal's or a
// could-not-measure's (nil for Accept).
func (c Checked) Body() any { return c.body }

// Unavailable reports AdaptersUnavailable.
func (c Checked) Unavailable() bool { return c.unavailable }

// Measures reports an accepted op, with a Measurer.
func (c Checked) Measures() bool { return c.measure != nil }

// ErrNotMeasurable is Measure on a Checked that is not an accepted op.
var ErrNotMeasurable = errors.New("sdk: not an accepted op: nothing to measure")

// Measure runs an accepted op's Measurer (tests; the SDK runs it after
// the host's proceed).
func (c Checked) Measure(ctx context.Context, clock func() time.Time) (Report, error) {
	if c.measure == nil {
		return Report{}, ErrNotMeasurable
	}
	return c.measure(ctx, clock)
}

// Report is a measured answer.
type Report struct {
	// Body holds the family's members of the report.
	Body any
	// Ledger holds the family's closed ledger fields for this answer (nil:
	// none; the host's own fields make the line).
	Ledger map[string]any
	// CheckEnd is the instant the check ended, as printed in the report
	// (zero: the clock when the Measurer returned).
	CheckEnd time.Time
}

// Family is the contract of a criteria-family plugin, in plain Go: the SDK
// turns it into the gRPC service, tests and benchmarks call it in process.
type Family interface {
	Describe() *pb.FamilyDescription
	Check(ctx context.Context, req Request) Checked
}

// Refusal is the error member of a refusal answer: a code from the criteria
// (or the family's ANNEX), a static message, and numeric facts. Code is
// the one type of refusal code adapters and families share: a family
// that refuses a record its adapter refused may answer with the adapter's
// code (RecordDoesNotParse, RecordRequired, FormatNotAccepted) where its
// criteria name it. A family declares its own codes as constants of type
// RefusalCode.
type Refusal struct {
	Code    RefusalCode
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
