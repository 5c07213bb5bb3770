package sdk

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// callFamily accepts {"n":N} with a report of n doubled, refuses anything
// else, and panics on {"boom":true}; it counts its measurements.
type callFamily struct{ measured int }

func (f *callFamily) Describe() *pb.FamilyDescription {
	return &pb.FamilyDescription{Service: "call-test"}
}

func (f *callFamily) Check(_ context.Context, req Request) Checked {
	var in struct {
		N    *int `json:"n"`
		Boom bool `json:"boom"`
	}
	_ = json.Unmarshal(req.Body, &in)
	if in.Boom {
		panic("a bug with the submission in its value")
	}
	if in.N == nil {
		return Checked{Outcome: Refused, Body: Refusal{Code: "bad", Message: "no n"}}
	}
	if req.Route == Precheck {
		return Checked{Outcome: Accepted, Body: map[string]any{"assessable": true}}
	}
	n := *in.N
	return Checked{Outcome: Accepted, Measure: func(context.Context, func() time.Time) (Report, error) {
		f.measured++
		return Report{Body: map[string]any{"twice": n * 2}, Ledger: map[string]any{"n": n}, CheckEnd: time.Unix(1, 0)}, nil
	}}
}

// Family.Call answers a whole request: the validation, and the report
// exactly when the op was accepted and the host said proceed; a refusal
// or a pre-check measures nothing; a panic is a static Internal error.
func TestCallAnswersTheWholeRequest(t *testing.T) {
	f := &callFamily{}
	s := &familyServer{impl: f, log: hclog.NewNullLogger()}
	ctx := context.Background()
	call := func(route pb.Start_Route, body string, proceed bool) (*pb.CallResponse, error) {
		return s.Call(ctx, &pb.CallRequest{Start: &pb.Start{Route: route, Op: "m", Body: []byte(body)}, Proceed: proceed})
	}

	r, err := call(pb.Start_OP, `{"n":21}`, true)
	if err != nil || r.GetValidated().GetOutcome() != pb.Outcome_ACCEPTED || string(r.GetReport().GetBody()) != `{"twice":42}` ||
		string(r.GetReport().GetLedger()) != `{"n":21}` || f.measured != 1 {
		t.Fatalf("accepted, proceed: %v %v, measured %d", r, err, f.measured)
	}
	r, err = call(pb.Start_OP, `{"n":21}`, false)
	if err != nil || r.GetValidated().GetOutcome() != pb.Outcome_ACCEPTED || r.GetReport() != nil || f.measured != 1 {
		t.Fatalf("accepted, no proceed: %v %v, measured %d", r, err, f.measured)
	}
	r, err = call(pb.Start_OP, `{}`, true)
	if err != nil || r.GetValidated().GetOutcome() != pb.Outcome_REFUSED || r.GetValidated().GetCode() != "bad" || r.GetReport() != nil || f.measured != 1 {
		t.Fatalf("refused: %v %v, measured %d", r, err, f.measured)
	}
	r, err = call(pb.Start_PRECHECK, `{"n":1,"caller":"w"}`, true)
	if err != nil || string(r.GetValidated().GetBody()) != `{"assessable":true}` || r.GetValidated().GetCaller() != "w" || r.GetReport() != nil || f.measured != 1 {
		t.Fatalf("pre-check: %v %v, measured %d", r, err, f.measured)
	}
	_, err = call(pb.Start_OP, `{"boom":true}`, true)
	if status.Code(err) != codes.Internal || status.Convert(err).Message() != "family panicked" {
		t.Fatalf("panic: %v", err)
	}
	if _, err := s.Call(ctx, &pb.CallRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no start: %v", err)
	}
	if _, err := call(pb.Start_ROUTE_UNSPECIFIED, `{"n":1}`, true); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no route: %v", err)
	}
}

// The SDK's glue says its family answers calls, so a host sends small
// requests as one.
func TestTheGlueSaysItAnswersCalls(t *testing.T) {
	s := &familyServer{impl: &callFamily{}, log: hclog.NewNullLogger()}
	d, err := s.Describe(context.Background(), &pb.DescribeRequest{})
	if err != nil || !d.GetAnswersCalls() || d.GetReadsSharedBodies() || d.GetService() != "call-test" {
		t.Fatalf("description: %v %v", d, err)
	}
}
