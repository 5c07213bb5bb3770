package sdk

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func TestLocateValues(t *testing.T) {
	doc := []byte(` {"a": [1, "x\"y", {"b": null}], "s": "plain é", "a": true, "e\u0073c": -2.5e3} `)
	d, err := Locate(doc)
	if err != nil {
		t.Fatal(err)
	}
	root := d.Root()
	if root.Kind != '{' || root.Len() != 4 || string(root.Raw()) != string(doc[1:len(doc)-1]) {
		t.Fatalf("root %c, %d members", root.Kind, root.Len())
	}
	if a, _ := root.Get("a"); a.Kind != 't' { // the last duplicate wins
		t.Errorf("a: %c", a.Kind)
	}
	if esc, ok := root.Get("esc"); !ok || esc.Kind != '0' || string(esc.Raw()) != "-2.5e3" {
		t.Errorf("escaped member name: %v %q", ok, esc.Raw())
	}
	var names []string
	var first Value
	for k, v := range root.Members() {
		n, _ := k.String()
		names = append(names, n)
		if first.Kind == 0 {
			first = v
		}
	}
	if strings.Join(names, ",") != "a,s,a,esc" {
		t.Errorf("members %v", names)
	}
	var elems []Value
	for e := range first.Elems() {
		elems = append(elems, e)
	}
	if first.Kind != '[' || len(elems) != 3 || elems[0].Kind != '0' || string(elems[1].Raw()) != `"x\"y"` || elems[2].Kind != '{' {
		t.Fatalf("array %c %d", first.Kind, len(elems))
	}
	if s, ok := elems[1].String(); !ok || s != `x"y` {
		t.Errorf("decoded %q", s)
	}
	if b, ok := elems[2].Get("b"); !ok || b.Kind != 'n' {
		t.Errorf("nested null: %v %c", ok, b.Kind)
	}
	if _, ok := elems[1].TextSpan(); ok {
		t.Error("an escaped string has no text span")
	}
	s, _ := root.Get("s")
	span, ok := s.TextSpan()
	if !ok || string(doc[span.GetOffset():span.GetOffset()+span.GetLength()]) != "plain é" {
		t.Errorf("span %v", span)
	}
	// no value: every reader answers nothing
	var none Value
	if _, ok := none.Get("a"); ok || none.Len() != 0 || none.Raw() != nil || none.Is("") {
		t.Error("the zero value answered")
	}
	if _, ok := s.Get("a"); ok || s.Len() != 0 {
		t.Error("a string has no members")
	}
	for _, bad := range []string{`{"a":`, `[1,]`, `{"a" 1}`, `"x`, `1 2`, ``, `[` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth+1)} {
		if _, err := Locate([]byte(bad)); err == nil {
			t.Errorf("invalid JSON %.20q located", bad)
		}
	}
	for _, scalar := range []string{`7`, ` "x" `, `null`} {
		d, err := Locate([]byte(scalar))
		if err != nil || string(d.Root().Raw()) != strings.TrimSpace(scalar) {
			t.Errorf("scalar document %q: %v", scalar, err)
		}
	}
}

// Values walked in and out of large containers and past skipped subtrees
// land on their own bytes: every string and number of a document of
// nested arrays and objects is found where it stands.
func TestLocateWalksPastSubtrees(t *testing.T) {
	ints := func(n, from int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = strconv.Itoa(from + i)
		}
		return strings.Join(parts, ",")
	}
	const n = 50000
	doc := []byte(`[[` + ints(n, 0) + `],["s",{}],{"a":[` + ints(n, n) + `],"b":{"c":[[],{"d":"e"},` + ints(10, 5*n) + `]},"d":3},[` + ints(n, 9*n) + `]]`)
	d, err := Locate(doc)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, arr Value, count, from int) {
		t.Helper()
		i := 0
		for e := range arr.Elems() {
			if got := string(e.Raw()); e.Kind != '0' || got != strconv.Itoa(from+i) {
				t.Fatalf("%s[%d] = %q (kind %q), want %d", what, i, got, e.Kind, from+i)
			}
			i++
		}
		if arr.Kind != '[' || i != count {
			t.Fatalf("%s: kind %q, %d elements, want %d", what, arr.Kind, i, count)
		}
	}
	var top []Value
	for e := range d.Root().Elems() {
		top = append(top, e)
	}
	if len(top) != 4 {
		t.Fatalf("%d top elements", len(top))
	}
	check("first", top[0], n, 0)
	var second []string
	for e := range top[1].Elems() {
		second = append(second, string(e.Raw()))
	}
	if strings.Join(second, " ") != `"s" {}` {
		t.Errorf("second: %v", second)
	}
	a, _ := top[2].Get("a")
	check("a", a, n, n)
	b, _ := top[2].Get("b")
	c, _ := b.Get("c")
	if c.Len() != 12 {
		t.Fatalf("c has %d elements", c.Len())
	}
	i := 0
	for e := range c.Elems() {
		if i == 1 {
			if v, _ := e.Get("d"); !v.Is("e") {
				t.Errorf("c[1].d = %q", v.Raw())
			}
		}
		if i >= 2 && string(e.Raw()) != strconv.Itoa(5*n+i-2) {
			t.Errorf("c[%d] = %q", i, e.Raw())
		}
		i++
	}
	if v, _ := top[2].Get("d"); string(v.Raw()) != "3" || top[2].Len() != 3 {
		t.Fatalf("object members %d, d %q", top[2].Len(), v.Raw())
	}
	check("last", top[3], n, 9*n)
	// only strings (member names included) and containers are recorded:
	// 11 containers and 7 strings
	if len(d.tape) != 18 {
		t.Errorf("tape of %d entries, want 18 (the strings and containers)", len(d.tape))
	}
}

func TestResolveTextSpansChecksBoundsAndUTF8(t *testing.T) {
	record := []byte("{\"t\":\"ok text\",\"q\":\"\xe9\xff\"}")
	block := func(off, n uint64) *pb.SessionRecord {
		return &pb.SessionRecord{Messages: []*pb.Message{{Blocks: []*pb.Block{{TextSpan: &pb.Span{Offset: off, Length: n}}}}}}
	}
	good := block(6, 7)
	if err := ResolveTextSpans(good, record); err != nil || good.GetMessages()[0].GetBlocks()[0].GetText() != "ok text" {
		t.Fatalf("%v %v", err, good)
	}
	if text := good.GetMessages()[0].GetBlocks()[0].GetText(); unsafe.StringData(text) != &record[6] {
		t.Error("the text was copied out of the record")
	}
	// 20,2 is the invalid UTF-8; the others lie outside the record
	for _, bad := range []*pb.SessionRecord{block(20, 2), block(20, 100), block(1<<62, 1), block(27, 1)} {
		if err := ResolveTextSpans(bad, record); err == nil {
			t.Errorf("span %v resolved", bad.GetMessages()[0].GetBlocks()[0].GetTextSpan())
		}
	}
}

// Is agrees with String on every name: escaped, invalid UTF-8 (decoded to
// U+FFFD, as encoding/json does), surrogates, long ones.
func TestIsAgreesWithString(t *testing.T) {
	long := strings.Repeat(`\u0061`, 40)
	doc := []byte(`{"plain":1,"r\u006fle":2,"` + "\xff" + `":3,"\ud83d\ude00":4,"\ud800":5,"` + long + `":6}`)
	d, err := Locate(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"plain", "role", "\ufffd", "😀", "\ufffd", strings.Repeat("a", 40)}
	i := 0
	for k := range d.Root().Members() {
		s, ok := k.String()
		if !ok || s != want[i] || !k.Is(s) || k.Is(s+"x") || k.Is("\xff") {
			t.Errorf("name %d: %q %v; Is(own text) %v", i, s, ok, k.Is(s))
		}
		i++
	}
	if v, ok := d.Root().Get("\ufffd"); !ok || string(v.Raw()) != "5" {
		t.Errorf("Get by decoded name: %v %q", ok, v.Raw())
	}
}

// StringOf decodes every string encoding/json accepts to the same text,
// and refuses what it refuses.
func FuzzStringOf(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\n"`, `"\ud83d\ude00"`, `"\ud800x"`, `"\udc00\ud800"`, "\"\xff\xfe\"", `"\u"`, `"\q"`, `"a\"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // StringOf's callers have validated their JSON
		}
		var want string
		wantOK := json.Unmarshal(raw, &want) == nil
		got, ok := StringOf(raw)
		if ok != wantOK || got != want {
			t.Fatalf("%q: StringOf %q %v, encoding/json %q %v", raw, got, ok, want, wantOK)
		}
	})
}

// A json_string span resolves to the string's text as encoding/json
// decodes it, and only when it is exactly a JSON string's contents.
func TestJSONStringSpans(t *testing.T) {
	record := []byte("{\"a\":\"x\\n\\u00e9\\ud83d\\ude00\\ud800\xff\",\"b\":\"plain\",\"c\":5}")
	block := func(off, n uint64) *pb.SessionRecord {
		return &pb.SessionRecord{Messages: []*pb.Message{{Blocks: []*pb.Block{{TextSpan: &pb.Span{Offset: off, Length: n, JsonString: true}}}}}}
	}
	var want struct{ A, B string }
	if err := json.Unmarshal(record, &want); err != nil {
		t.Fatal(err)
	}
	a := strings.Index(string(record), `x\n`)
	aEnd := strings.Index(string(record), `","b"`)
	b := strings.Index(string(record), "plain")
	for _, c := range []struct {
		off, n int
		want   string
	}{{a, aEnd - a, want.A}, {b, 5, want.B}} {
		rec := block(uint64(c.off), uint64(c.n))
		if err := ResolveTextSpans(rec, record); err != nil || rec.GetMessages()[0].GetBlocks()[0].GetText() != c.want {
			t.Errorf("span %d+%d: %v %q, want %q", c.off, c.n, err, rec.GetMessages()[0].GetBlocks()[0].GetText(), c.want)
		}
	}
	// a plain string's text is the record's bytes, not a copy
	rec := block(uint64(b), 5)
	_ = ResolveTextSpans(rec, record)
	if unsafe.StringData(rec.GetMessages()[0].GetBlocks()[0].GetText()) != &record[b] {
		t.Error("a plain json_string span was copied")
	}
	// the same span twice covers more than the record; as a plain span
	// (no decoding) it may repeat
	twice := &pb.SessionRecord{Messages: []*pb.Message{{Blocks: []*pb.Block{
		{TextSpan: &pb.Span{Offset: uint64(a), Length: uint64(aEnd - a), JsonString: true}},
		{TextSpan: &pb.Span{Offset: uint64(a), Length: uint64(aEnd - a), JsonString: true}},
		{TextSpan: &pb.Span{Offset: uint64(b), Length: 5, JsonString: true}}}}}}
	if err := ResolveTextSpans(twice, record); !errors.Is(err, ErrSpanCover) {
		t.Errorf("json_string spans covering %d bytes of a %d-byte record: %v", 2*(aEnd-a)+5, len(record), err)
	}
	plainTwice := &pb.SessionRecord{Messages: []*pb.Message{{Blocks: []*pb.Block{
		{TextSpan: &pb.Span{Offset: uint64(b), Length: 5}}, {TextSpan: &pb.Span{Offset: uint64(b), Length: 5}}}}}}
	if err := ResolveTextSpans(plainTwice, record); err != nil {
		t.Errorf("a plain span twice: %v", err)
	}
	// short of the closing quote, past it, from the opening quote, a
	// number, the record's edges
	for _, bad := range [][2]int{{a, aEnd - a - 1}, {a, aEnd - a + 1}, {a - 1, aEnd - a + 1}, {b + 1, 4}, {len(record) - 2, 1}, {0, 1}, {len(record), 0}} {
		if err := ResolveTextSpans(block(uint64(bad[0]), uint64(bad[1])), record); err == nil {
			t.Errorf("json_string span %d+%d resolved", bad[0], bad[1])
		}
	}
}

// Every string of any JSON document goes back as a span with
// TextSpanFor(true) and resolves to its text (String); TextSpanFor(false)
// is TextSpan. Pick agrees with Get for every object.
func FuzzSpansAndPick(f *testing.F) {
	for _, s := range []string{`{"a":"x\ny","b":["\u00e9",{"a":1,"a":"2"}]}`, "[\"\xff\",\"\\ud800\",\"\"]", `{"r\u006fle":"user","role":"tool"}`} {
		f.Add([]byte(s))
	}
	names := []string{"a", "b", "role", "\ufffd", ""}
	f.Fuzz(func(t *testing.T, doc []byte) {
		d, err := Locate(doc)
		if err != nil {
			return
		}
		var blocks []*pb.Block
		var want []string
		var walk func(v Value)
		walk = func(v Value) {
			switch v.Kind {
			case '"':
				span, ok := v.TextSpanFor(true)
				s, _ := v.String()
				if !ok {
					t.Fatalf("no span for string %q", v.Raw())
				}
				if plain, ok := v.TextSpan(); ok != !span.GetJsonString() || ok && (plain.GetOffset() != span.GetOffset() || plain.GetLength() != span.GetLength()) {
					t.Fatalf("TextSpan %v and TextSpanFor(true) %v disagree", plain, span)
				}
				blocks = append(blocks, &pb.Block{TextSpan: span})
				want = append(want, s)
			case '{':
				picked := make([]Value, len(names))
				v.Pick(names, picked)
				for i, n := range names {
					g, ok := v.Get(n)
					if ok != (picked[i].Kind != 0) || g.Start != picked[i].Start || g.End != picked[i].End {
						t.Fatalf("Pick(%q) %v, Get %v %v", n, picked[i].Raw(), g.Raw(), ok)
					}
				}
				for k, m := range v.Members() {
					walk(k)
					walk(m)
				}
			case '[':
				for e := range v.Elems() {
					walk(e)
				}
			}
		}
		walk(d.Root())
		rec := &pb.SessionRecord{Messages: []*pb.Message{{Blocks: blocks}}}
		if err := ResolveTextSpans(rec, doc); err != nil {
			t.Fatal(err)
		}
		for i, b := range blocks {
			if b.GetText() != want[i] {
				t.Fatalf("string %d: %q, want %q", i, b.GetText(), want[i])
			}
		}
	})
}
