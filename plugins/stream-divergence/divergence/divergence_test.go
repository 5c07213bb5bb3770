package divergence

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func body(streamed, reference any) []byte {
	b, _ := json.Marshal(map[string]any{
		"streamed_capture": map[string]any{"chunks": streamed},
		"reference_output": map[string]any{"chunks": reference},
	})
	return b
}

// Worked by hand from the comparison rule; see ANNEX A-5.
func TestCompareWorkedExamples(t *testing.T) {
	cases := []struct {
		name, s, r string
		equal      bool
		first      int
		spans      []Span
	}{
		{"equal", "abc", "abc", true, -1, []Span{}},
		{"both empty", "", "", true, -1, []Span{}},
		{"annex A-5", "abcd", "aXcdef", false, 1, []Span{{1, 1}, {4, 2}}},
		{"streamed strict prefix", "abc", "abcde", false, 3, []Span{{3, 2}}},
		{"reference strict prefix", "abcde", "ab", false, 2, []Span{{2, 3}}},
		{"empty vs non-empty", "", "xyz", false, 0, []Span{{0, 3}}},
		{"first byte", "Xbc", "abc", false, 0, []Span{{0, 1}}},
		{"last byte", "abX", "abc", false, 2, []Span{{2, 1}}},
		{"both ends", "XbcY", "abcd", false, 0, []Span{{0, 1}, {3, 1}}},
		// a run reaching the shorter side's end joins the absence run
		{"run into absence", "abXY", "abcdef", false, 2, []Span{{2, 4}}},
		{"alternating", "aXbXc", "aYbYc", false, 1, []Span{{1, 1}, {3, 1}}},
	}
	for _, c := range cases {
		got := Compare([]byte(c.s), []byte(c.r))
		want := Result{ByteEqual: c.equal, FirstDivergence: c.first, Spans: c.spans}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, want)
		}
	}
}

// naive is the rule read literally: offset by offset over max(len S, len R).
func naive(s, r []byte) []Span {
	n := max(len(s), len(r))
	spans := []Span{}
	for i := 0; i < n; i++ {
		differ := i >= len(s) || i >= len(r) || s[i] != r[i]
		if !differ {
			continue
		}
		if k := len(spans); k > 0 && spans[k-1].Start+spans[k-1].Length == i {
			spans[k-1].Length++
		} else {
			spans = append(spans, Span{Start: i, Length: 1})
		}
	}
	return spans
}

func FuzzCompareMatchesLiteralRule(f *testing.F) {
	f.Add([]byte("abcd"), []byte("aXcdef"))
	f.Add([]byte{}, []byte{0})
	f.Fuzz(func(t *testing.T, s, r []byte) {
		got := Compare(s, r)
		want := naive(s, r)
		if !reflect.DeepEqual(got.Spans, want) {
			t.Fatalf("spans %v, literal rule %v", got.Spans, want)
		}
		if got.ByteEqual != bytes.Equal(s, r) {
			t.Fatalf("byte_equal %v", got.ByteEqual)
		}
		if !got.ByteEqual && got.FirstDivergence != want[0].Start {
			t.Fatalf("first %d", got.FirstDivergence)
		}
	})
}

func TestParseRefusalsInListedOrder(t *testing.T) {
	many := make([]any, 1025)
	for i := range many {
		many[i] = ""
	}
	manyWithNumber := append([]any{}, many...)
	manyWithNumber[1024] = 7
	big := strings.Repeat("A", 87384)
	cases := []struct {
		name  string
		body  []byte
		code  sdk.RefusalCode
		facts map[string]any
	}{
		{"not json", []byte(`{`), CodeBodyNotObject, nil},
		{"array", []byte(`[]`), CodeBodyNotObject, nil},
		{"null", []byte(`null`), CodeBodyNotObject, nil},
		{"trailing data", []byte(`{} {}`), CodeBodyNotObject, nil},
		{"invalid utf-8", []byte("{\"x\":\"\xff\"}"), CodeBodyNotObject, nil},
		{"streamed missing", []byte(`{"reference_output":{"chunks":[]}}`), CodeStreamedRequired, nil},
		{"streamed null", []byte(`{"streamed_capture":null,"reference_output":{"chunks":[]}}`), CodeStreamedRequired, nil},
		{"reference array", []byte(`{"streamed_capture":{"chunks":[]},"reference_output":[]}`), CodeReferenceRequired, nil},
		// an earlier rule on reference_output beats a later rule on streamed_capture
		{"order across sides", []byte(`{"streamed_capture":{"chunks":["Q"]}}`), CodeReferenceRequired, nil},
		{"chunks missing", []byte(`{"streamed_capture":{},"reference_output":{"chunks":[]}}`), CodeChunksRequired, map[string]any{"artefact": Streamed}},
		{"chunks string", body([]any{}, "QQ=="), CodeChunksRequired, map[string]any{"artefact": Reference}},
		{"annex A-3 example", []byte(`{"streamed_capture":{"chunks":["QQ==","QQ"]},"reference_output":{"chunks":[1]}}`), CodeChunkNotString, map[string]any{"artefact": Reference, "chunk_index": 0}},
		{"chunk null", body([]any{"", nil}, []any{}), CodeChunkNotString, map[string]any{"artefact": Streamed, "chunk_index": 1}},
		{"1025 chunks one a number", body(manyWithNumber, []any{}), CodeChunkNotString, map[string]any{"artefact": Streamed, "chunk_index": 1024}},
		{"missing padding", body([]any{"QQ"}, []any{}), CodeChunkNotBase64, map[string]any{"artefact": Streamed, "chunk_index": 0}},
		{"url-safe", body([]any{}, []any{"", "-_-_"}), CodeChunkNotBase64, map[string]any{"artefact": Reference, "chunk_index": 1}},
		{"newline", body([]any{"QUJD\nREVG"}, []any{}), CodeChunkNotBase64, map[string]any{"artefact": Streamed, "chunk_index": 0}},
		{"crlf at end", body([]any{"QUJD\r\n"}, []any{}), CodeChunkNotBase64, map[string]any{"artefact": Streamed, "chunk_index": 0}},
		{"space", body([]any{"QU JD"}, []any{}), CodeChunkNotBase64, map[string]any{"artefact": Streamed, "chunk_index": 0}},
		{"nonzero pad bits", body([]any{"QR=="}, []any{}), CodeChunkNotBase64, map[string]any{"artefact": Streamed, "chunk_index": 0}},
		{"padding alone", body([]any{"===="}, []any{}), CodeChunkNotBase64, map[string]any{"artefact": Streamed, "chunk_index": 0}},
		{"1025 chunks", body([]any{}, many), CodeChunkCountCap, map[string]any{"artefact": Reference, "cap": 1024, "chunk_count": 1025}},
		{"chunk 65537", body([]any{"", big[:87384-4] + "AAA="}, []any{}), CodeChunkBytesCap, map[string]any{"artefact": Streamed, "chunk_index": 1, "cap": 65536, "byte_length": 65537}},
		{"artefact 65537", body([]any{}, []any{big[:87380], "AAA="}), CodeArtefactBytesCap, map[string]any{"artefact": Reference, "cap": 65536, "byte_length": 65537}},
	}
	for _, c := range cases {
		_, ref := Parse(c.body)
		if ref == nil {
			t.Errorf("%s: accepted, want %s", c.name, c.code)
			continue
		}
		if ref.Code != c.code || ref.Message != messages[c.code] || ref.Message == "" {
			t.Errorf("%s: got %s %q, want %s", c.name, ref.Code, ref.Message, c.code)
		}
		if fmt.Sprint(ref.Facts) != fmt.Sprint(c.facts) {
			t.Errorf("%s: facts %v, want %v", c.name, ref.Facts, c.facts)
		}
	}
}

func TestParseAcceptsTheExactCaps(t *testing.T) {
	exact := make([]any, 1024)
	for i := range exact {
		exact[i] = ""
	}
	full := strings.Repeat("A", 87380) + "AA==" // 65535 + 1 bytes
	for name, b := range map[string][]byte{
		"1024 chunks":      body(exact, []any{}),
		"65536-byte chunk": body([]any{full}, []any{full[:43688], full[:43688]}),
	} {
		sub, ref := Parse(b)
		if ref != nil {
			t.Errorf("%s: refused %s", name, ref.Code)
			continue
		}
		if name == "65536-byte chunk" && (len(sub.Streamed.Bytes) != 65536 || len(sub.Reference.Bytes) != 65532 || sub.Reference.ChunkCount != 2) {
			t.Errorf("%s: lengths %d %d", name, len(sub.Streamed.Bytes), len(sub.Reference.Bytes))
		}
	}
}

func TestParseIgnoresUnknownMembers(t *testing.T) {
	b := []byte(`{"x":1,"caller":"abc","streamed_capture":{"chunks":["` + b64("hi") + `"],"y":[]},"reference_output":{"chunks":[]}}`)
	sub, ref := Parse(b)
	if ref != nil {
		t.Fatalf("refused %s", ref.Code)
	}
	if string(sub.Streamed.Bytes) != "hi" || sub.Reference.ChunkCount != 0 {
		t.Errorf("got %+v", sub)
	}
}

func TestReportAndLedgerLine(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	req := sdk.Request{Route: sdk.Op, Op: "compare", Body: body([]any{b64("ab"), b64("cd")}, []any{b64("aXcdef")})}
	checked := f.Check(context.Background(), req)
	if checked.Outcome() != sdk.Accepted || !checked.Measures() || checked.Body() != nil {
		t.Fatalf("check: %+v", checked)
	}
	at := time.Date(2026, 11, 29, 15, 47, 22, 500, time.UTC)
	rep, err := checked.Measure(context.Background(), func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(rep.Body)
	var m map[string]any
	_ = json.Unmarshal(got, &m)
	wantLine := "STREAM-CAPTURE DIVERGENCE — byte-equal: NO · streamed chunks: 2 · reference chunks: 1 · first divergence: 1 · differing spans: 2 — 2026-11-29T15:47:22Z"
	if m["verdict_line"] != wantLine {
		t.Errorf("verdict line %q", m["verdict_line"])
	}
	fd, _ := json.Marshal(m["first_divergence"])
	sp, _ := json.Marshal(m["differing_spans"])
	if string(fd) != `{"offset":1,"state":"OFFSET"}` || string(sp) != `[{"length":1,"start":1},{"length":2,"start":4}]` {
		t.Errorf("facts %s %s", fd, sp)
	}
	if m["scope_text"] != "The report does not establish which output is correct, nor why they diverged." {
		t.Errorf("scope text %q", m["scope_text"])
	}
	for _, k := range []string{"honesty_line", "no_live_line"} {
		if s, _ := m[k].(string); len(s) < 40 {
			t.Errorf("%s missing", k)
		}
	}
	if rep.Ledger["verdict_line"] != strings.Replace(wantLine, "first divergence: 1", "first divergence: OFFSET", 1) || rep.Ledger["byte_equal"] != false || rep.Ledger["op"] != "compare" {
		t.Errorf("ledger %v", rep.Ledger)
	}
	if !rep.CheckEnd.Equal(at) {
		t.Errorf("check end %v", rep.CheckEnd)
	}
}

func TestPrecheckRunsNoComparison(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Precheck, Body: body([]any{b64("abc")}, []any{b64("ab"), b64("d")})})
	got, _ := json.Marshal(c.Body())
	want := `{"assessable":true,"streamed_capture":{"chunk_count":1,"byte_length":3},"reference_output":{"chunk_count":2,"byte_length":3}}`
	if string(got) != want || c.Measures() {
		t.Errorf("precheck %s", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(body([]any{b64("abc")}, []any{b64("abd")}))
	f.Add([]byte(`{"streamed_capture":{"chunks":["QQ==","QQ"]},"reference_output":{"chunks":[1]}}`))
	f.Add([]byte(`{"streamed_capture":{"chunks":[]},"reference_output":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"streamed_capture":{"chunks":["QR=="]},"reference_output":{"chunks":[""]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sub, ref := Parse(b)
		if (sub == nil) == (ref == nil) {
			t.Fatal("exactly one of submission and refusal")
		}
		if ref != nil {
			if messages[ref.Code] == "" || ref.Message != messages[ref.Code] {
				t.Fatalf("unknown code %q", ref.Code)
			}
			for k, v := range ref.Facts {
				switch v.(type) {
				case int:
				case string:
					if v != Streamed && v != Reference {
						t.Fatalf("fact %s carries a non-published string", k)
					}
				default:
					t.Fatalf("fact %s has type %T", k, v)
				}
			}
			return
		}
		for _, a := range []Artefact{sub.Streamed, sub.Reference} {
			if a.ChunkCount > ChunksPerArtefact || len(a.Bytes) > ArtefactBytes {
				t.Fatal("accepted over a cap")
			}
		}
	})
}

// BenchmarkMaxSizeCompare is the engine alone at the caps: parse, compare
// and render two 64 KiB artefacts of 1,024 chunks each that differ at every
// other byte.
func BenchmarkMaxSizeCompare(b *testing.B) {
	chunks := func(flip bool) []any {
		out := make([]any, 1024)
		for i := range out {
			c := make([]byte, 64)
			for j := range c {
				c[j] = byte(i + j)
				if flip && j%2 == 1 {
					c[j] ^= 0xff
				}
			}
			out[i] = base64.StdEncoding.EncodeToString(c)
		}
		return out
	}
	raw := body(chunks(false), chunks(true))
	f, err := New()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "compare", Body: raw})
		rep, err := c.Measure(context.Background(), time.Now)
		if err != nil || len(rep.Body.(reportBody).DifferingSpans) != 32768 {
			b.Fatal("unexpected report")
		}
	}
}
