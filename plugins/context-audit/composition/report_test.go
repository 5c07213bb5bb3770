package composition

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/corpus/realistic"
	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/plugins/adapter-generic-message-list/generic"
	"github.com/assay-audit/assay/plugins/adapter-letta-af/lettaaf"
	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/familytest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

var checkEnd = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// workedRecord is a generic L2 record whose every figure is worked by hand
// in the comments (C = code points, E = ceil(C/4)).
func workedRecord() *pb.SessionRecord {
	unsized := &pb.Block{Content: &pb.Block_NonSerialisable{NonSerialisable: true}}
	return &pb.SessionRecord{Level: "L2", Messages: []*pb.Message{
		{Schema: true, Blocks: []*pb.Block{txt("tool_definition", "lookup", `{"name":"lookup"}`)}}, // b0: C 17, E 5, P-TDEF, C-STRUCT
		{RoleRaw: "system", Blocks: []*pb.Block{txt("", "", "You are a careful assistant.")}},      // b1 m0: C 28, E 7, P-SYS
		{RoleRaw: "user", Blocks: []*pb.Block{txt("", "", "find the blue box now")}},               // b2 m1: C 21, E 6, P-USER
		{RoleRaw: "assistant", Blocks: []*pb.Block{txt("tool_call", "", `{"q":"blue box"}`)}},      // b3 m2: C 16, E 4, P-TCALL over P-ASST
		{RoleRaw: "tool", Blocks: []*pb.Block{txt("tool_result", "", "Find the blue box now!")}},   // b4 m3: C 22, E 6, P-TRES
		{RoleRaw: "user", Blocks: []*pb.Block{txt("", "", "find the blue box now")}},               // b5 m4: E 6, exact with b2
		{RoleRaw: "assistant", Blocks: []*pb.Block{unsized}},                                       // b6 m5: C-UNK
		{RoleRaw: "critic", Blocks: []*pb.Block{txt("", "", "")}},                                  // b7 m6: P-OTHER, C-EMPTY
	}}
}

func measured(t *testing.T, rec *pb.SessionRecord, stated string) map[string]any {
	t.Helper()
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	body := `{"envelope_version":"context-composition-envelope/1","declared_format_id":"generic-message-list","record":{"messages":[]}` + stated + `}`
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "audit", Body: []byte(body), Adapters: fakeAdapters{rec}})
	m, ledger := familytest.Report(t, c, func() time.Time { return checkEnd })
	m["_ledger"] = ledger
	return m
}

func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q", path, k)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no element %d", path, k)
			}
			v = a[k]
		}
	}
	return v
}

func js2(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestReportWorkedByHand(t *testing.T) {
	m := measured(t, workedRecord(), "")
	// T = 5+7+6+4+6+6 = 34, C_total = 17+28+21+16+22+21 = 125
	checks := map[string][2]string{
		"M01":  {js2(at(t, m, "header_facts", "M01")), `{"axis_c_conflict_count":0,"axis_p_conflict_count":1,"block_count":8,"empty_block_count":1,"message_count":7,"schema_block_count":1}`},
		"M02":  {js2(at(t, m, "header_facts", "M02")), `{"characters":125,"tokens":"est:~34","unsized_block_count":1}`},
		"M13":  {js2(at(t, m, "header_facts", "M13")), `{"c_unk":{"block_count":1,"share":{"reason":"non-serialisable payload","value":"NOT-ASSESSABLE"},"tokens":{"reason":"non-serialisable payload","value":"NOT-ASSESSABLE"}},"either":{"block_count":1,"share":"est:~0.00%","tokens":"est:~0"},"p_unk":{"block_count":0,"share":"est:~0.00%","tokens":"est:~0"}}`},
		"TDEF": {js2(at(t, m, "factors", 0, "rows", 0)), `{"block_count":1,"class":"P-TDEF","share":"est:~14.71%","tokens":"est:~5"}`},  // 500/34 = 14.705…
		"USER": {js2(at(t, m, "factors", 0, "rows", 6)), `{"block_count":2,"class":"P-USER","share":"est:~35.29%","tokens":"est:~12"}`}, // 1200/34 = 35.294…
		"OTH":  {js2(at(t, m, "factors", 0, "rows", 8)), `{"block_count":1,"class":"P-OTHER","raw_values":["critic"],"share":"est:~0.00%","tokens":"est:~0"}`},
		"conf": {js2(at(t, m, "factors", 0, "conflicts")), `[{"block_index":3,"losers":["P-ASST"],"winner":"P-TCALL"}]`},
		"CUNK": {js2(at(t, m, "factors", 1, "rows", 1)), `{"block_count":1,"class":"C-UNK","share":{"reason":"non-serialisable payload","value":"NOT-ASSESSABLE"},"tokens":{"reason":"non-serialisable payload","value":"NOT-ASSESSABLE"}}`},
		// M06: m0..m4 and m6 (6 messages; m5 unsized): estimates 7,6,4,6,6,0 (sum 29),
		// sorted 0,4,6,6,6,7; median rank 3 -> 6, p90 rank ceil(5.4) = 6 -> 7; mean 29/6 -> 5;
		// top 3 = m0, m1, m3 (ties to the lowest index), 10·e ≥ 29 adds m2 (4) and m4 (6)
		"M06": {js2(at(t, m, "factors", 3)), `{"convention":"Nearest-rank percentiles and the 10 % largest-contributor threshold are fleet conventions.","excluded":{"schema_pseudo_message_count":1,"unsized_message_count":1},"id":"F-3","largest_contributors":[{"message_index":0,"share":"est:~20.59%","tokens":"est:~7"},{"message_index":1,"share":"est:~17.65%","tokens":"est:~6"},{"message_index":2,"share":"est:~11.76%","tokens":"est:~4"},{"message_index":3,"share":"est:~17.65%","tokens":"est:~6"},{"message_index":4,"share":"est:~17.65%","tokens":"est:~6"}],"lower_median":{"rank":3,"tokens":"est:~6"},"max_tokens":"est:~7","mean_tokens":"est:~5","message_count":6,"metric":"M06","min_tokens":"est:~0","p90":{"rank":6,"tokens":"est:~7"},"status":"ASSESSABLE","total_tokens":"est:~29"}`},
		"M08": {js2(at(t, m, "factors", 4, "groups")), `[{"block_indices":[2,5],"excess_block_count":1,"excess_tokens":"est:~6","kept_block_index":2}]`},
		// M07: turn 0 = m0 (7); turn 1 = m1..m3 (16, cumulative 23 = 67.647…%); turn 2 = m4..m6 (6, 29 = 85.294…%)
		"M07": {js2(at(t, m, "factors", 5, "turns")), `[{"cumulative_share":"est:~20.59%","cumulative_tokens":"est:~7","first_message_index":0,"increment_tokens":"est:~7","message_count":1,"turn":0},{"cumulative_share":"est:~67.65%","cumulative_tokens":"est:~23","first_message_index":1,"increment_tokens":"est:~16","message_count":3,"turn":1},{"cumulative_share":"est:~85.29%","cumulative_tokens":"est:~29","first_message_index":4,"increment_tokens":"est:~6","message_count":3,"turn":2}]`},
		// M09: b1, b2, b4, b5 have ≥ 3 tokens; b2/b4 and b4/b5 share every shingle, b2/b5 is exact (M08's)
		"M09":  {js2([]any{at(t, m, "factors", 6, "eligible_block_count"), at(t, m, "factors", 6, "pair_count"), at(t, m, "factors", 6, "pairs")}), `[4,2,[[2,4],[4,5]]]`},
		"M11":  {js2([]any{at(t, m, "factors", 8, "block_count"), at(t, m, "factors", 8, "share"), at(t, m, "factors", 8, "absence_note")}), `[1,"est:~14.71%",null]`},
		"M14":  {js2(at(t, m, "factors", 9, "blocks")), `[{"block_index":1,"class":"P-SYS","depth":"est:~14.71%","offset_tokens":"est:~5"}]`},
		"F10":  {js2(at(t, m, "factors", 10)), `{"id":"F-10","label":"NO-STATED-COUNT","metric":"M12","reason":"no stated counts","status":"NOT-ASSESSABLE"}`},
		"M15":  {js2(at(t, m, "factors", 12)), `{"block_index":1,"c_class":"C-TEXT","id":"F-12","message_index":0,"metric":"M15","p_class":"P-SYS","share":"est:~20.59%","status":"ASSESSABLE","tokens":"est:~7"}`},
		"line": {m["measurement_line"].(string), "CONTEXT COMPOSITION — format: generic-message-list (L2) · messages: 7 · blocks: 8 · total: est:~34 · unknown blocks: 1 · LIMITED — 2026-11-29T12:00:00Z"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s:\n got  %s\n want %s", name, c[0], c[1])
		}
	}
	if !strings.Contains(m["_ledger"].(string), `"outcome":"measured_limited"`) || !strings.Contains(m["_ledger"].(string), `"entry_count":8`) {
		t.Errorf("ledger %s", m["_ledger"])
	}
	for i, id := range []string{"F-1", "F-2", "F-2b", "F-3", "F-4", "F-5", "F-6", "F-7", "F-8", "F-9", "F-10", "F-11", "F-12"} {
		if at(t, m, "factors", i, "id") != id {
			t.Errorf("factor %d is %v, want %s", i, at(t, m, "factors", i, "id"), id)
		}
	}
}

// Stated counts against the worked record (7 messages, T = 34, message
// estimates 7, 6, 4, 6, 6, 0, 0).
func TestStatedVersusMeasured(t *testing.T) {
	m := measured(t, workedRecord(), `,"harness_stated_counts":{"per_message":[7, 6.0, "4", -1, 7, null, 0, 99],"total":35}`)
	f := at(t, m, "factors", 10).(map[string]any)
	// 6.0, "4" and -1 are invalid (3); 99 lies beyond message 6 (1 ignored)
	if f["status"] != "ASSESSABLE" || f["covered_message_count"] != float64(3) || f["invalid_entry_count"] != float64(3) || f["ignored_entry_count"] != float64(1) {
		t.Fatalf("F-10 %s", js2(f))
	}
	want := `[{"agreement":"WITHIN","difference_share":"est:~0.00%","difference_tokens":"est:~0","measured_tokens":"est:~7","message_index":0,"stated":7,"stated_relative":"equal"},` +
		// 100/6 = 16.666…; 20·1 > 6
		`{"agreement":"DISAGREE","difference_share":"est:~16.67%","difference_tokens":"est:~1","measured_tokens":"est:~6","message_index":4,"stated":7,"stated_relative":"above"},` +
		`{"agreement":"EXACT","difference_share":{"reason":"zero denominator","value":"NOT-ASSESSABLE"},"difference_tokens":"est:~0","measured_tokens":"est:~0","message_index":6,"stated":0,"stated_relative":"equal"}]`
	if got := js2(f["units"]); got != want {
		t.Errorf("units\n got  %s\n want %s", got, want)
	}
	// covered: 14 against 13 (100/13 = 7.69…); whole record: 35 against 34 (2.94…, 20 ≤ 34)
	if got := js2(f["covered"]); got != `{"agreement":"DISAGREE","difference_share":"est:~7.69%","difference_tokens":"est:~1","measured_tokens":"est:~13","stated":14,"stated_relative":"above"}` {
		t.Errorf("covered %s", got)
	}
	if got := js2(f["whole_record"]); got != `{"agreement":"WITHIN","difference_share":"est:~2.94%","difference_tokens":"est:~1","measured_tokens":"est:~34","stated":35,"stated_relative":"above"}` {
		t.Errorf("whole record %s", got)
	}
	if !strings.Contains(m["measurement_line"].(string), "· FULL —") {
		t.Errorf("line %s", m["measurement_line"])
	}
	// partial coverage without a total (M12): m0 alone is covered (7
	// against E 7); the aggregates run over it, the whole-record figure is
	// NOT-ASSESSABLE, and the factor, assessable, adds nothing to LIMITED
	m = measured(t, workedRecord(), `,"harness_stated_counts":{"per_message":[7]}`)
	f = at(t, m, "factors", 10).(map[string]any)
	within := `{"agreement":"WITHIN","difference_share":"est:~0.00%","difference_tokens":"est:~0","measured_tokens":"est:~7",`
	if f["status"] != "ASSESSABLE" || f["covered_message_count"] != 1.0 || f["message_count"] != 7.0 ||
		js2(f["units"]) != `[`+within+`"message_index":0,"stated":7,"stated_relative":"equal"}]` ||
		js2(f["covered"]) != within+`"stated":7,"stated_relative":"equal"}` ||
		js2(f["whole_record"]) != `{"reason":"partial coverage","value":"NOT-ASSESSABLE"}` {
		t.Errorf("partial %s", js2(f))
	}
	if !strings.Contains(m["measurement_line"].(string), "· FULL —") {
		t.Errorf("partial coverage made the line %s", m["measurement_line"])
	}
}

// The ±5 % edges, in integers (20·|s−E| ≤ E).
func TestComparisonEdges(t *testing.T) {
	for _, c := range []struct {
		s    int64
		e    int
		want string
	}{{21, 20, "WITHIN"}, {19, 20, "WITHIN"}, {22, 20, "DISAGREE"}, {18, 20, "DISAGREE"}, {0, 0, "EXACT"}, {1, 0, "DISAGREE"}, {0, 1, "DISAGREE"}} {
		if got := comparison(c.s, c.e)["agreement"]; got != c.want {
			t.Errorf("stated %d, E %d: %v, want %s", c.s, c.e, got, c.want)
		}
	}
}

// At L0 the structural classes print their note in every table, F-8 and
// F-9 print theirs, and a record with no user message is LIMITED by F-5.
func TestReportAtL0(t *testing.T) {
	rec := &pb.SessionRecord{Level: "L0", Messages: []*pb.Message{
		{RoleRaw: "system", Blocks: []*pb.Block{txt("text", "", "abcd")}},            // b0: E 1
		{RoleRaw: "assistant", Blocks: []*pb.Block{txt("tool_use", "f", `{"a":1}`)}}, // b1: C 7, E 2 (kind unread at L0)
	}}
	m := measured(t, rec, "")
	hidden := `{"class":"P-TDEF","note":"not identifiable at this level"}`
	if got := js2(at(t, m, "factors", 0, "rows", 0)); got != hidden {
		t.Errorf("F-1 row %s", got)
	}
	if got := js2(at(t, m, "factors", 2, "margins", "axis_p", 0)); got != hidden {
		t.Errorf("F-2b margin %s", got)
	}
	if got := js2(at(t, m, "factors", 8)); got != `{"absence_note":"no tool definitions present in the submitted record","id":"F-8","metric":"M11","note":"not identifiable at this level","status":"ASSESSABLE"}` {
		t.Errorf("F-8 %s", got)
	}
	if at(t, m, "factors", 9, "cmpt_note") != "no P-CMPT block identified at this level" {
		t.Errorf("F-9 %s", js2(at(t, m, "factors", 9)))
	}
	if got := js2(at(t, m, "factors", 5)); got != `{"id":"F-5","metric":"M07","reason":"no P-USER message","status":"NOT-ASSESSABLE"}` {
		t.Errorf("F-5 %s", got)
	}
	if got := js2(at(t, m, "factors", 2, "cells")); got != `[{"block_count":1,"c":"C-TEXT","p":"P-SYS","tokens":"est:~1"},{"block_count":1,"c":"C-STRUCT","p":"P-ASST","tokens":"est:~2"}]` {
		t.Errorf("cells %s", got)
	}
}

// Raw values are capped at 64 code points and listed once per printed
// value (ANNEX C-14): two roles that share their first 64 code points
// print once.
func TestOtherRawValuesCappedAndDistinct(t *testing.T) {
	long := strings.Repeat("é", 64)
	rec := &pb.SessionRecord{Level: "L0", Messages: []*pb.Message{
		{RoleRaw: long + "a", Blocks: []*pb.Block{txt("", "", "x")}},
		{RoleRaw: long + "b", Blocks: []*pb.Block{txt("", "", "y")}},
		{RoleRaw: "user", Blocks: []*pb.Block{txt("", "", "z")}},
	}}
	m := measured(t, rec, "")
	if got := js2(at(t, m, "factors", 0, "rows", 8, "raw_values")); got != js2([]string{long + "…"}) {
		t.Errorf("raw values %s", got)
	}
}

// BenchmarkMaxRecord is the engine alone on a max-size record (5 MiB,
// 10,000 blocks): the adapter's answer is prepared once, then each
// iteration validates (envelope, classification) and measures the report,
// as the family plugin does after the host hands it the body.
func BenchmarkMaxRecord(b *testing.B) {
	body := compositiontest.MaxRecord(b)
	f, err := New()
	if err != nil {
		b.Fatal(err)
	}
	benchAudit(b, f, body, anthropic.Adapter{})
}

// benchAudit adapts body's record once with adapter, then validates and
// measures the report on each iteration, as the family plugin does after
// the host hands it the body.
func benchAudit(b *testing.B, f *Family, body []byte, adapter sdk.Adapter) {
	env, _ := ParseEnvelope(body, f.accepted)
	resp := adapter.Adapt(context.Background(), &pb.AdaptRequest{FormatId: env.FormatID, Record: env.Record})
	if err := sdk.ResolveTextSpans(resp.GetRecord(), env.Record); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "audit", Body: body, Adapters: fakeAdapters{resp.GetRecord()}})
		if !c.Measures() {
			b.Fatal("not accepted")
		}
		if _, err := c.Measure(context.Background(), func() time.Time { return checkEnd }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIssueReference is compositiontest.Reference, the yardstick
// issue #8 set its targets against, on the max-size record.
func BenchmarkIssueReference(b *testing.B) {
	body := compositiontest.MaxRecord(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := compositiontest.Reference(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRealisticRecord is BenchmarkMaxRecord on the 5 MiB realistic
// record of each format (corpus/realistic), each adapted once by its own
// adapter.
func BenchmarkRealisticRecord(b *testing.B) {
	f, err := New()
	if err != nil {
		b.Fatal(err)
	}
	adapters := map[string]sdk.Adapter{"anthropic-messages": anthropic.Adapter{}, "generic-message-list": generic.Adapter{}, "letta-af": lettaaf.Adapter{}}
	for _, format := range realistic.Formats {
		body, err := realistic.Record(format, realistic.BodyCap, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(format, func(b *testing.B) { benchAudit(b, f, body, adapters[format]) })
	}
}
