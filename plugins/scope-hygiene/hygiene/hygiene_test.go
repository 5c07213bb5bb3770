package hygiene

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/familytest"
)

type rec map[string]any

func export(family, form string, manifest map[string]any, records ...rec) []byte {
	m := map[string]any{"family": family, "form": form, "records": records}
	if manifest != nil {
		m["manifest"] = manifest
	}
	b, _ := json.Marshal(m)
	return b
}

func report(t *testing.T, body []byte) map[string]any {
	t.Helper()
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "audit", Body: body})
	if c.Outcome() != sdk.Accepted {
		t.Fatalf("refused: %+v", c.Body())
	}
	m, ledger := familytest.Report(t, c, func() time.Time { return time.Date(2026, 11, 29, 15, 47, 22, 0, time.UTC) })
	m["_ledger"] = ledger
	return m
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

func factor(m map[string]any, name string) map[string]any {
	return m["factors"].(map[string]any)[name].(map[string]any)
}

func onlyCluster(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	cl := factor(m, "cross_scope_clusters")["clusters"].([]any)
	if len(cl) != 1 {
		t.Fatalf("%d clusters: %s", len(cl), js(cl))
	}
	return cl[0].(map[string]any)
}

func mem(id, user, text string, extra ...any) rec {
	r := rec{"id": id, "user_id": user, "content_text": text}
	for i := 0; i+1 < len(extra); i += 2 {
		r[extra[i].(string)] = extra[i+1]
	}
	return r
}

// The ANNEX A-1 example: m1 (alice) and m2 (bob) hold the same text with no
// marker: one undeclared cluster; m3 is unscoped; m4 is superseded by m1's
// supersedes pointer... here by replaced_by, so not live.
func TestAnnexExample(t *testing.T) {
	m := report(t, export("mem0", "full_text", nil,
		mem("m1", "alice", "likes tea"),
		mem("m2", "bob", "likes tea"),
		rec{"id": "m3", "content_text": "orphan"},
		mem("m4", "carol", "old", "replaced_by", "m9"),
	))
	if js(factor(m, "scope_presence")) != `{"distinct_scopes":3,"eligible":4,"rate":"75.0%","scoped":3,"status":"ASSESSABLE"}` {
		t.Errorf("scope_presence %s", js(factor(m, "scope_presence")))
	}
	if js(factor(m, "unscoped_rate")) != `{"distinct_scopes":3,"eligible":4,"rate":"25.0%","status":"ASSESSABLE","unscoped":1}` {
		t.Errorf("unscoped_rate %s", js(factor(m, "unscoped_rate")))
	}
	c := onlyCluster(t, m)
	if c["classification"] != "undeclared" || c["label"] != UndeclaredLabel || js(c["members"]) != `[{"id":"m1","scope":{"user_id":"alice"}},{"id":"m2","scope":{"user_id":"bob"}}]` {
		t.Errorf("cluster %s", js(c))
	}
	if m["verdict_line"] != "MEMORY SCOPE-HYGIENE — records: 4 · live: 3 · unscoped: 25.0% · undeclared cross-scope clusters: 1 · conflicts: NOT ASSESSABLE · live duplicates: 0 — 2026-11-29T15:47:22Z" {
		t.Errorf("verdict %s", m["verdict_line"])
	}
	if m["_ledger"] != `{"op":"audit","undeclared_cluster_count":1,"verdict_line":"`+m["verdict_line"].(string)+`"}` {
		t.Errorf("ledger %s", m["_ledger"])
	}
	if strings.Contains(js(m), "likes tea") {
		t.Error("content reached the report")
	}
}

// One hand-worked case per decision outcome (ANNEX A-7). Each cluster is
// one content key held by two live copies in different scopes.
func TestDecisionOutcomes(t *testing.T) {
	cases := []struct {
		name     string
		manifest map[string]any
		a, b     rec
		class    string
		reason   string
		extra    string
	}{
		// N4: shared is a string, not a boolean: malformed, whatever else holds.
		{"N4 non-boolean shared", nil, mem("a", "u1", "x", "shared", "yes"), mem("b", "u2", "x", "shared", true), notAssessable, reasonMalformed, ""},
		// N4 also for an origin_claim_id that is not a non-empty string.
		{"N4 bad origin pointer", nil, mem("a", "u1", "x", "origin_claim_id", 7), mem("b", "u2", "x"), notAssessable, reasonMalformed, ""},
		// N3: a copy both marked (shared: true) and in private_scopes: contradictory.
		{"N3", map[string]any{"private_scopes": []string{"u1"}}, mem("a", "u1", "x", "shared", true), mem("b", "u2", "x", "shared", true), notAssessable, reasonContradicts, ""},
		// N2: b points at an origin that is nowhere: a broken pointer, not unmarked.
		{"N2", nil, mem("a", "u1", "x", "shared", true), mem("b", "u2", "x", "origin_claim_id", "ghost"), notAssessable, reasonPointer, ""},
		// N5: a is scoped by user_id, b by agent_id: different key sets.
		{"N5", nil, mem("a", "u1", "x"), rec{"id": "b", "agent_id": "g1", "content_text": "x"}, notAssessable, reasonPartition, ""},
		// B5 veto: both covered (shared: true) but sources disagree.
		{"B5 disagreement + coverage", nil, mem("a", "u1", "x", "shared", true, "source", "s1"), mem("b", "u2", "x", "shared", true, "source", "s2"), notAssessable, reasonAttribution, `"referred_to_scope_conflicts":["a","b"]`},
		// B5 agreement + coverage: B1 stands.
		{"B5 agreement + coverage", nil, mem("a", "u1", "x", "shared", true, "source", "s"), mem("b", "u2", "x", "shared", true, "source", "s"), "marked shared", "", `"label":"declared shared by the operator"`},
		// B5 agreement + no coverage: B2 stands, no distinct_sources.
		{"B5 agreement + no coverage", nil, mem("a", "u1", "x", "source", "s"), mem("b", "u2", "x", "source", "s"), "undeclared", "", ""},
		// B5 disagreement + no coverage: B2 stands with the distinct source count.
		{"B5 disagreement + no coverage", nil, mem("a", "u1", "x", "source", "s1"), mem("b", "u2", "x", "source", "s2"), "undeclared", "", `"distinct_sources":2`},
		// N1: only a is covered.
		{"N1", nil, mem("a", "u1", "x", "shared", true), mem("b", "u2", "x"), notAssessable, reasonPartialCover, ""},
		// B1 through M1 in metadata and M3-a on the other copy.
		{"B1", map[string]any{"global_scopes": []string{"u2"}}, mem("a", "u1", "x", "metadata", map[string]any{"sharing": "global"}), mem("b", "u2", "x"), "marked shared", "", ""},
		// B1 through M4: b's origin is a, same content, origin_scope matches, a is M3-c.
		{"B1 via M4", map[string]any{"global_claim_ids": []string{"a"}}, mem("a", "u1", "x"), mem("b", "u2", "x", "origin_claim_id", "a", "origin_scope", "u1"), "marked shared", "", ""},
		// B2: nothing marks either copy; shared: false is an explicit non-sharing declaration.
		{"B2", nil, mem("a", "u1", "x", "shared", false), mem("b", "u2", "x"), "undeclared", "", `"label":"` + UndeclaredLabel + `"`},
	}
	for _, c := range cases {
		m := report(t, export("mem0", "full_text", c.manifest, c.a, c.b))
		cl := onlyCluster(t, m)
		got := js(cl)
		if cl["classification"] != c.class || (c.reason != "" && cl["reason"] != c.reason) || (c.extra != "" && !strings.Contains(got, c.extra)) {
			t.Errorf("%s: %s", c.name, got)
		}
		if c.name == "B5 agreement + no coverage" && strings.Contains(got, "distinct_sources") {
			t.Errorf("%s: agreeing sources print no count", c.name)
		}
	}
}

func TestM4Chains(t *testing.T) {
	// c -> b -> a (a has no pointer): resolves; all three covered? a is not
	// marked itself, so with a as a copy the cluster is partial (N1); put a
	// in the global scope (M2) so only b and c are copies.
	m := report(t, export("mem0", "full_text", nil,
		rec{"id": "a", "user_id": "global", "content_text": "x"},
		mem("b", "u1", "x", "origin_claim_id", "a"),
		mem("c", "u2", "x", "origin_claim_id", "b"),
	))
	cl := onlyCluster(t, m)
	if cl["classification"] != "marked shared" || js(cl["global_members"]) != `[{"id":"a","scope":"global"}]` {
		t.Errorf("chain: %s", js(cl))
	}
	// a cycle b -> c -> b with no covered root does not resolve: N2
	m = report(t, export("mem0", "full_text", nil,
		mem("b", "u1", "x", "origin_claim_id", "c"),
		mem("c", "u2", "x", "origin_claim_id", "b"),
	))
	if cl := onlyCluster(t, m); cl["reason"] != reasonPointer {
		t.Errorf("cycle: %s", js(cl))
	}
	// content mismatch on the origin: N2
	m = report(t, export("mem0", "full_text", nil,
		mem("o", "u9", "other"), mem("b", "u1", "x", "origin_claim_id", "o"), mem("c", "u2", "x", "shared", true)))
	if cl := onlyCluster(t, m); cl["reason"] != reasonPointer {
		t.Errorf("content mismatch: %s", js(cl))
	}
}

func TestLettaRules(t *testing.T) {
	block := func(id string, agents []string, text string, extra ...any) rec {
		r := rec{"id": id, "attached_to": agents, "content_text": text}
		for i := 0; i+1 < len(extra); i += 2 {
			r[extra[i].(string)] = extra[i+1]
		}
		return r
	}
	m := report(t, export("letta", "full_text", nil,
		block("shared-block", []string{"agent1", "agent2"}, "persona"), // L-1: one record, several scopes: no cluster
		block("t1", []string{"agent1"}, "tmpl", "is_template", true),
		block("c1", []string{"agent1"}, "copy", "template_id", "T"),
		block("c2", []string{"agent3"}, "copy", "template_id", "T"), // L-4: template lineage
		block("p1", nil, "passage", "file_id", "f1"),                // source passage
		block("o1", nil, "orphan"),
	))
	sp := factor(m, "scope_presence")
	// eligible: shared-block, c1, c2, o1 (t1 template, p1 source passage excluded)
	if sp["eligible"] != float64(4) || sp["scoped"] != float64(3) {
		t.Errorf("letta scope_presence %s", js(sp))
	}
	cl := onlyCluster(t, m)
	if cl["classification"] != "template lineage" || js(cl["members"]) != `[{"id":"c1","scope":["agent1"]},{"id":"c2","scope":["agent3"]}]` {
		t.Errorf("letta cluster %s", js(cl))
	}
	if factor(m, "scope_conflicts")["reason"] != reasonNoFieldFam {
		t.Error("letta conflicts must be NOT ASSESSABLE")
	}
	cov := m["coverage"].(map[string]any)
	if cov["templates"] != float64(1) || cov["source_passages"] != float64(1) {
		t.Errorf("coverage %s", js(cov))
	}
}

func TestGatesAndConflictsAndDuplicates(t *testing.T) {
	// generic without declared keys: scope factors NOT ASSESSABLE; duplicates
	// over one partition; a pending head is contested and left out
	m := report(t, export("generic", "hash_only", nil,
		rec{"id": "1", "content_hash": "h"}, rec{"id": "2", "content_hash": "h"}, rec{"id": "3", "content_hash": "h", "state": "pending"},
		rec{"id": "4", "content_hash": "h ", "invalid_at": "2026-01-01"}, // split state: not live
	))
	for _, f := range []string{"scope_presence", "unscoped_rate", "cross_scope_clusters"} {
		if factor(m, f)["reason"] != reasonNoKeys {
			t.Errorf("%s: %s", f, js(factor(m, f)))
		}
	}
	d := factor(m, "duplicates")
	// live: 1, 2, 3 (3 contested); groups: {1,2} -> excess 1 over 3 live
	if d["excess"] != float64(1) || d["rate"] != "33.3%" || js(d["clusters"]) != `[{"count":2,"record_ids":["1","2"],"scope":null}]` {
		t.Errorf("duplicates %s", js(d))
	}
	cov := m["coverage"].(map[string]any)
	if js(cov["split_state_anomalies"]) != `{"count":1,"record_ids":["4"]}` || js(cov["contested_heads"]) != `{"count":1,"record_ids":["3"]}` {
		t.Errorf("coverage %s", js(cov))
	}
	if !strings.Contains(m["verdict_line"].(string), "unscoped: NOT ASSESSABLE · undeclared cross-scope clusters: NOT ASSESSABLE · conflicts: NOT ASSESSABLE · live duplicates: 1") {
		t.Errorf("verdict %s", m["verdict_line"])
	}
	if m["_ledger"] != `{"op":"audit","undeclared_cluster_count":null,"verdict_line":"`+m["verdict_line"].(string)+`"}` {
		t.Errorf("ledger %s", m["_ledger"])
	}

	// zep: a single group without multi_scope: unscoped NOT ASSESSABLE; the
	// four conflict sub-checks
	m = report(t, export("zep_graphiti", "full_text", nil,
		rec{"id": "e1", "group_id": "g", "content_text": "f", "attributed_scope": "other"},
		rec{"id": "e2", "group_id": "g", "content_text": "f2", "history_scope": "g", "episode_group_ids": []string{"g", "h"}},
		rec{"id": "e3", "group_id": "g", "content_text": "f3", "storage_scope": "s", "attributed_scope": "s", "endpoint_group_ids": []string{"g"}},
	))
	if factor(m, "unscoped_rate")["reason"] != reasonMultiScope {
		t.Errorf("graphiti gate %s", js(factor(m, "unscoped_rate")))
	}
	sc := factor(m, "scope_conflicts")
	want := `{"attributed_vs_storage":{"conflicts":1,"record_ids":["e1"]},"endpoint_groups":{"conflicts":0,"record_ids":[]},"episode_groups":{"conflicts":1,"record_ids":["e2"]},"history_vs_storage":{"conflicts":0,"record_ids":[]},"status":"ASSESSABLE","total":2}`
	if js(sc) != want {
		t.Errorf("conflicts\n got  %s\n want %s", js(sc), want)
	}
	// mem0 scope-filtered; session_id read as run_id
	m = report(t, export("mem0", "full_text", map[string]any{"scope_filtered": true},
		rec{"id": "1", "session_id": "s1", "content_text": "x"}))
	if factor(m, "unscoped_rate")["reason"] != reasonFiltered || factor(m, "scope_presence")["scoped"] != float64(1) {
		t.Errorf("mem0 %s", js(m["factors"]))
	}
}

func TestRefusalsInOrder(t *testing.T) {
	many := make([]rec, 1001)
	for i := range many {
		many[i] = rec{"id": fmt.Sprint(i), "content_text": "x"}
	}
	cases := []struct {
		body string
		code sdk.RefusalCode
	}{
		{`[]`, CodeExport},
		{`{"form":"full_text","records":[]}`, CodeFamilyMissing},
		{`{"family":"zep","form":"full_text","records":[]}`, CodeFamilyUnknown},
		{`{"family":7,"form":"full_text","records":[]}`, CodeFamilyUnknown},
		{`{"family":"mem0","form":"text","records":[]}`, CodeForm},
		{`{"family":"mem0","form":"full_text"}`, CodeRecords},
		{`{"family":"mem0","form":"full_text","records":[]}`, CodeRecordsEmpty},
		{string(export("mem0", "full_text", nil, many...)), CodeRecordCap},
		// rule-major: a non-object at index 1 beats a missing id at index 0
		{`{"family":"mem0","form":"full_text","records":[{"content_text":"x"},7]}`, CodeRecordObject},
		{`{"family":"mem0","form":"full_text","records":[{"id":1,"content_text":"x"}]}`, CodeRecordID},
		{`{"family":"mem0","form":"full_text","records":[{"id":"a","content_text":"x"},{"id":"a","content_text":"y"}]}`, CodeRecordIDDup},
		{`{"family":"mem0","form":"full_text","records":[{"id":"a"}]}`, CodeContentText},
		{`{"family":"mem0","form":"hash_only","records":[{"id":"a","content_hash":""}]}`, CodeContentHash},
		{`{"family":"mem0","form":"full_text","manifest":[],"records":[{"id":"a","content_text":"x"}]}`, CodeManifest},
		{`{"family":"mem0","form":"full_text","manifest":{"declared_scope_keys":["a",1]},"records":[{"id":"a","content_text":"x"}]}`, CodeDeclaredKeys},
		{`{"family":"mem0","form":"full_text","variant":"graphiti","records":[{"id":"a","content_text":"x"}]}`, CodeVariant},
	}
	for _, c := range cases {
		_, ref := Parse([]byte(c.body))
		if ref == nil || ref.Code != c.code || ref.Message != messages[c.code] {
			t.Errorf("%.80s: %+v, want %s", c.body, ref, c.code)
		}
	}
}

func TestPrecheckMatrixRowAndStatuses(t *testing.T) {
	f, _ := New()
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Precheck, Body: export("zep_graphiti", "hash_only", nil,
		rec{"id": "1", "group_id": "g", "content_hash": "h"})})
	got := js(c.Body())
	for _, want := range []string{`"cross_scope_clusters":{"status":"CONDITIONAL","note":"Graphiti survives intact`, `"unscoped_rate":{"reason":"multi-scope not demonstrated","status":"NOT ASSESSABLE"}`,
		`"records":1`, `"live_records":1`, `"price":{"label":"$0.05","status":"RULED","usdc_units":50000}`, `"variant":"graphiti","variant_defaulted":true`} {
		if !strings.Contains(got, want) {
			t.Errorf("precheck lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"rate"`) || c.Measures() {
		t.Error("the pre-check computed a factor")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(export("mem0", "full_text", nil, mem("a", "u1", "x", "shared", true), mem("b", "u2", "x", "origin_claim_id", "a")))
	f.Add(export("letta", "hash_only", nil, rec{"id": "a", "attached_to": []string{"x"}, "content_hash": "h"}))
	f.Add([]byte(`{"family":"generic","form":"hash_only","records":[{"id":"1","content_hash":"h","supersedes":["1"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ref := Parse(b)
		if (e == nil) == (ref == nil) {
			t.Fatal("exactly one of export and refusal")
		}
		if ref != nil {
			if messages[ref.Code] == "" {
				t.Fatalf("unknown code %q", ref.Code)
			}
			return
		}
		fam, _ := New()
		rep := fam.Report(e, time.Unix(0, 0))
		raw, err := json.Marshal(rep.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range e.Records {
			if len(r.Content) >= 12 && strings.Contains(string(raw), r.Content) && !strings.Contains(r.ID, r.Content) {
				t.Fatal("content reached the report")
			}
		}
	})
}

// capExport is 1,000 Mem0 records in 250 content groups spread over four
// users, a quarter marked, some superseded: many clusters at the cap.
func capExport() []byte {
	records := make([]rec, 1000)
	for i := range records {
		r := mem(fmt.Sprintf("m%04d", i), fmt.Sprintf("u%d", i%4), fmt.Sprintf("fact %d", i/4))
		if i%16 == 0 {
			r["shared"] = true
		}
		if i%50 == 0 {
			r["replaced_by"] = "x"
		}
		if i%7 == 0 {
			r["source"] = fmt.Sprintf("s%d", i%3)
		}
		records[i] = r
	}
	return export("mem0", "full_text", nil, records...)
}

// BenchmarkAuditAtCap: parse, validate and audit 1,000 records with many
// clusters.
func BenchmarkAuditAtCap(b *testing.B) {
	raw := capExport()
	f, _ := New()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "audit", Body: raw})
		if !c.Measures() {
			b.Fatal("refused")
		}
		if _, err := c.Measure(context.Background(), time.Now); err != nil {
			b.Fatal(err)
		}
	}
}

// ANNEX A-5: only another record's supersedes ends a record; a record
// naming itself stays live (as a string or inside an array).
func TestSelfSupersedeStaysLive(t *testing.T) {
	m := report(t, export("mem0", "full_text", nil, mem("s1", "u", "a", "supersedes", "s1")))
	if m["live_records"] != 1.0 {
		t.Errorf("a lone self-superseding record: live %v", m["live_records"])
	}
	m = report(t, export("mem0", "full_text", nil,
		mem("s1", "u", "a", "supersedes", []string{"s1"}),
		mem("s2", "u", "b", "supersedes", []string{"s1", "s2"})))
	if m["live_records"] != 1.0 {
		t.Errorf("s1 superseded by s2, s2 by itself only: live %v, want 1", m["live_records"])
	}
}

// ANNEX A-4: declared keys that would print content, provenance or a
// forbidden member name are dropped, and listed; none left is no key.
func TestDroppedScopeKeys(t *testing.T) {
	m := report(t, export("generic", "full_text", map[string]any{"declared_scope_keys": []string{"source", "tenant", "source"}},
		rec{"id": "a", "tenant": "t1", "source": "x", "content_text": "same"},
		rec{"id": "b", "tenant": "t2", "source": "y", "content_text": "same"}))
	cov := m["coverage"].(map[string]any)
	if js(cov["scope_keys"]) != `["tenant"]` || js(cov["scope_keys_dropped"]) != `["source"]` || cov["scope_keys_source"] != "manifest" {
		t.Errorf("coverage keys %s dropped %s", js(cov["scope_keys"]), js(cov["scope_keys_dropped"]))
	}
	if c := onlyCluster(t, m); js(c["members"]) != `[{"id":"a","scope":{"tenant":"t1"}},{"id":"b","scope":{"tenant":"t2"}}]` {
		t.Errorf("cluster %s", js(c["members"]))
	}
	m = report(t, export("generic", "full_text", map[string]any{"declared_scope_keys": []string{"content_text"}},
		rec{"id": "a", "content_text": "same"}, rec{"id": "b", "content_text": "same"}))
	want := `{"reason":"no scope key declared (generic schema defines none)","status":"NOT ASSESSABLE"}`
	if js(factor(m, "scope_presence")) != want || js(factor(m, "unscoped_rate")) != want {
		t.Errorf("content_text alone: %s %s", js(factor(m, "scope_presence")), js(factor(m, "unscoped_rate")))
	}
	if strings.Contains(js(m), `"same"`) {
		t.Error("content reached the report")
	}
	m = report(t, export("generic", "full_text", map[string]any{"declared_scope_keys": []string{"SCORE", "ſource", "Source"}},
		rec{"id": "a", "ſource": "s1", "content_text": "c"}))
	if cov := m["coverage"].(map[string]any); js(cov["scope_keys"]) != `["ſource"]` || js(cov["scope_keys_dropped"]) != `["SCORE","Source"]` {
		t.Errorf("case: keys %s dropped %s", js(cov["scope_keys"]), js(cov["scope_keys_dropped"]))
	}
	m = report(t, export("letta", "full_text", map[string]any{"declared_scope_keys": []string{"source"}},
		rec{"id": "a", "attached_to": []string{"x"}, "content_text": "c"}))
	if cov := m["coverage"].(map[string]any); js(cov["scope_keys_dropped"]) != `[]` {
		t.Errorf("letta dropped %s", js(cov["scope_keys_dropped"]))
	}
}
