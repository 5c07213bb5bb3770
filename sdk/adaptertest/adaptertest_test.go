package adaptertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

// careless echoes the record in its refusal, panics on a record shorter
// than 4 bytes, and names no version.
type careless struct{}

func (careless) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "f", FormatId: "x"}
}

func (careless) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	rec := req.GetRecord()
	_ = rec[3]
	if rec[0] != '[' {
		return sdk.Refuse("bad", "cannot read "+string(rec))
	}
	return sdk.Adapted(sdk.Record("L9"))
}

func TestRunCatchesACarelessAdapter(t *testing.T) {
	var r recorder
	var invalid [][]byte
	for i := 0; i < 20; i++ {
		invalid = append(invalid, []byte(fmt.Sprintf(`{"secret":"value number %02d"}`, i)))
	}
	Run(&r, careless{}, Cases{Valid: [][]byte{[]byte(`["ok"]`)}, Invalid: invalid})
	all := strings.Join(r.errs, "\n")
	for _, want := range []string{"Describe must name", `level "L9"`, "refusal code", "repeats part of the record", "panicked", "must be static"} {
		if !strings.Contains(all, want) {
			t.Errorf("the checks missed %q; they said:\n%s", want, all)
		}
	}
}

// panicky panics on its first valid record and answers nothing to its
// second and to every invalid one.
type panicky struct{}

func (panicky) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "f/v1", FormatId: "x", FormatVersions: []string{"1"}, AdapterVersion: "0.0.1"}
}

func (panicky) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	if string(req.GetRecord()) == "boom" {
		panic("index out of range")
	}
	return &pb.AdaptResponse{}
}

// An adapter that panics, or answers nothing, is reported case by case,
// naming the case, and the run goes on: a panic does not end the test
// binary, and an empty answer is not a "refused" with a blank code.
func TestRunReportsAPanicAndAnEmptyAnswerByCase(t *testing.T) {
	var r recorder
	Run(&r, panicky{}, Cases{Valid: [][]byte{[]byte("boom"), []byte("fine")}, Invalid: [][]byte{[]byte("nope")}})
	all := strings.Join(r.errs, "\n")
	for _, want := range []string{
		"valid record 0: the adapter panicked: index out of range",
		"valid record 1: the answer is empty: neither a record nor a refusal",
		"invalid record 0: the answer is empty",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the checks missed %q; they said:\n%s", want, all)
		}
	}
	if strings.Contains(all, "refused: code \"\"") {
		t.Errorf("an empty answer reported as a refusal with a blank code:\n%s", all)
	}
}
