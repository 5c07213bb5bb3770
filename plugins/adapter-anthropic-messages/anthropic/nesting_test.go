package anthropic

import (
	"context"
	"slices"
	"strings"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// nested is a tool_result depth levels deep around leaves.
func nested(depth int, leaves string) string {
	return `{"messages":[{"role":"user","content":[` + strings.Repeat(`{"type":"tool_result","content":[`, depth) +
		leaves + strings.Repeat(`]}`, depth) + `]}]}`
}

// A tool_result is one block per content part, whatever the nesting
// (ANNEX: kind_raw tool_result); one with no readable part is one
// non-serialisable block, and an unreadable part takes its siblings with it.
func TestNestedToolResults(t *testing.T) {
	type blk struct {
		kind, text string
		opaque     bool
	}
	blocks := func(rec string) []blk {
		var out []blk
		for _, m := range adapt(t, rec).GetMessages() {
			for _, b := range m.GetBlocks() {
				out = append(out, blk{b.GetKindRaw(), b.GetText(), b.GetNonSerialisable()})
			}
		}
		return out
	}
	for _, c := range []struct {
		rec  string
		want []blk
	}{
		{nested(3, `{"type":"text","text":"a"},{"type":"tool_use","name":"f","input":{}},{"type":"text","text":"b"}`),
			[]blk{{"tool_result", "a", false}, {"tool_result", "{}", false}, {"tool_result", "b", false}}},
		{nested(2, ``), []blk{{"tool_result", "", true}}},
		{nested(2, `{"type":"text","text":"a"},5`), []blk{{"tool_result", "", true}}},
		{`{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"a"},` +
			`{"type":"tool_result","content":[]},{"type":"tool_result"},{"type":"tool_result","content":"s"}]},{"type":"text","text":"after"}]}]}`,
			[]blk{{"tool_result", "a", false}, {"tool_result", "", true}, {"tool_result", "", true}, {"tool_result", "s", false}, {"text", "after", false}}},
	} {
		if got := blocks(c.rec); !slices.Equal(got, c.want) {
			t.Errorf("%.80s: %v, want %v", c.rec, got, c.want)
		}
	}
}

// BenchmarkAdaptDeepToolResult: 10,000 text parts inside a tool_result
// nested 4,000 deep (within every cap): each part was copied once per
// level.
func BenchmarkAdaptDeepToolResult(b *testing.B) {
	rec := []byte(nested(4000, strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"x"},`, 10000), ",")))
	for b.Loop() {
		if r := (Adapter{}).Adapt(context.Background(), &pb.AdaptRequest{FormatId: "anthropic-messages", Record: rec}); r.GetRecord() == nil {
			b.Fatal("refused")
		}
	}
}

// BenchmarkAdaptUnusedFlatMember: a 5 MiB record whose one unused member is
// an array of 2.6 million zeros, which the parse still builds.
func BenchmarkAdaptUnusedFlatMember(b *testing.B) {
	rec := []byte(`{"messages":[{"role":"user","content":"hi"}],"x":[0` + strings.Repeat(",0", 2_600_000) + `]}`)
	b.ReportAllocs()
	for b.Loop() {
		if r := (Adapter{}).Adapt(context.Background(), &pb.AdaptRequest{FormatId: "anthropic-messages", Record: rec}); r.GetRecord() == nil {
			b.Fatal("refused")
		}
	}
}
