package hygiene

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
)

// Shapes that once cost far more than the at-cap benchmark: each within
// every cap and accepted. A probe of the engine found them (session 7).

// chainExport is n Mem0 records of one content over two users, each an
// origin_claim_id pointer to the one before, with a global_claim_ids list
// of pad ids the same length as the records' (never equal to one).
func chainExport(n, pad int) []byte {
	records := make([]rec, n)
	for i := range records {
		r := rec{"id": fmt.Sprintf("c%03d", i), "content_text": "x", "user_id": fmt.Sprintf("u%d", i%2)}
		if i > 0 {
			r["origin_claim_id"] = fmt.Sprintf("c%03d", i-1)
		}
		records[i] = r
	}
	var manifest map[string]any
	if pad > 0 {
		fill := make([]string, pad)
		for i := range fill {
			fill[i] = "zzzz"
		}
		manifest = map[string]any{"global_claim_ids": fill}
	}
	return export("mem0", "full_text", manifest, records...)
}

// lettaNames is k distinct three-character names.
func lettaNames(k int) []string {
	const al = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	names := make([]string, k)
	for i := range names {
		names[i] = string([]byte{al[i/3844%62], al[i/62%62], al[i%62]})
	}
	return names
}

// lettaExport is n Letta records of one content, each attached to its own
// share of names plus one name every record has (so no two are disjoint
// and every pair must be compared).
func lettaExport(n, k int) []byte {
	names := lettaNames(n * k)
	records := make([]rec, n)
	for i := range records {
		att := append(names[i*k:(i+1)*k:(i+1)*k], "~~~")
		records[i] = rec{"id": fmt.Sprintf("a%03d", i), "content_text": "x", "attached_to": att}
	}
	return export("letta", "full_text", nil, records...)
}

// declaredKeysExport is n generic records over a manifest that declares
// keys distinct names, two of which the records carry.
func declaredKeysExport(n, keys int) []byte {
	declared := append([]string{"b", "a"}, lettaNames(keys)...)
	records := make([]rec, n)
	for i := range records {
		records[i] = rec{"id": fmt.Sprintf("g%04d", i), "content_text": fmt.Sprint("c", i%10), "a": fmt.Sprint("x", i%3), "b": "y"}
	}
	return export("generic", "full_text", map[string]any{"declared_scope_keys": declared}, records...)
}

func audited(tb testing.TB, body []byte) any {
	tb.Helper()
	if len(body) > 262144 {
		tb.Fatalf("body %d bytes, over the cap", len(body))
	}
	f, err := New()
	if err != nil {
		tb.Fatal(err)
	}
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "audit", Body: body})
	if !c.Measures() {
		tb.Fatalf("not accepted: %v", c.Body())
	}
	rep, err := c.Measure(context.Background(), time.Now)
	if err != nil {
		tb.Fatal(err)
	}
	// as a client reads it
	raw, err := json.Marshal(rep.Body)
	if err != nil {
		tb.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func BenchmarkAuditShapes(b *testing.B) {
	for _, s := range []struct {
		name string
		body []byte
	}{
		{"chain-1000", chainExport(1000, 0)},
		{"chain-250-padded", chainExport(250, 34000)},
		{"chain-1000-padded", chainExport(1000, 27000)},
		{"letta-one-record-43k-names", lettaExport(1, 43000)},
		{"letta-200-records", lettaExport(200, 209)},
		{"declared-keys-25k", declaredKeysExport(1000, 25000)},
	} {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				audited(b, s.body)
			}
		})
	}
}

// at reads a path of object members from a report.
func at(tb testing.TB, v any, path ...string) any {
	tb.Helper()
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			tb.Fatalf("%v: not an object at %q", path, k)
		}
		v = m[k]
	}
	return v
}

// The shapes are audited as the rules read. A pointer chain: every record
// but the root carries an origin_claim_id that resolves to the root (M4),
// so n−1 of the n live records are marked; the pad id is one distinct
// listed claim id no record has. Letta copies: a cluster needs two copies
// with disjoint attached_to sets, so a name every copy shares leaves none.
func TestAuditShapesAnswerAsTheRulesRead(t *testing.T) {
	for _, n := range []int{2, 40, 300} {
		rep := audited(t, chainExport(n, 100))
		if got := at(t, rep, "coverage", "marked_live"); got != float64(n-1) {
			t.Errorf("chain of %d: marked_live %v", n, got)
		}
		if got := at(t, rep, "coverage", "declared_but_absent", "global_claim_ids"); got != float64(1) {
			t.Errorf("chain of %d: absent claim ids %v", n, got)
		}
	}
	if got := at(t, audited(t, lettaExport(50, 20)), "factors", "cross_scope_clusters", "candidates"); got != float64(0) {
		t.Errorf("letta copies sharing a name: %v candidates", got)
	}
	// a scope's value is its present declared keys' values joined by "|"
	// in declared order, whatever the record's member order and however
	// many keys are declared: "y|x0" is listed global, so the records of
	// scope {b: y, a: x0} are marked and no other
	body := declaredKeysExport(30, 2000)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["manifest"].(map[string]any)["global_scopes"] = []string{"y|x0"}
	body, _ = json.Marshal(m)
	if got := at(t, audited(t, body), "coverage", "marked_live"); got != float64(10) {
		t.Errorf("declared order: marked_live %v, want the 10 records of a = x0", got)
	}
	// without the shared name every pair is disjoint: one cluster of all
	names := lettaNames(60)
	var records []rec
	for i := range 3 {
		att := append([]string{"", names[i*20]}, names[i*20:(i+1)*20]...) // an empty and a repeated name
		records = append(records, rec{"id": fmt.Sprintf("a%d", i), "content_text": "x", "attached_to": att})
	}
	rep := audited(t, export("letta", "full_text", nil, records...))
	if got := at(t, rep, "factors", "cross_scope_clusters", "candidates"); got != float64(1) {
		t.Fatalf("disjoint letta copies: %v candidates", got)
	}
	members := at(t, rep, "factors", "cross_scope_clusters", "clusters").([]any)[0].(map[string]any)["members"].([]any)
	scope := members[0].(map[string]any)["scope"].([]any)
	if len(scope) != 20 || scope[0] != names[0] || scope[19] != names[19] {
		t.Errorf("a copy's attached_to set, sorted and distinct without the empty name: %v", scope)
	}
}
