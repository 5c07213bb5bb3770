package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/familytest"
)

func TestParseInstant(t *testing.T) {
	ok := map[string]string{
		"2026-11-29T12:00:00Z":                "2026-11-29T12:00:00Z",
		"2026-11-29T17:30:00.000000001+05:30": "2026-11-29T12:00:00.000000001Z",
		"2026-11-29T04:00:00.5-08:00":         "2026-11-29T12:00:00.5Z",
		"2026-11-29T12:00:00-00:00":           "2026-11-29T12:00:00Z",
		"2026-11-29T12:00:00.123456789+00:00": "2026-11-29T12:00:00.123456789Z",
		"2024-02-29T00:00:00Z":                "2024-02-29T00:00:00Z",
		"2000-02-29T23:59:59.999999999+23:59": "2000-02-29T00:00:59.999999999Z",
		"0000-01-01T00:00:00Z":                "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59Z":                "9999-12-31T23:59:59Z",
		"2026-01-01T00:30:00+01:00":           "2025-12-31T23:30:00Z",
		"2026-11-29T12:00:00.100Z":            "2026-11-29T12:00:00.1Z",
	}
	for in, want := range ok {
		got, parsed := ParseInstant(in)
		if !parsed || got.String() != want {
			t.Errorf("%s -> %v %v, want %s", in, got, parsed, want)
		}
	}
	for _, bad := range []string{"2026-11-29", "2026-11-29t12:00:00Z", "2026-11-29T12:00:00z", "2026-11-29T12:00:00+0530",
		"2026-11-29 12:00:00Z", "2026-11-29T12:00:00.1234567890Z", "2026-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
		"1900-02-29T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T12:00:60Z", "2026-11-29T12:00:00+24:00",
		"2026-11-29T12:00:00", "2026-11-29T12:00:00.Z", "+2026-11-29T12:00:00Z", "２026-11-29T12:00:00Z", ""} {
		if _, parsed := ParseInstant(bad); parsed {
			t.Errorf("%q parsed", bad)
		}
	}
}

func line(id, issued, expires string, extra string) string {
	s := fmt.Sprintf(`{"challenge_id":%q,"issued_at":%q,"expires_at":%q`, id, issued, expires)
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func body(asOf string, lines ...string) []byte {
	b := `{"log":[` + strings.Join(lines, ",") + `]`
	if asOf != "" {
		b += `,"as_of":"` + asOf + `"`
	}
	return []byte(b + "}")
}

func render(t *testing.T, b []byte) map[string]any {
	t.Helper()
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "analyse", Body: b, Now: time.Date(2026, 11, 29, 12, 0, 0, 700, time.UTC)})
	if c.Outcome() != sdk.Accepted {
		t.Fatalf("refused: %+v", c.Body())
	}
	m, ledger := familytest.Report(t, c, time.Now)
	m["_ledger"] = ledger
	return m
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// The ANNEX A-1 example, worked by hand: five lines, one malformed (its
// expires_at is before its issued_at); windows 60, 100, 260, 3600 s.
func TestAnnexExample(t *testing.T) {
	m := render(t, body("2026-11-29T12:00:00Z",
		line("a", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", `"used_at":"2026-11-29T10:00:30Z","rail":"card"`),
		line("b", "2026-11-29T10:00:00Z", "2026-11-29T10:01:40Z", `"used_at":null,"rail":"usdc"`),
		line("c", "2026-11-29T11:00:00Z", "2026-11-29T11:04:20Z", `"used_at":"2026-11-29T11:04:20Z","rail":"usdc"`),
		line("d", "2026-11-29T11:30:00Z", "2026-11-29T12:30:00Z", `"payer":"WALLET"`),
		line("e", "2026-11-29T11:30:00Z", "2026-11-29T11:00:00Z", ""),
	))
	want := map[string]string{
		"lines":          `{"malformed":1,"submitted":5,"valid":4}`,
		"census":         `{"expired_unused":1,"issued":4,"pending":1,"used":2}`,
		"expiry_windows": `{"301_900":0,"61_300":2,"901_3600":1,"gt_3600":0,"le_60":1}`,
		// card first at line 0, usdc at line 1 (A-8: named by position)
		"per_rail":                  `{"groups":[{"expired_unused":0,"first_line":0,"issued":1,"pending":0,"used":1},{"expired_unused":1,"first_line":1,"issued":2,"pending":0,"used":1}],"rail_absent_lines":1}`,
		"factors":                   `{"expiry_window_max_seconds":"3600","expiry_window_mean_seconds":"1005.000","expiry_window_min_seconds":"60","malformed_lines":1}`,
		"verdict_line":              `"CHALLENGE LIFECYCLE — issued: 4 · used: 2 · expired-unused: 1 · pending: 1 — 2026-11-29T12:00:00Z"`,
		"evaluation_instant_source": `"as_of"`,
		"_ledger":                   `"{\"expired_unused_count\":1,\"issued_count\":4,\"used_count\":2,\"verdict_line\":\"CHALLENGE LIFECYCLE — issued: 4 · used: 2 · expired-unused: 1 · pending: 1 — 2026-11-29T12:00:00Z\"}"`,
	}
	for k, w := range want {
		if got := js(m[k]); got != w {
			t.Errorf("%s:\n got  %s\n want %s", k, got, w)
		}
	}
	if strings.Contains(js(m), "WALLET") {
		t.Error("a buyer field reached the report")
	}
	if strings.Contains(js(m), "card") || strings.Contains(js(m), "usdc") {
		t.Error("a rail label reached the report")
	}
}

func TestNotComputableBothWays(t *testing.T) {
	m := render(t, body("2026-11-29T12:00:00Z",
		line("a", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", ""),
		line("b", "2026-11-29T10:00:00Z", "2026-11-29T13:00:00Z", ""),
	))
	nc := `{"reason":"no valid line carries the used_at field","value":"NOT-COMPUTABLE"}`
	if got := js(m["census"]); got != `{"expired_unused":`+nc+`,"issued":2,"pending":`+nc+`,"used":`+nc+`}` {
		t.Errorf("census %s", got)
	}
	if got := js(m["per_rail"]); got != `{"reason":"no valid line carries the rail field","value":"NOT-COMPUTABLE"}` {
		t.Errorf("per_rail %s", got)
	}
	if got := m["verdict_line"]; got != "CHALLENGE LIFECYCLE — issued: 2 · used: NOT-COMPUTABLE · expired-unused: NOT-COMPUTABLE · pending: NOT-COMPUTABLE — 2026-11-29T12:00:00Z" {
		t.Errorf("verdict %s", got)
	}
	if got := m["_ledger"]; !strings.Contains(got.(string), `"used_count":"NOT-COMPUTABLE"`) {
		t.Errorf("ledger %s", got)
	}
	// rail recorded, usage not: groups carry the usage token
	m = render(t, body("2026-11-29T12:00:00Z", line("a", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", `"rail":"x"`)))
	if got := js(m["per_rail"]); got != `{"groups":[{"expired_unused":`+nc+`,"first_line":0,"issued":1,"pending":`+nc+`,"used":`+nc+`}],"rail_absent_lines":0}` {
		t.Errorf("groups %s", got)
	}
}

func TestBoundariesAndDuplicates(t *testing.T) {
	const i = "2026-11-29T10:00:00Z"
	m := render(t, body("2026-11-29T10:05:00Z",
		// used_at exactly at issued_at and at expires_at: valid
		line("u1", i, "2026-11-29T10:01:00Z", `"used_at":"`+i+`"`),
		line("u2", i, "2026-11-29T10:05:00Z", `"used_at":"2026-11-29T10:05:00Z"`),
		// 1 ns outside: malformed
		line("u3", i, "2026-11-29T10:05:00Z", `"used_at":"2026-11-29T09:59:59.999999999Z"`),
		line("u4", i, "2026-11-29T10:05:00Z", `"used_at":"2026-11-29T10:05:00.000000001Z"`),
		// expires exactly at T: expired-unused; 1 ns later: pending
		line("e1", i, "2026-11-29T10:05:00Z", ""),
		line("p1", i, "2026-11-29T10:05:00.000000001Z", ""),
		// a duplicate behind a malformed first line: the malformed one reserves nothing
		line("d", i, i, ""),
		line("d", i, "2026-11-29T10:15:00Z", ""),
		line("d", i, "2026-11-29T10:15:00Z", ""),
		// ids differing only by normalisation are distinct
		line("é", i, "2026-11-29T11:00:00Z", ""),
		line("e\u0301", i, "2026-11-29T11:00:00Z", ""),
		`"not an object"`, `{"challenge_id":"","issued_at":"`+i+`","expires_at":"`+i+`"}`,
		line("r", i, "2026-11-29T11:00:00Z", `"rail":null`), line("r2", i, "2026-11-29T11:00:00Z", `"rail":""`),
	))
	// valid: u1 u2 e1 p1 d é é' = 7; submitted 15
	if got := js(m["lines"]); got != `{"malformed":8,"submitted":15,"valid":7}` {
		t.Errorf("lines %s", got)
	}
	if got := js(m["census"]); got != `{"expired_unused":1,"issued":7,"pending":4,"used":2}` { // p1, d, é, é' pending
		t.Errorf("census %s", got)
	}
	// windows: 60, 300, 300, 300.000000001, 900, 3600, 3600 s
	if got := js(m["expiry_windows"]); got != `{"301_900":2,"61_300":2,"901_3600":2,"gt_3600":0,"le_60":1}` {
		t.Errorf("buckets %s", got)
	}
	f, _ := m["factors"].(map[string]any)
	// sum 9060.000000001 / 7 = 1294.2857... -> 1294.286
	if f["expiry_window_min_seconds"] != "60" || f["expiry_window_max_seconds"] != "3600" || f["expiry_window_mean_seconds"] != "1294.286" {
		t.Errorf("factors %v", f)
	}
}

func TestServerClockAndWideWindows(t *testing.T) {
	m := render(t, body("",
		line("a", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.5Z", ""),
		line("b", "2000-01-01T00:00:00Z", "2000-01-01T00:00:00.000000001Z", ""),
	))
	// the server clock truncated to whole seconds
	if m["evaluation_instant"] != "2026-11-29T12:00:00Z" || m["evaluation_instant_source"] != "server_clock" {
		t.Errorf("T %v %v", m["evaluation_instant"], m["evaluation_instant_source"])
	}
	f := m["factors"].(map[string]any)
	// 0000-01-01 to 9999-12-31T23:59:59.5 is 315,569,519,999.5 s (over 2^63 ns)
	if f["expiry_window_max_seconds"] != "315569519999.5" || f["expiry_window_min_seconds"] != "0.000000001" {
		t.Errorf("factors %v", f)
	}
	if got := Seconds(big.NewInt(1_500_000_000)); got != "1.5" {
		t.Errorf("Seconds %s", got)
	}
}

func TestRefusalsInOrder(t *testing.T) {
	i := "2026-11-29T10:00:00Z"
	cases := []struct {
		body  string
		code  sdk.RefusalCode
		facts string
	}{
		{`[]`, CodeBodyNotObject, `null`},
		{`{"log":[]} x`, CodeBodyNotObject, `null`},
		{`{"log":["\udc00"]}`, CodeBodyNotObject, `null`},
		{`{"log":["\ud800x"]}`, CodeBodyNotObject, `null`},
		{`{}`, CodeLogRequired, `null`},
		{`{"log":{}}`, CodeLogRequired, `null`},
		{`{"log":[],"as_of":"yesterday"}`, CodeAsOfInvalid, `null`},
		{`{"log":[],"as_of":5}`, CodeAsOfInvalid, `null`},
		{`{"log":[],"as_of":null}`, CodeLogEmpty, `null`},
		{`{"log":[1,{"challenge_id":"a","issued_at":"` + i + `","expires_at":"` + i + `"}]}`, CodeNoValidLines, `{"lines_submitted":2,"malformed_lines":2}`},
	}
	for _, c := range cases {
		_, ref := Parse([]byte(c.body))
		if ref == nil || ref.Code != c.code || ref.Message != messages[c.code] || js(ref.Facts) != c.facts {
			t.Errorf("%s: %+v, want %s %s", c.body, ref, c.code, c.facts)
		}
	}
	if _, ref := Parse([]byte(`{"log":["\ud83d\ude00"],"x":"\\udc00"}`)); ref == nil || ref.Code != CodeNoValidLines {
		t.Errorf("a valid pair and an escaped backslash are not lone surrogates: %+v", ref)
	}
}

func TestPrecheckReturnsLineFactsOnly(t *testing.T) {
	f, _ := New()
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Precheck, Body: body("", line("a", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", `"used_at":null`), `7`)})
	got := js(c.Body())
	if !strings.HasPrefix(got, `{"assessable":true,"lines":{"submitted":2,"valid":1,"malformed":1},"disclosure_sentence":"Submitting`) || strings.Contains(got, "used") && strings.Contains(got, `"used"`) || c.Measures() {
		t.Errorf("precheck %s", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(body("2026-11-29T12:00:00Z", line("a", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", `"used_at":null,"rail":"x"`)))
	f.Add([]byte(`{"log":[{"challenge_id":"a","issued_at":"2026-11-29T17:30:00.000000001+05:30","expires_at":"9999-12-31T23:59:59Z"}]}`))
	f.Add([]byte(`{"log":["\ud800"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		log, ref := Parse(b)
		if (log == nil) == (ref == nil) {
			t.Fatal("exactly one of log and refusal")
		}
		if ref != nil {
			if messages[ref.Code] == "" {
				t.Fatalf("unknown code %q", ref.Code)
			}
			for _, v := range ref.Facts {
				if _, ok := v.(int); !ok {
					t.Fatal("a refusal fact that is not a count")
				}
			}
			return
		}
		a := Analyse(log, Instant{Sec: 1_700_000_000}, false)
		if a.Valid == 0 || a.Valid+a.Malformed != a.Submitted {
			t.Fatal("line counts do not add up")
		}
		if c := a.Census; c.Used+c.ExpiredUnused+c.Pending != c.Issued {
			t.Fatal("census does not add up")
		}
		sum := 0
		for _, n := range a.Buckets {
			sum += n
		}
		if sum != a.Valid {
			t.Fatal("buckets do not add up")
		}
	})
}

// capLog is a log filling the 262,144-byte body cap with varied lines
// (offsets, fractions, used_at, rails, a few malformed).
func capLog() ([]byte, int) {
	var lines []string
	size := 64
	for i := 0; ; i++ {
		l := line(fmt.Sprintf("ch-%07d", i), fmt.Sprintf("2026-11-%02dT%02d:%02d:00.%03d+05:30", 1+i%28, i%24, i%60, i%1000),
			fmt.Sprintf("2026-11-%02dT%02d:%02d:00Z", 1+i%28, 23, 59), fmt.Sprintf(`"rail":"rail-%d","used_at":null`, i%5))
		if size+len(l)+1 > 262144-64 {
			break
		}
		lines = append(lines, l)
		size += len(l) + 1
	}
	return body("2026-11-29T12:00:00Z", lines...), len(lines)
}

// BenchmarkAnalyseAtCap: parse, validate and analyse a log at the body cap.
func BenchmarkAnalyseAtCap(b *testing.B) {
	raw, n := capLog()
	f, _ := New()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "analyse", Body: raw})
		if !c.Measures() {
			b.Fatal("refused")
		}
		if _, err := c.Measure(context.Background(), time.Now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// ANNEX A-8: groups are named and ordered by the position of their first
// valid line, malformed lines counted; A-2: an offset may not carry an
// instant outside 0000–9999.
func TestRailGroupsByFirstLineAndInstantRange(t *testing.T) {
	m := render(t, body("2026-11-29T12:00:00Z",
		`"not a line"`,
		line("a", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", `"rail":"zeta"`),
		line("b", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", `"rail":"alpha"`),
		line("c", "2026-11-29T10:00:00Z", "2026-11-29T10:01:00Z", `"rail":"zeta"`),
	))
	groups := m["per_rail"].(map[string]any)["groups"].([]any)
	if len(groups) != 2 || js(groups[0].(map[string]any)["first_line"]) != "1" || js(groups[0].(map[string]any)["issued"]) != "2" ||
		js(groups[1].(map[string]any)["first_line"]) != "2" {
		t.Errorf("groups %s", js(groups))
	}
	for s, ok := range map[string]bool{
		"0000-01-01T00:30:00+01:00": false, "0000-01-01T00:30:00-01:00": true,
		"9999-12-31T23:30:00-01:00": false, "9999-12-31T23:30:00-00:29": true, "9999-12-31T23:59:59.999999999Z": true,
	} {
		if _, got := ParseInstant(s); got != ok {
			t.Errorf("ParseInstant(%s): %v, want %v", s, got, ok)
		}
	}
}
