package count

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/familytest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// fixed answers every record with one record, as an adapter would.
type fixed struct{ rec *pb.SessionRecord }

func (f fixed) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{FormatId: "example-lines"}
}
func (f fixed) Adapt(context.Context, *pb.AdaptRequest) *pb.AdaptResponse { return sdk.Adapted(f.rec) }

func TestThePinIsTheCorpus(t *testing.T) {
	var doc struct {
		Corpus struct{ SHA256 string } `json:"corpus"`
	}
	if err := json.Unmarshal(criteria, &doc); err != nil {
		t.Fatal(err)
	}
	pin, err := sdk.CorpusPin(corpus)
	if err != nil || pin != doc.Corpus.SHA256 {
		t.Fatalf("criteria corpus.sha256 %s, the corpus's pin %s (%v): run the pin again after editing corpus.json", doc.Corpus.SHA256, pin, err)
	}
}

func TestCountsTheAdaptedRecord(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	rec := sdk.Record(sdk.L0, sdk.Message("user", sdk.TextBlock(sdk.KindText, "abc"), sdk.TextBlock(sdk.KindText, "€")),
		sdk.Message("user", sdk.NonSerialisableBlock(sdk.KindText)))
	req := sdk.Request{Route: sdk.Op, Op: "count", Body: []byte(`{"declared_format_id":"example-lines","record":[]}`),
		Adapters: sdk.LocalAdapters{"example-lines": fixed{rec}}}
	body, ledger := familytest.Report(t, f.Check(context.Background(), req), time.Now)
	if body["message_count"] != 2.0 || body["block_count"] != 3.0 || body["text_bytes"] != 6.0 {
		t.Errorf("counts: %v (want 2 messages, 3 blocks, 3+3 text bytes)", body)
	}
	if ledger != `{"format":"example-lines"}` {
		t.Errorf("ledger fields: %s", ledger)
	}
}

func TestRefusals(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for body, code := range map[string]sdk.RefusalCode{
		`[1]`:           "body_not_object",
		`{"record":[]}`: "body_not_object",
		`{"declared_format_id":"letta-af","record":[]}`: "format_not_accepted",
	} {
		c := f.Check(context.Background(), sdk.Request{Route: sdk.Precheck, Body: []byte(body), Adapters: sdk.LocalAdapters{}})
		if r, ok := c.Body().(sdk.Refusal); c.Outcome() != sdk.Refused || !ok || r.Code != code {
			t.Errorf("%s: %+v, want refused %s", body, c, code)
		}
	}
}

// refuser refuses every record, as an adapter does a malformed one.
type refuser struct{}

func (refuser) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{FormatId: "example-lines"}
}
func (refuser) Adapt(context.Context, *pb.AdaptRequest) *pb.AdaptResponse {
	return sdk.Refuse(sdk.RecordDoesNotParse, "static")
}

// ANNEX: the pre-check adapts the record (an adapter's
// refusal is free), and members beyond the two are ignored.
func TestThePrecheckAdaptsAndIgnoresOtherMembers(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"declared_format_id":"example-lines","record":{"lines":["x"]},"note":"x"}`)
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Precheck, Body: body, Adapters: sdk.LocalAdapters{"example-lines": refuser{}}})
	if r, ok := c.Body().(sdk.Refusal); c.Outcome() != sdk.Refused || !ok || r.Code != sdk.RecordDoesNotParse {
		t.Errorf("pre-check of a refused record: %+v", c)
	}
	c = f.Check(context.Background(), sdk.Request{Route: sdk.Precheck, Body: body, Adapters: sdk.LocalAdapters{"example-lines": fixed{sdk.Record(sdk.L0)}}})
	if c.Outcome() != sdk.Accepted {
		t.Errorf("an extra member: %+v", c)
	}
}
