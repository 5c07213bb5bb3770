package lettaaf

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/adaptertest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedtest"
)

func fixture(t *testing.T, name string) []byte {
	return sharedtest.Read(t, "fixtures/letta/"+name)
}

func adapt(t *testing.T, rec []byte) *pb.SessionRecord {
	t.Helper()
	return adaptertest.Adapted(t, Adapter{}, rec)
}

func disclosed(r *pb.SessionRecord, code string) int64 {
	for _, d := range r.GetDisclosures() {
		if d.GetCode() == code {
			return d.GetCount()
		}
	}
	return 0
}

func blocks(r *pb.SessionRecord) (schema, other int) {
	for _, m := range r.GetMessages() {
		if m.GetSchema() {
			schema += len(m.GetBlocks())
		} else {
			other += len(m.GetBlocks())
		}
	}
	return
}

// Expected figures were read off the files independently, with python3's
// json module (the research notes' §1: docs/context-audit-formats.md as of
// commit 9da2755), not from this adapter.
func TestRealAgentFiles(t *testing.T) {
	loop := adapt(t, fixture(t, "loop.af"))
	// 9 tools in tool_ids; system (1 part), assistant (0 parts + 1 call),
	// tool (1 part; its tool_return repeats the part and is counted once)
	if s, o := blocks(loop); s != 9 || o != 3 || len(loop.GetMessages()) != 4 || loop.GetLevel() != "L2" {
		t.Errorf("loop.af: %d schema blocks, %d blocks, %d messages", s, o, len(loop.GetMessages()))
	}
	msgs := loop.GetMessages()[1:]
	if msgs[0].GetRoleRaw() != "system" || msgs[1].GetBlocks()[0].GetKindRaw() != "tool_call" || msgs[1].GetBlocks()[0].GetName() != "send_message" {
		t.Errorf("loop.af messages: %v", msgs)
	}
	if res := msgs[2].GetBlocks()[0]; msgs[2].GetRoleRaw() != "tool" || res.GetName() != "send_message" || len(res.GetText()) != 86 {
		t.Errorf("loop.af tool result: %v", res)
	}
	if disclosed(loop, "messages_left_out") != 0 || disclosed(loop, "record_was_json_string") != 0 {
		t.Error("loop.af disclosures")
	}

	cs := adapt(t, fixture(t, "customer_service-json-string.af"))
	if s, o := blocks(cs); s != 7 || o != 1 || disclosed(cs, "record_was_json_string") != 1 {
		t.Errorf("customer_service: %d schema blocks, %d blocks", s, o)
	}
	if txt := cs.GetMessages()[1].GetBlocks()[0].GetText(); len(txt) != 3236 {
		t.Errorf("customer_service system text %d bytes, want 3236", len(txt))
	}

	old := adapt(t, fixture(t, "memgpt_agent_with_convo-old-shape.af"))
	// 76 of 83 messages in context: 76 text parts + 25 tool-call arguments;
	// 6 tools, no tool_ids; the 7 left out are stale system prompts
	if s, o := blocks(old); s != 6 || o != 101 || len(old.GetMessages()) != 77 || disclosed(old, "messages_left_out") != 7 {
		t.Errorf("old shape: %d schema blocks, %d blocks, %d messages, %d left out", s, o, len(old.GetMessages()), disclosed(old, "messages_left_out"))
	}
	first := old.GetMessages()[1]
	if first.GetRoleRaw() != "system" || first.GetBlocks()[0].GetKindRaw() != "text" {
		t.Errorf("the system prompt comes first: %v %v", first.GetRoleRaw(), first.GetBlocks()[0].GetKindRaw())
	}
	kinds := map[string]int{}
	for _, m := range old.GetMessages() {
		for _, b := range m.GetBlocks() {
			kinds[b.GetKindRaw()]++
		}
	}
	// packed user texts keep their type: 19 user_message, 4 heartbeat, 1 login, 1 system_alert (all in context)
	if kinds["user_message"] != 19 || kinds["heartbeat"] != 4 || kinds["login"] != 1 || kinds["system_alert"] != 1 || kinds["tool_call"] != 25 {
		t.Errorf("kinds %v", kinds)
	}
}

var conformanceInvalid = [][]byte{[]byte(`[]`), []byte(`{"name":"an agent without messages"}`), []byte(`{"agents":[{"messages":[]},{"messages":[]}]}`),
	[]byte(`"not an agent file"`), []byte(`{"messages":"secret text inside"}`)}

// The synthetic cases run on any clone; the real files where shared/ is.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, Adapter{}, adaptertest.Cases{
		Valid:   [][]byte{[]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)},
		Invalid: conformanceInvalid,
	})
}

func TestConformanceOnRealFiles(t *testing.T) {
	adaptertest.Run(t, Adapter{}, adaptertest.Cases{
		Valid:   [][]byte{fixture(t, "loop.af"), fixture(t, "customer_service-json-string.af")},
		Invalid: conformanceInvalid,
	})
}

func FuzzAdapt(f *testing.F) {
	f.Add([]byte(`{"agents":[{"messages":[{"id":"m","role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x"}],"tool_returns":[{"func_response":"x"}]}],"in_context_message_ids":["m"]}]}`))
	f.Add([]byte(`{"messages":[{"role":"system","in_context":true,"created_at":"2025-03-24T03:03:26.435527+00:00","content":[{"type":"text","text":"{\"type\":\"heartbeat\"}"}]}]}`))
	f.Add([]byte(`"{\"agents\":[]}"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: b, JsonStringSpans: true})
		adaptertest.AnswerEitherWay(t, Adapter{}, r, b)
		for _, m := range r.GetRecord().GetMessages() {
			for _, blk := range m.GetBlocks() {
				if blk.GetContent() == nil {
					t.Fatal("a block without content")
				}
			}
		}
	})
}

// Messages in the API view carry message_type instead of stored parts.
func TestAPIViewMessages(t *testing.T) {
	r := adapt(t, []byte(`{"agents":[{"messages":[
		{"id":"a","message_type":"system_message","content":"you are an agent"},
		{"id":"b","message_type":"user_message","content":[{"type":"text","text":"hi"}]},
		{"id":"c","message_type":"reasoning_message","reasoning":"thinking it over"},
		{"id":"d","message_type":"tool_call_message","tool_call":{"name":"archival_memory_search","arguments":"{\"query\":\"x\"}","tool_call_id":"t1"}},
		{"id":"e","message_type":"tool_return_message","tool_return":"found","tool_call_id":"t1"},
		{"id":"f","message_type":"hidden_reasoning_message"},
		{"id":"g","message_type":"assistant_message","content":"done"}]}]}`))
	type got struct{ role, kind, name, text string }
	var all []got
	for _, m := range r.GetMessages() {
		for _, b := range m.GetBlocks() {
			all = append(all, got{m.GetRoleRaw(), b.GetKindRaw(), b.GetName(), b.GetText()})
		}
	}
	want := []got{{"system", "text", "", "you are an agent"}, {"user", "text", "", "hi"}, {"assistant", "reasoning", "", "thinking it over"},
		{"assistant", "tool_call", "archival_memory_search", `{"query":"x"}`}, {"tool", "tool_return", "archival_memory_search", "found"},
		{"assistant", "reasoning", "", ""}, {"assistant", "text", "", "done"}}
	if len(all) != len(want) {
		t.Fatalf("%d blocks: %v", len(all), all)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("block %d: %v, want %v", i, all[i], want[i])
		}
	}
	if !r.GetMessages()[5].GetBlocks()[0].GetNonSerialisable() {
		t.Error("hidden reasoning is non-serialisable")
	}
}

// The readers give encoding/json's answers on the shapes the adapter reads
// loosely (the first adapter decoded with encoding/json throughout): an
// array of strings, and the members of objects that are not objects.
func TestReadersAgreeWithEncodingJSON(t *testing.T) {
	root := func(raw string) sdk.Value {
		d, err := sdk.Locate([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return d.Root()
	}
	for _, raw := range []string{`["a",null,"b"]`, `["a",1]`, `[]`, `{"x":1}`, `null`, `"s"`, `["\u00e9",""]`} {
		var want []string
		wantOK := raw != "null" && json.Unmarshal([]byte(raw), &want) == nil
		got, ok := strings(root(raw))
		if ok != wantOK || ok && !slices.Equal(got, want) {
			t.Errorf("strings(%s) = %q %v, want %q %v", raw, got, ok, want, wantOK)
		}
	}
	for _, raw := range []string{`[{"a":"1"},5,null,{"a":"2","a":"3"},"x",{"a":4}]`, `{"a":"1"}`, `null`, `[]`} {
		var want []map[string]any
		_ = json.Unmarshal([]byte(raw), &want)
		var got []sdk.Value
		for e := range root(raw).Elems() {
			got = append(got, e)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", raw, len(got), len(want))
		}
		for i := range want {
			w, wantOK := want[i]["a"].(string)
			if g, ok := str(got[i], "a"); g != w || ok != wantOK {
				t.Errorf("%s[%d].a = %q %v, want %q %v", raw, i, g, ok, w, wantOK)
			}
		}
	}
}

// Plain texts go back as spans of the record (escaped ones, and every text
// of an unwrapped JSON-string record, inline), and resolve to the texts.
func TestTextsGoBackAsSpans(t *testing.T) {
	rec := []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"plain words"},{"type":"text","text":"esc\"aped"}],
		"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}]}`)
	r := Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: rec}).GetRecord()
	blocks := r.GetMessages()[0].GetBlocks()
	if blocks[0].GetTextSpan() == nil || blocks[1].GetTextSpan() != nil || blocks[2].GetTextSpan() == nil {
		t.Fatalf("spans %v %v %v", blocks[0].GetTextSpan(), blocks[1].GetTextSpan(), blocks[2].GetTextSpan())
	}
	if err := sdk.ResolveTextSpans(r, rec); err != nil || blocks[0].GetText() != "plain words" || blocks[1].GetText() != `esc"aped` || blocks[2].GetText() != "{}" {
		t.Fatalf("%v: %q %q %q", err, blocks[0].GetText(), blocks[1].GetText(), blocks[2].GetText())
	}
	wrapped, _ := json.Marshal(string(rec))
	r = Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: wrapped}).GetRecord()
	if b := r.GetMessages()[0].GetBlocks()[0]; b.GetTextSpan() != nil || b.GetText() != "plain words" {
		t.Errorf("an unwrapped record's text went back as a span: %v", b)
	}
}
