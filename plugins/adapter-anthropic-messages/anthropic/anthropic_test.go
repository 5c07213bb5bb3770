package anthropic

import (
	"context"
	"testing"

	"github.com/assay-audit/assay/sdk/adaptertest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func adapt(t *testing.T, rec string) *pb.SessionRecord {
	t.Helper()
	return adaptertest.Adapted(t, Adapter{}, []byte(rec))
}

func TestEveryBlockTypeAdapts(t *testing.T) {
	r := adapt(t, `{"system":[{"type":"text","text":"be brief"}],"messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":[
			{"type":"thinking","thinking":"hmm","signature":"x"},
			{"type":"redacted_thinking","data":"opaque"},
			{"type":"tool_use","id":"t1","name":"lookup","input":{"q":"x","a":1}},
			{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"y"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r1"},{"type":"text","text":"r2"}]},
			{"type":"tool_result","tool_use_id":"t2","content":"plain"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
			{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc text"}},
			{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"found"}]},
			{"type":"web_search_tool_result","tool_use_id":"s1","content":[{"type":"web_search_result","url":"u","title":"t"}]},
			{"type":"future_block","text":"kept"},
			{"type":"future_opaque","blob":1}]}]}`)
	if r.GetLevel() != "L0" || len(r.GetMessages()) != 4 || r.GetMessages()[0].GetRoleRaw() != "system" {
		t.Fatalf("shape: %v", r)
	}
	type want struct {
		kind, text string
		opaque     bool
	}
	var got []want
	for _, m := range r.GetMessages()[2:] {
		for _, b := range m.GetBlocks() {
			got = append(got, want{b.GetKindRaw(), b.GetText(), b.GetNonSerialisable()})
		}
	}
	exp := []want{
		{"thinking", "hmm", false}, {"redacted_thinking", "", true},
		{"tool_use", `{"a":1,"q":"x"}`, false}, {"server_tool_use", `{"query":"y"}`, false},
		{"tool_result", "r1", false}, {"tool_result", "r2", false}, {"tool_result", "plain", false},
		{"image", "", true}, {"document", "doc text", false},
		{"search_result", `[{"text":"found","type":"text"}]`, false},
		{"web_search_tool_result", `[{"title":"t","type":"web_search_result","url":"u"}]`, false},
		{"future_block", "kept", false}, {"future_opaque", "", true},
	}
	if len(got) != len(exp) {
		t.Fatalf("%d blocks, want %d: %v", len(got), len(exp), got)
	}
	for i := range exp {
		if got[i] != exp[i] {
			t.Errorf("block %d: %v, want %v", i, got[i], exp[i])
		}
	}
	if b := r.GetMessages()[2].GetBlocks()[2]; b.GetName() != "lookup" || !b.GetHasArgs() {
		t.Errorf("tool_use name/args: %v", b)
	}
	if bare := adapt(t, `[{"role":"user","content":"x"}]`); len(bare.GetMessages()) != 1 {
		t.Error("a bare array of messages is accepted")
	}
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, Adapter{}, adaptertest.Cases{
		Valid: [][]byte{[]byte(`{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":[{"type":"text","text":"hi"}]}]}`), []byte(`[]`)},
		Invalid: [][]byte{[]byte(`"messages"`), []byte(`{"msgs":[]}`), []byte(`{"messages":[{"role":"user","content":7}]}`),
			[]byte(`{"messages":[{"role":"user","content":"ok"}],"system":{"not":"valid here"}}`)},
	})
}

func FuzzAdapt(f *testing.F) {
	f.Add([]byte(`{"system":"s","messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"x"}]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		adaptertest.AnswerEitherWay(t, Adapter{}, Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: b, JsonStringSpans: true}), b)
	})
}
