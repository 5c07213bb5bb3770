package generic

import (
	"context"
	"testing"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/adaptertest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func adapt(t *testing.T, rec string) *pb.SessionRecord {
	t.Helper()
	return adaptertest.Adapted(t, Adapter{}, []byte(rec))
}

func TestLevelsByContent(t *testing.T) {
	for rec, want := range map[string]string{
		`{"messages":[{"role":"user","text":"hi"},{"role":"assistant","text":"yo"}]}`:                  "L0",
		`{"messages":[{"role":"assistant","name":"search","has_args":true,"text":"{}"}]}`:              "L1",
		`{"messages":[{"role":"assistant","kind":"tool_call","text":"{}"}]}`:                           "L2",
		`{"messages":[{"role":"user","text":"hi"}],"tool_schemas":[{"name":"search","text":"{...}"}]}`: "L2",
		`{"messages":[{"role":"user","kind":"","text":"hi"}]}`:                                         "L0",
	} {
		if got := adapt(t, rec).GetLevel(); got != want {
			t.Errorf("%s: level %s, want %s", rec, got, want)
		}
	}
}

func TestBlocks(t *testing.T) {
	r := adapt(t, `{"messages":[{"role":"tool","text":null,"stated_tokens":12}],"tool_schemas":[{"name":"s","text":"schema"}]}`)
	if len(r.GetMessages()) != 2 || !r.GetMessages()[0].GetSchema() || r.GetMessages()[0].GetBlocks()[0].GetKindRaw() != "tool_definition" {
		t.Fatalf("schema first: %v", r)
	}
	b := r.GetMessages()[1].GetBlocks()[0]
	if !b.GetNonSerialisable() || !b.GetHasStatedTokens() || b.GetStatedTokens() != 12 || r.GetMessages()[1].GetRoleRaw() != "tool" {
		t.Errorf("null text block: %v", b)
	}
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, Adapter{}, adaptertest.Cases{
		Valid: [][]byte{[]byte(`{"messages":[{"role":"user","text":"hello there"},{"role":"assistant","kind":"text","text":"hi"}]}`), []byte(`{"messages":[]}`)},
		Invalid: [][]byte{[]byte(`[]`), []byte(`{"msgs":[]}`), []byte(`{"messages":[{"role":"user"}]}`), []byte(`{"messages":[{"role":"user","text":42}]}`),
			[]byte(`{"messages":[{"role":"user","text":"x","stated_tokens":"many"}]}`)},
	})
}

func FuzzAdapt(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","text":"hi","kind":"k","stated_tokens":3}],"tool_schemas":[{"text":null}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		adaptertest.AnswerEitherWay(t, Adapter{}, Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: b, JsonStringSpans: true}), b)
	})
}

func TestStatedTotal(t *testing.T) {
	r := adapt(t, `{"messages":[{"role":"user","text":"x"}],"stated_total":-4}`)
	if !r.GetHasStatedTotal() || r.GetStatedTotal() != -4 {
		t.Fatalf("stated_total not carried as stated: %v %d", r.GetHasStatedTotal(), r.GetStatedTotal())
	}
	if r := adapt(t, `{"messages":[{"role":"user","text":"x"}],"stated_total":null}`); r.GetHasStatedTotal() {
		t.Fatal("a null stated_total is not stated")
	}
	for _, bad := range []string{`"12"`, `1.5`, `1e2`, `true`} {
		resp := Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: "generic-message-list",
			Record: []byte(`{"messages":[{"role":"user","text":"x"}],"stated_total":` + bad + `}`)})
		if resp.GetRefusal() == nil {
			t.Errorf("stated_total %s accepted", bad)
		}
	}
}

// Member names are matched exactly: a differently cased name is an
// unknown member, not the published one.
func TestMemberNamesAreExact(t *testing.T) {
	resp := Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID,
		Record: []byte(`{"messages":[{"ROLE":"user","Text":"x","text":"y"}]}`)})
	r := resp.GetRecord()
	if r == nil {
		t.Fatal("refused")
	}
	if err := sdk.ResolveTextSpans(r, []byte(`{"messages":[{"ROLE":"user","Text":"x","text":"y"}]}`)); err != nil {
		t.Fatal(err)
	}
	if m := r.GetMessages()[0]; m.GetRoleRaw() != "" || m.GetBlocks()[0].GetText() != "y" {
		t.Errorf("role %q, text %q", m.GetRoleRaw(), m.GetBlocks()[0].GetText())
	}
	if resp := (Adapter{}).Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID,
		Record: []byte(`{"messages":[{"role":5,"text":"x"}]}`)}); resp.GetRefusal() == nil {
		t.Error("a role that is not a string adapted")
	}
}
