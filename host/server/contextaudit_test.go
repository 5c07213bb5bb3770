package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/sdk/sharedtest"
)

const caPkg = "plugins/context-audit"

var caAdapters = []string{"plugins/adapter-letta-af", "plugins/adapter-anthropic-messages", "plugins/adapter-generic-message-list"}

func envelope(format string, record any) []byte {
	b, _ := json.Marshal(map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": format, "record": record})
	return b
}

// The context-audit family reaches each of the three adapter plugins
// through the host; the pre-check answers from the adapted record.
func TestContextAuditPrecheckThroughAdapters(t *testing.T) {
	clock := &steppingClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), step: 6 * time.Second}
	h := testhost.Start(t, testhost.Options{Adapters: caAdapters, Now: clock.Now}, caPkg)
	pre := h.URL + "/context-audit/precheck"

	raw := sharedtest.Read(t, "fixtures/letta/loop.af")
	r := post(t, pre, envelope("letta-af", json.RawMessage(raw)))
	if r.status != 200 || r.json["kind"] != "precheck" || r.json["entry_count"] != float64(12) {
		t.Fatalf("loop.af pre-check: %d %.400s", r.status, r.raw)
	}
	verified(t, h, r)
	df, _ := r.json["declared_format"].(map[string]any)
	if df["level"] != "L2" || df["accepted"] != true {
		t.Errorf("declared format %v", df)
	}
	// loop.af has no user message and states no counts
	na, _ := json.Marshal(r.json["not_assessable"])
	if !strings.Contains(string(na), `"F-5"`) || !strings.Contains(string(na), `"no stated counts"`) || !strings.Contains(string(na), `"F-11"`) {
		t.Errorf("not assessable %s", na)
	}

	r = post(t, pre, envelope("anthropic-messages", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hello"}}}))
	head, _ := r.json["headline"].(map[string]any)
	share, _ := head["tool_output_share"].(map[string]any)
	if r.status != 200 || share["reason"] != "not identifiable at this level" {
		t.Errorf("anthropic pre-check: %d %s", r.status, r.raw)
	}

	// refusals and could-not-measure kinds
	if r := post(t, pre, envelope("example-unknown-format-never-accepted", map[string]any{})); r.status != 400 || errorCode(r) != "format_not_accepted" {
		t.Errorf("unlisted format: %d %s", r.status, r.raw)
	}
	if r := post(t, pre, envelope("letta-af", map[string]any{"agents": []any{map[string]any{}, map[string]any{}}})); r.status != 400 || errorCode(r) != "record_required" {
		t.Errorf("two agents: %d %s", r.status, r.raw)
	}
	if r := post(t, pre, envelope("generic-message-list", "not a list")); r.status != 400 || errorCode(r) != "record_does_not_parse_as_declared_format" {
		t.Errorf("R-5: %d %s", r.status, r.raw)
	}
	cnm := post(t, h.URL+"/context-audit/audit", envelope("generic-message-list", map[string]any{"messages": []any{}}))
	if c, _ := cnm.json["could_not_measure"].(map[string]any); cnm.status != 422 || c["kind"] != "zero_entries" || cnm.json["kind"] != "could_not_measure" {
		t.Errorf("zero entries on the paid route: %d %s", cnm.status, cnm.raw)
	}
	verified(t, h, cnm)
	nothing := post(t, h.URL+"/context-audit/audit", envelope("generic-message-list", map[string]any{"messages": []any{map[string]any{"role": "user", "text": nil}}}))
	if c, _ := nothing.json["could_not_measure"].(map[string]any); nothing.status != 422 || c["kind"] != "nothing_assessable" {
		t.Errorf("nothing assessable: %d %s", nothing.status, nothing.raw)
	}
	// a measurable submission on the paid route: the signed report (the
	// ANNEX C-13 example, worked by hand: E("Hello there") = ceil(11/4) = 3,
	// E("Hi") = 1, T = 4; no stated counts, so F-10 is NOT-ASSESSABLE and
	// the line says LIMITED)
	rep := post(t, h.URL+"/context-audit/audit", envelope("anthropic-messages", []any{
		map[string]any{"role": "user", "content": "Hello there"}, map[string]any{"role": "assistant", "content": "Hi"}}))
	if rep.status != 200 || rep.json["kind"] != "report" {
		t.Fatalf("paid route: %d %.300s", rep.status, rep.raw)
	}
	verified(t, h, rep)
	want := "CONTEXT COMPOSITION — format: anthropic-messages (L0) · messages: 2 · blocks: 2 · total: est:~4 · unknown blocks: 0 · LIMITED — " + rep.json["issued_at"].(string)
	if rep.json["measurement_line"] != want {
		t.Errorf("measurement line %q", rep.json["measurement_line"])
	}
	factors, _ := rep.json["factors"].([]any)
	if len(factors) != 13 {
		t.Fatalf("%d factors", len(factors))
	}
	if f10, _ := factors[10].(map[string]any); f10["id"] != "F-10" || f10["status"] != "NOT-ASSESSABLE" || f10["reason"] != "no stated counts" || f10["label"] != "NO-STATED-COUNT" {
		t.Errorf("F-10 %v", f10)
	}
	// the host held each body for its request only (the family adapts by
	// span of it); the last handler may still be closing its session
	for i := 0; h.Families["context-audit"].OpenBodies() != 0; i++ {
		if i == 100 {
			t.Fatalf("%d request bodies outlived their requests", h.Families["context-audit"].OpenBodies())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Reports that break the family's declared tripwires are forged inside an
// otherwise genuine context-audit plugin; the host withholds each (500,
// never charged, never in the ledger, counted) and issues the genuine one.
func TestContextAuditSelfCheckWithholdsForgedReports(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: caAdapters}, "host/internal/testfamily/forged")
	record := []any{map[string]any{"role": "user", "content": "Hello there"}, map[string]any{"role": "assistant", "content": "Hi"}}
	send := func(forge string, stated any) reply {
		env := map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": "anthropic-messages", "record": record}
		if forge != "" {
			env["forge"] = forge
		}
		if stated != nil {
			env["harness_stated_counts"] = stated
		}
		b, _ := json.Marshal(env)
		return post(t, h.URL+"/context-audit/audit", b)
	}
	full := map[string]any{"total": 4} // F-10 assessable: the genuine line says FULL
	forgeries := []struct {
		forge  string
		stated any
	}{
		{"full_line", nil}, {"limited_line", full}, {"estimate_as_number", nil}, {"count_as_estimate", nil},
		{"zeroed_factor", nil}, {"composite", nil}, {"wording", nil},
	}
	for _, f := range forgeries {
		r := send(f.forge, f.stated)
		if r.status != 500 || errorCode(r) != "self_check_failed" {
			t.Errorf("%s: %d %.300s", f.forge, r.status, r.raw)
		}
		if strings.Contains(string(r.raw), "measurement_line") {
			t.Errorf("%s: the withheld report leaked", f.forge)
		}
	}
	if r := send("", nil); r.status != 200 || !strings.Contains(r.json["measurement_line"].(string), "· LIMITED —") {
		t.Fatalf("genuine LIMITED report: %d %.300s", r.status, r.raw)
	}
	if r := send("", full); r.status != 200 || !strings.Contains(r.json["measurement_line"].(string), "· FULL —") {
		t.Fatalf("genuine FULL report: %d %.300s", r.status, r.raw)
	}
	lines := h.Lines(t, 2)
	if len(lines) != 2 {
		t.Fatalf("ledger: %d lines; want the two genuine reports only", len(lines))
	}
	var fields map[string]any
	_ = json.Unmarshal([]byte(lines[1].FamilyFields), &fields)
	if fields["outcome"] != "measured_full" || fields["declared_format_id"] != "anthropic-messages" || fields["entry_count"] != float64(2) || fields["record_bytes"] == nil {
		t.Errorf("ledger fields %s", lines[1].FamilyFields)
	}
	m := do(t, "GET", h.URL+"/context-audit/metrics", nil, nil)
	withheld := 0.0
	for _, line := range strings.Split(string(m.raw), "\n") {
		if strings.HasPrefix(line, "assay_self_check_failures_total{") && strings.Contains(line, `service="context-audit"`) {
			var v float64
			_, _ = fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			withheld += v
		}
	}
	if withheld != 7 {
		t.Errorf("metrics count %v answers withheld over every rule, want 7:\n%s", withheld, m.raw)
	}
}

// The paid route through x402 (local facilitator): a measurable record is
// charged $0.05 and its ledger line holds exactly the criteria's closed
// family fields; a could-not-measure record answers 422 before any payment
// is asked for, and nothing is charged or written.
func TestContextAuditPaidThroughX402(t *testing.T) {
	h := startPaidWith(t, testhost.Options{Adapters: caAdapters}, caPkg)
	url := h.URL + "/context-audit/audit"
	body := envelope("anthropic-messages", []any{map[string]any{"role": "user", "content": "Hello there"}, map[string]any{"role": "assistant", "content": "Hi"}})
	payer, addr := newPayer(t)
	res, err := payer.Call(context.Background(), url, body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || res.Settlement == nil || !res.Settlement.Success {
		t.Fatalf("paid call: %d %.300s", res.Status, res.Body)
	}
	rep := reply{status: res.Status, raw: res.Body}
	_ = json.Unmarshal(res.Body, &rep.json)
	verified(t, h.Host, rep)
	if pay, _ := rep.json["payment"].(map[string]any); pay["charged"] != true || pay["price_usdc_units"] != float64(50000) || pay["payer"] != addr {
		t.Errorf("payment member %v", pay)
	}
	lines := h.Lines(t, 1)
	if len(lines) != 1 {
		t.Fatalf("ledger: %d lines", len(lines))
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(lines[0].FamilyFields), &fields); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"op": "audit", "measurement_line": rep.json["measurement_line"], "declared_format_id": "anthropic-messages",
		"entry_count": float64(2), "record_bytes": float64(len(`[{"content":"Hello there","role":"user"},{"content":"Hi","role":"assistant"}]`)), "outcome": "measured_limited"}
	if len(fields) != len(want) {
		t.Errorf("ledger family fields %v, want exactly %v", fields, want)
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("ledger %s = %v, want %v", k, fields[k], v)
		}
	}
	if *lines[0].Payer != addr || lines[0].PriceUSDCUnits != 50000 {
		t.Errorf("ledger line %+v", lines[0])
	}

	cnm := post(t, url, envelope("generic-message-list", map[string]any{"messages": []any{}}))
	if cnm.status != 422 || cnm.header.Get("PAYMENT-REQUIRED") != "" {
		t.Errorf("could not measure: %d, payment asked: %q", cnm.status, cnm.header.Get("PAYMENT-REQUIRED"))
	}
	if pay, _ := cnm.json["payment"].(map[string]any); pay["charged"] != false {
		t.Errorf("could-not-measure payment member %v", pay)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Errorf("a could-not-measure answer wrote a ledger line")
	}
}

// Bodies reach plugins as sealed shared files where the platform allows,
// inline otherwise, and a plugin the host sends them inline to still
// works beside one it shares them with: the host reads the record's range
// out for an adapter that takes it inline. The four combinations answer
// the same report, each took the path it should, and no shared body
// outlives its request in any process. Without memfd (not Linux) every hop
// is inline, and the four must still agree.
func TestSharedAndInlineBodiesAgree(t *testing.T) {
	linux := runtime.GOOS == "linux"
	raw := sharedtest.Read(t, "fixtures/letta/loop.af")
	var msgs []any
	for i := range 300 {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("question %d about the ledger and its rows", i)},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": strings.Repeat("an answer with some words ", i%7+1)},
				map[string]any{"type": "tool_use", "id": fmt.Sprintf("t%d", i), "name": "lookup", "input": map[string]any{"row": i}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("t%d", i), "content": "row found"}}})
	}
	records := [][]byte{envelope("letta-af", json.RawMessage(raw)), envelope("anthropic-messages", map[string]any{"messages": msgs})}
	// the family-owned members of a report, without the check-end instant
	stable := func(r reply) string {
		line, _ := r.json["measurement_line"].(string)
		line, _, _ = strings.Cut(line, " — 20")
		b, _ := json.Marshal([]any{r.json["header_facts"], r.json["factors"], r.json["declared_format"], line})
		return string(b)
	}
	var want []string
	for _, c := range []struct {
		name                   string
		inlineFam, inlineAdapt bool
		famShared, adaptShared bool
	}{
		{"shared", false, false, true, true},
		{"inline", true, true, false, false},
		{"family inline", true, false, false, false},
		{"adapters inline", false, true, true, false},
	} {
		c.famShared, c.adaptShared = c.famShared && linux, c.adaptShared && linux
		h := testhost.Start(t, testhost.Options{Adapters: caAdapters, InlineFamilies: c.inlineFam, InlineAdapters: c.inlineAdapt}, caPkg)
		for i, rec := range records {
			r := post(t, h.URL+"/context-audit/audit", rec)
			if r.status != 200 {
				t.Fatalf("%s: %d %.300s", c.name, r.status, r.raw)
			}
			verified(t, h, r)
			if r.json["factors"] == nil || r.json["header_facts"] == nil {
				t.Fatalf("%s: a report without factors or header facts: %.300s", c.name, r.raw)
			}
			if len(want) <= i {
				want = append(want, stable(r))
			} else if got := stable(r); got != want[i] {
				t.Errorf("%s: record %d reported\n%s\nnot\n%s", c.name, i, got, want[i])
			}
		}
		fam := h.Families["context-audit"].SharedBodiesSent()
		var adapt int64
		for _, a := range h.Adapters {
			adapt += a.SharedBodiesSent()
		}
		if (fam == 2) != c.famShared || (fam == 0) == c.famShared || (adapt == 2) != c.adaptShared || (adapt == 0) == c.adaptShared {
			t.Errorf("%s: %d bodies shared with the family, %d with adapters", c.name, fam, adapt)
		}
		for _, pid := range append(h.PIDs(), "self") {
			if n := testhost.SharedBodiesSettled(pid); n != 0 {
				t.Errorf("%s: process %s holds %d shared bodies after every request answered", c.name, pid, n)
			}
		}
	}
}
