package lettaaf

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

// The real files (both shapes, and the one stored as a JSON string) are
// admitted; they skip where shared/ is missing, as the other real-file
// tests do.
func TestRecordSchemaAdmitsTheRealFiles(t *testing.T) {
	for _, name := range []string{"loop.af", "customer_service-json-string.af", "memgpt_agent_with_convo-old-shape.af"} {
		t.Run(name, func(t *testing.T) {
			rec := fixture(t, name)
			if r := adaptRaw(rec); r.GetRecord() == nil {
				t.Fatalf("refused: %s", r.GetRefusal().GetCode())
			}
			if err := adaptertest.SchemaAdmits(t, Adapter{}, rec); err != nil {
				t.Errorf("adapts but the schema refuses it: %v", err)
			}
		})
	}
}

// The schema admits what the adapter reads loosely: members of the wrong
// kind below the messages array, a JSON-string record (whose text the
// schema cannot see into), and a current-shape file whose agents member
// is not the only one at the root.
func TestRecordSchemaAdmitsOddRecords(t *testing.T) {
	for _, rec := range []string{
		`{"messages":[]}`,
		`{"agents":[{"messages":[]}],"messages":5,"tools":"none"}`,
		`{"agents":[{"messages":[{}],"tool_ids":7,"in_context_message_ids":[1]}],"tools":[5,{"name":3,"json_schema":null}]}`,
		`{"messages":[{"role":5,"content":7,"tool_calls":{},"tool_returns":[3,{"func_response":{}}],"in_context":null,"created_at":"yesterday"},
			{"content":[1,{"type":2,"text":[]}],"tool_calls":[7,{"function":"f"},{"id":1,"function":{"name":2,"arguments":{}}}]}]}`,
		`{"messages":[{"message_type":"tool_call_message","tool_call":"x"},{"message_type":"reasoning_message","reasoning":1},{"message_type":"other"}]}`,
		`"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"`,
	} {
		if r := adaptRaw([]byte(rec)); r.GetRecord() == nil {
			t.Errorf("%.60s: refused (%s): the case is meant to adapt", rec, r.GetRefusal().GetCode())
			continue
		}
		if err := adaptertest.SchemaAdmits(t, Adapter{}, []byte(rec)); err != nil {
			t.Errorf("%.60s adapts but the schema refuses it: %v", rec, err)
		}
	}
	// other than one agent is refused as record_required, not as a record
	// out of format: the schema describes that and leaves it to Adapt
	for _, rec := range []string{`{"agents":[]}`, `{"agents":[{"messages":[]},{"messages":[]}]}`} {
		if code := adaptRaw([]byte(rec)).GetRefusal().GetCode(); code != string(sdk.RecordRequired) {
			t.Errorf("%s: refusal %q, want %s", rec, code, sdk.RecordRequired)
		}
		if err := adaptertest.SchemaAdmits(t, Adapter{}, []byte(rec)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", rec, err)
		}
	}
}

// Records that do not parse as the format, which the schema refuses too:
// it states the record's structure below the top level.
func TestRecordSchemaRefusesWhatDoesNotParse(t *testing.T) {
	for _, rec := range []string{
		`7`,
		`[]`,
		`null`,
		`{"name":"an agent without messages"}`,
		`{"agents":{"messages":[]}}`,
		`{"agents":null}`,
		`{"agents":[5]}`,
		`{"agents":[{"name":"no messages"}]}`,
		`{"agents":[{"messages":{}}]}`,
		`{"messages":"not an array"}`,
		`{"messages":null}`,
		`{"messages":[5]}`,
		`{"messages":[{"role":"user"},"a bare string"]}`,
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
