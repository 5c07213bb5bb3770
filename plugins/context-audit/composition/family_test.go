package composition

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	contextcomposition "github.com/assay-audit/assay/criteria/context-composition"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func txt(kind, name, s string) *pb.Block {
	return &pb.Block{KindRaw: kind, Name: name, Content: &pb.Block_Text{Text: s}}
}

// Hand-worked from ANNEX C-9's table.
func TestAxisP(t *testing.T) {
	cases := []struct {
		format, level, role string
		schema              bool
		b                   *pb.Block
		class               string
		losers              []string
		raw                 []string
	}{
		{"letta-af", "L2", "", true, txt("tool_definition", "x", "{}"), PTdef, nil, nil},
		{"letta-af", "L2", "tool", false, txt("text", "archival_memory_search", "r"), PTres, []string{PRetr}, nil},
		{"letta-af", "L2", "tool", false, txt("text", "web_search", "r"), PTres, nil, nil},
		{"letta-af", "L2", "user", false, txt("heartbeat", "", `{"type":"heartbeat"}`), PSys, []string{PUser}, nil},
		{"letta-af", "L2", "user", false, txt("user_message", "", `{"type":"user_message"}`), PUser, nil, nil},
		{"letta-af", "L2", "system", false, txt("text", "", "Note: prior messages have been hidden from view due to memory"), PCmpt, []string{PSys}, nil},
		{"letta-af", "L2", "assistant", false, txt("tool_call", "send_message", "{}"), PTcall, []string{PAsst}, nil},
		// nothing fires: the role and, at L2, the kind "text" match no list (ANNEX C-9)
		{"letta-af", "L2", "critic", false, txt("text", "", "x"), POther, nil, []string{"critic", "text"}},
		{"generic-message-list", "L0", "tool", false, txt("tool_result", "", "r"), POther, nil, []string{"tool"}},
		{"anthropic-messages", "L0", "user", false, txt("tool_result", "", "r"), PUser, nil, nil},
		{"anthropic-messages", "L0", "assistant", false, txt("tool_use", "f", "{}"), PAsst, nil, nil},
		{"generic-message-list", "L2", "assistant", false, txt("tool_result", "", "r"), PTres, []string{PAsst}, nil},
		{"generic-message-list", "L2", "", false, txt("mystery", "", "r"), POther, nil, []string{"mystery"}},
		{"generic-message-list", "L0", "", false, txt("", "", "r"), PUnk, nil, nil},
	}
	for i, c := range cases {
		got := shipped.ClassifyP(c.format, c.level, c.role, c.schema, c.b)
		if got.Class != c.class || !slices.Equal(got.Losers, c.losers) || !slices.Equal(got.Raw, c.raw) {
			t.Errorf("case %d: %+v, want %s %v %v", i, got, c.class, c.losers, c.raw)
		}
	}
}

type fakeAdapters struct{ rec *pb.SessionRecord }

func (f fakeAdapters) Adapt(context.Context, *pb.AdaptRequest) (*pb.AdaptResponse, error) {
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Record{Record: f.rec}}, nil
}

func precheck(t *testing.T, stated string, rec *pb.SessionRecord) map[string]any {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	body := `{"envelope_version":"context-composition-envelope/1","declared_format_id":"letta-af","record":{}` + stated + `}`
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Precheck, Body: []byte(body), Adapters: fakeAdapters{rec}})
	if c.Outcome() != sdk.Accepted {
		t.Fatalf("%+v", c)
	}
	raw, _ := json.Marshal(c.Body())
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

func TestPrecheckFigures(t *testing.T) {
	// schema: one tool (8 cp -> E 2); system 12 cp (E 3); user 5 cp (E 2);
	// tool result 10 cp (E 3): T = 10, tool-output share 3/10 = 30.00 %
	rec := &pb.SessionRecord{Level: "L2", Messages: []*pb.Message{
		{Schema: true, Blocks: []*pb.Block{txt("tool_definition", "t", "12345678")}},
		{RoleRaw: "system", Blocks: []*pb.Block{txt("text", "", "system words")}},
		{RoleRaw: "user", Blocks: []*pb.Block{txt("user_message", "", "hello")}},
		{RoleRaw: "tool", Blocks: []*pb.Block{txt("text", "", "result 123")}},
	}}
	m := precheck(t, "", rec)
	if m["entry_count"] != float64(4) || js(m["total"]) != `{"bytes":35,"tokens":"est:~10"}` || js(m["headline"]) != `{"tool_output_share":"est:~30.00%"}` {
		t.Errorf("figures: %v %v %v", m["entry_count"], js(m["total"]), js(m["headline"]))
	}
	na := js(m["not_assessable"])
	if strings.Contains(na, "F-5") || !strings.Contains(na, `"no stated counts"`) {
		t.Errorf("not assessable %s", na)
	}
	// per_message covers 1 of 3 messages and there is no total: F-10 is
	// still assessable (only its whole-record figure is not)
	if na := js(precheck(t, `,"harness_stated_counts":{"per_message":[3,null]}`, rec)["not_assessable"]); strings.Contains(na, "F-10") {
		t.Errorf("partial: %s", na)
	}
	if na := js(precheck(t, `,"harness_stated_counts":{"total":10}`, rec)["not_assessable"]); strings.Contains(na, "F-10") {
		t.Errorf("covered: %s", na)
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(`{"envelope_version":"context-composition-envelope/1","declared_format_id":"letta-af","record":{},"harness_stated_counts":{"total":1}}`))
	f.Add([]byte(`{"declared_format_id":7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ref := ParseEnvelope(b, []string{"letta-af", "anthropic-messages", "generic-message-list"})
		if e == nil && ref == nil || e != nil && ref != nil && ref.Code != CodeStatedCounts {
			t.Fatal("an envelope, a refusal, or an envelope with its stated-counts refusal")
		}
		if ref != nil && messages[ref.Code] == "" {
			t.Fatalf("unknown code %q", ref.Code)
		}
	})
}

// BenchmarkNFCAndEM1 is the per-byte cost of C(b) and E(b) over 5 MiB of
// mixed-script text.
func BenchmarkNFCAndEM1(b *testing.B) {
	chunk := strings.Repeat("Composition e\u0301te\u0301 — 測試 text, "+"ascii words and punctuation. ", 64)
	var blocks []string
	size := 0
	for size < 5<<20 {
		blocks = append(blocks, chunk)
		size += len(chunk)
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		total := 0
		for _, s := range blocks {
			total += Estimate(Chars(s))
		}
		if total == 0 {
			b.Fatal("no estimate")
		}
	}
}

// A pre-check that discloses a could-not-measure kind still returns the
// entry count, the total size and the headline (the criteria's pre-check;
// ANNEX C-6's example).
func TestPrecheckFiguresWithCouldNotMeasure(t *testing.T) {
	m := precheck(t, "", &pb.SessionRecord{Level: "L0"})
	if m["entry_count"] != 0.0 || js(m["total"]) != `{"bytes":0,"tokens":"est:~0"}` ||
		js(m["headline"]) != `{"tool_output_share":{"reason":"not identifiable at this level","value":"NOT-ASSESSABLE"}}` ||
		js(m["could_not_measure"]) != `{"kind":"zero_entries"}` {
		t.Errorf("zero entries: %v %s %s %s", m["entry_count"], js(m["total"]), js(m["headline"]), js(m["could_not_measure"]))
	}
	m = precheck(t, "", &pb.SessionRecord{Level: "L2", Messages: []*pb.Message{{RoleRaw: "user", Blocks: []*pb.Block{txt("", "", "")}}}})
	if m["entry_count"] != 1.0 || js(m["headline"]) != `{"tool_output_share":{"reason":"zero denominator","value":"NOT-ASSESSABLE"}}` ||
		js(m["could_not_measure"]) != `{"kind":"nothing_assessable"}` {
		t.Errorf("nothing assessable: %v %s %s", m["entry_count"], js(m["headline"]), js(m["could_not_measure"]))
	}
}

// shipped is the class lists this family embeds (ANNEX C-9a).
var shipped = func() *ClassLists {
	l, err := ParseClassLists(contextcomposition.ClassLists)
	if err != nil {
		panic(err)
	}
	return l
}()
