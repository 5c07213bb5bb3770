package anthropic

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

// The schema admits what the adapter reads loosely: members of the wrong
// kind inside a message or a block, unknown and missing block types, and a
// tool_result whose parts cannot be read.
func TestRecordSchemaAdmitsOddRecords(t *testing.T) {
	s := resolvedSchema(t)
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
		if err := admits(t, s, []byte(rec)); err != nil {
			t.Errorf("%.60s adapts but the schema refuses it: %v", rec, err)
		}
	}
}

// Records that do not parse as the format, which the schema refuses too:
// it states the record's structure below the top level.
func TestRecordSchemaRefusesWhatDoesNotParse(t *testing.T) {
	s := resolvedSchema(t)
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
		if admits(t, s, []byte(rec)) == nil {
			t.Errorf("%s: the schema admits it", rec)
		}
	}
}

// Every anthropic-messages record of the context-composition corpus that
// adapts is admitted; of those refused as not parsing, the schema refuses
// the ones it can see (logged: the schema may be looser than Adapt).
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
