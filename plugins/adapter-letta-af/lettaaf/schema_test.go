package lettaaf

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	contextcompositioncorpus "github.com/assay-audit/assay/corpus/context-composition"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// resolvedSchema is the record schema Describe carries, compiled.
func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	raw := Adapter{}.Describe().GetRecordSchema()
	if err := sdk.CheckRecordSchema(raw); err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// admits validates one record (JSON) against the schema.
func admits(t *testing.T, r *jsonschema.Resolved, rec []byte) error {
	t.Helper()
	var v any
	if err := json.Unmarshal(rec, &v); err != nil {
		t.Fatalf("%.60s: not JSON: %v", rec, err)
	}
	return r.Validate(v)
}

func adaptRaw(rec []byte) *pb.AdaptResponse {
	return Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: rec, JsonStringSpans: true})
}

// The real files (both shapes, and the one stored as a JSON string) are
// admitted; they skip where shared/ is missing, as the other real-file
// tests do.
func TestRecordSchemaAdmitsTheRealFiles(t *testing.T) {
	s := resolvedSchema(t)
	for _, name := range []string{"loop.af", "customer_service-json-string.af", "memgpt_agent_with_convo-old-shape.af"} {
		t.Run(name, func(t *testing.T) {
			rec := fixture(t, name)
			if r := adaptRaw(rec); r.GetRecord() == nil {
				t.Fatalf("refused: %s", r.GetRefusal().GetCode())
			}
			if err := admits(t, s, rec); err != nil {
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
	s := resolvedSchema(t)
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
		if err := admits(t, s, []byte(rec)); err != nil {
			t.Errorf("%.60s adapts but the schema refuses it: %v", rec, err)
		}
	}
	// other than one agent is refused as record_required, not as a record
	// out of format: the schema describes that and leaves it to Adapt
	for _, rec := range []string{`{"agents":[]}`, `{"agents":[{"messages":[]},{"messages":[]}]}`} {
		if code := adaptRaw([]byte(rec)).GetRefusal().GetCode(); code != string(sdk.RecordRequired) {
			t.Errorf("%s: refusal %q, want %s", rec, code, sdk.RecordRequired)
		}
		if err := admits(t, s, []byte(rec)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", rec, err)
		}
	}
}

// Records that do not parse as the format, which the schema refuses too:
// it states the record's structure below the top level.
func TestRecordSchemaRefusesWhatDoesNotParse(t *testing.T) {
	s := resolvedSchema(t)
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
		if admits(t, s, []byte(rec)) == nil {
			t.Errorf("%s: the schema admits it", rec)
		}
	}
}

// Every letta-af record of the context-composition corpus that adapts is
// admitted; of those refused as not parsing, the schema refuses the ones
// it can see (logged: the schema may be looser than Adapt).
func TestRecordSchemaAdmitsTheCorpusRecords(t *testing.T) {
	s := resolvedSchema(t)
	var c struct {
		Cases []struct {
			Name    string
			Request struct {
				Body json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(contextcompositioncorpus.JSON, &c); err != nil {
		t.Fatal(err)
	}
	adapted, refused, alsoRefused := 0, 0, 0
	for _, k := range c.Cases {
		var body struct {
			Format any             `json:"declared_format_id"`
			Record json.RawMessage `json:"record"`
		}
		if json.Unmarshal(k.Request.Body, &body) != nil || body.Format != FormatID || len(body.Record) == 0 {
			continue
		}
		r := adaptRaw(body.Record)
		err := admits(t, s, body.Record)
		switch {
		case r.GetRecord() != nil:
			adapted++
			if err != nil {
				t.Errorf("corpus case %s adapts but the schema refuses it: %v", k.Name, err)
			}
		case r.GetRefusal().GetCode() == string(sdk.RecordDoesNotParse):
			refused++
			if err != nil {
				alsoRefused++
			} else {
				t.Logf("corpus case %s does not parse; the schema admits it", k.Name)
			}
		}
	}
	if adapted == 0 {
		t.Fatalf("no %s record in the corpus adapts", FormatID)
	}
	t.Logf("%d corpus records adapt and are admitted; the schema refuses %d of the %d that do not parse", adapted, alsoRefused, refused)
}
