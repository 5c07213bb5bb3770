package anthropic

import (
	"context"
	"testing"

	contextcompositioncorpus "github.com/assay-audit/assay/corpus/context-composition"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/adaptertest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func adaptRaw(rec []byte) *pb.AdaptResponse {
	return Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: rec, JsonStringSpans: true})
}

// The schema admits what the adapter reads loosely: members of the wrong
// kind inside a message or a block, unknown and missing block types, and a
// tool_result whose parts cannot be read.
func TestRecordSchemaAdmitsOddRecords(t *testing.T) {
	for _, rec := range []string{
		`[]`,
		`{"messages":[],"system":null}`,
		`{"messages":[{"content":"no role"},{"role":7,"content":[]}],"system":[{"type":"text","text":"s"}]}`,
		`[{"role":"user","content":[{},{"type":5},{"type":"text","text":5},{"type":"text"},{"type":"thinking","thinking":[1]},
			{"type":"tool_use","name":3},{"type":"server_tool_use","input":null},{"type":"image","source":"x"},
			{"type":"document","source":7},{"type":"document","source":{"type":"text","data":{}}},{"type":"search_result","content":1.5},
			{"type":"x_tool_result"},{"type":"future","text":{"not":"a string"}}]}]`,
		`[{"role":"user","content":[{"type":"tool_result","content":[5,"x",null]},{"type":"tool_result","content":{"a":1}},
			{"type":"tool_result","content":[{"type":"tool_result","content":[[]]},{"type":"text","text":"a"}]},{"type":"tool_result","content":null}]}]`,
	} {
		if r := adaptRaw([]byte(rec)); r.GetRecord() == nil {
			t.Errorf("%.60s: refused (%s): the case is meant to adapt", rec, r.GetRefusal().GetCode())
			continue
		}
		if err := adaptertest.SchemaAdmits(t, Adapter{}, []byte(rec)); err != nil {
			t.Errorf("%.60s adapts but the schema refuses it: %v", rec, err)
		}
	}
}

// Records that do not parse as the format, which the schema refuses too:
// it states the record's structure below the top level.
func TestRecordSchemaRefusesWhatDoesNotParse(t *testing.T) {
	for _, rec := range []string{
		`7`,
		`"messages"`,
		`{"msgs":[]}`,
		`{"messages":{"role":"user","content":"hi"}}`,
		`{"messages":[["user","hi"]]}`,
		`[{"role":"user"}]`,
		`[{"role":"user","content":null}]`,
		`[{"role":"user","content":7}]`,
		`[{"role":"user","content":["a bare string part"]}]`,
		`{"messages":[],"system":{"type":"text","text":"s"}}`,
		`{"messages":[],"system":["s"]}`,
	} {
		if code := adaptRaw([]byte(rec)).GetRefusal().GetCode(); code != string(sdk.RecordDoesNotParse) {
			t.Errorf("%s: refusal %q, want %s", rec, code, sdk.RecordDoesNotParse)
		}
		if adaptertest.SchemaAdmits(t, Adapter{}, []byte(rec)) == nil {
			t.Errorf("%s: the schema admits it", rec)
		}
	}
}

// Every record of this format in the context-composition corpus that
// adapts is admitted by the schema.
func TestRecordSchemaAdmitsTheCorpusRecords(t *testing.T) {
	if n := adaptertest.CorpusRecords(t, Adapter{}, contextcompositioncorpus.JSON, "declared_format_id", "record"); n == 0 {
		t.Fatalf("no %s record in the corpus adapts", FormatID)
	}
}
