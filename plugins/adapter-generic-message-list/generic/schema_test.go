package generic

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

// The schema admits every shape the format allows: null for any optional
// member, a tool schema without text, unknown members, names matched
// exactly.
func TestRecordSchemaAdmitsOddRecords(t *testing.T) {
	for _, rec := range []string{
		`{"messages":[]}`,
		`{"messages":[{"text":null}],"tool_schemas":null,"stated_total":null}`,
		`{"messages":[{"role":null,"kind":null,"name":null,"has_args":null,"source":null,"text":"x","stated_tokens":null,"extra":[1]}]}`,
		`{"messages":[{"role":"tool","kind":"tool_result","name":"f","has_args":false,"source":"s","text":"x","stated_tokens":-3}],
			"tool_schemas":[{"name":"f"},{"text":null,"stated_tokens":7,"role":"ignored"}],"stated_total":9007199254740993}`,
		`{"messages":[{"ROLE":5,"Text":7,"text":"y"}],"Messages":"ignored"}`,
		`{"messages":[{"text":5,"text":"the last of duplicates counts"}]}`,
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
		`[]`,
		`{"msgs":[]}`,
		`{"messages":{"role":"user","text":"hi"}}`,
		`{"messages":[5]}`,
		`{"messages":[{"role":"user"}]}`,
		`{"messages":[{"role":"user","text":42}]}`,
		`{"messages":[{"role":5,"text":"x"}]}`,
		`{"messages":[{"kind":true,"text":"x"}]}`,
		`{"messages":[{"name":["f"],"text":"x"}]}`,
		`{"messages":[{"source":{},"text":"x"}]}`,
		`{"messages":[{"has_args":"yes","text":"x"}]}`,
		`{"messages":[{"text":"x","stated_tokens":"many"}]}`,
		`{"messages":[{"text":"x","stated_tokens":1.5}]}`,
		`{"messages":[],"tool_schemas":{"name":"f","text":"s"}}`,
		`{"messages":[],"tool_schemas":["f"]}`,
		`{"messages":[],"tool_schemas":[{"text":3}]}`,
		`{"messages":[],"stated_total":"12"}`,
		`{"messages":[],"stated_total":true}`,
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
