package realistic

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The tests read the records back the way the criteria and the ANNEX
// describe (C-8 adapters, C-5 census, M08/M09 normalisation), with helpers
// of their own rather than the generator's, and assert facts of the output.

const benchSize = 5 << 20 // the size the benchmark asks for

// benchOnce holds each format's 5 MiB record, built once for all checks.
var benchOnce sync.Map // format -> *benchRec

type benchRec struct {
	once sync.Once
	body []byte
	err  error
}

func benchRecord(t *testing.T, f string) []byte {
	t.Helper()
	v, _ := benchOnce.LoadOrStore(f, &benchRec{})
	br := v.(*benchRec)
	br.once.Do(func() { br.body, br.err = Record(f, benchSize, 1) })
	if br.err != nil {
		t.Fatalf("Record(%q, %d, 1): %v", f, benchSize, br.err)
	}
	return br.body
}

// ---- a small adapter, after ANNEX C-8 -------------------------------

type tBlock struct {
	text *string // nil: non-serialisable
	msg  int     // message index; -1 for a schema block
}

type tRecord struct {
	blocks      []tBlock
	messages    int
	stated      map[int]int64 // message index -> stated figure
	statedBytes int           // harness_stated_counts as submitted
	declared    string
	envelope    string
}

func sp(s string) *string { return &s }

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("decode: %v", err)
	}
}

// jcs re-serialises a decoded value with sorted keys and no HTML escaping:
// RFC 8785 for ASCII keys and integer or short decimal numbers.
func jcs(t *testing.T, v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		t.Fatalf("jcs: %v", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func adapt(t *testing.T, body []byte) tRecord {
	t.Helper()
	var env struct {
		Version string          `json:"envelope_version"`
		Format  string          `json:"declared_format_id"`
		Record  json.RawMessage `json:"record"`
		Stated  json.RawMessage `json:"harness_stated_counts"`
	}
	decode(t, body, &env)
	r := tRecord{declared: env.Format, envelope: env.Version, stated: map[int]int64{}, statedBytes: len(env.Stated)}
	switch env.Format {
	case "letta-af":
		adaptLetta(t, env.Record, &r)
	case "anthropic-messages":
		adaptAnthropic(t, env.Record, &r)
	case "generic-message-list":
		adaptGeneric(t, env.Record, &r)
	default:
		t.Fatalf("declared_format_id %q", env.Format)
	}
	if len(env.Stated) > 0 {
		var hc struct {
			PerMessage []*json.Number `json:"per_message"`
			Total      *json.Number   `json:"total"`
		}
		decode(t, env.Stated, &hc)
		for i, n := range hc.PerMessage {
			if n == nil || i >= r.messages {
				continue
			}
			v, err := n.Int64()
			if err != nil || v < 0 {
				t.Fatalf("per_message[%d] = %v is not a valid stated count", i, n)
			}
			r.stated[i] = v
		}
	}
	return r
}

func adaptLetta(t *testing.T, raw json.RawMessage, r *tRecord) {
	type msg struct {
		ID      string `json:"id"`
		Content []struct {
			Text *string `json:"text"`
		} `json:"content"`
		ToolCalls []struct {
			Function struct {
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolReturns []struct {
			FuncResponse *string `json:"func_response"`
		} `json:"tool_returns"`
	}
	var rec struct {
		Agents []struct {
			ToolIDs   []string `json:"tool_ids"`
			InContext []string `json:"in_context_message_ids"`
			Messages  []msg    `json:"messages"`
		} `json:"agents"`
		Tools []struct {
			ID     string          `json:"id"`
			Schema json.RawMessage `json:"json_schema"`
		} `json:"tools"`
	}
	decode(t, raw, &rec)
	if len(rec.Agents) != 1 {
		t.Fatalf("letta-af: %d agents, want exactly one (ANNEX C-2 R-4)", len(rec.Agents))
	}
	a := rec.Agents[0]
	schemas := map[string]json.RawMessage{}
	for _, tl := range rec.Tools {
		schemas[tl.ID] = tl.Schema
	}
	for _, id := range a.ToolIDs {
		var c bytes.Buffer
		if err := json.Compact(&c, schemas[id]); err != nil {
			t.Fatalf("tool %s json_schema: %v", id, err)
		}
		r.blocks = append(r.blocks, tBlock{text: sp(c.String()), msg: -1})
	}
	byID := map[string]*msg{}
	for k := range a.Messages {
		byID[a.Messages[k].ID] = &a.Messages[k]
	}
	for i, id := range a.InContext {
		m, ok := byID[id]
		if !ok {
			t.Fatalf("in_context_message_ids names %q, which is not a message", id)
		}
		texts := map[string]bool{}
		for _, p := range m.Content {
			// A part without a string text member is non-serialisable.
			r.blocks = append(r.blocks, tBlock{text: p.Text, msg: i})
			if p.Text != nil {
				texts[*p.Text] = true
			}
		}
		for _, c := range m.ToolCalls {
			r.blocks = append(r.blocks, tBlock{text: sp(c.Function.Arguments), msg: i})
		}
		for _, tr := range m.ToolReturns {
			if tr.FuncResponse != nil && !texts[*tr.FuncResponse] {
				r.blocks = append(r.blocks, tBlock{text: tr.FuncResponse, msg: i})
			}
		}
	}
	r.messages = len(a.InContext)
}

func adaptAnthropic(t *testing.T, raw json.RawMessage, r *tRecord) {
	var rec struct {
		System   any `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	decode(t, raw, &rec)
	add := func(s *string) { r.blocks = append(r.blocks, tBlock{text: s, msg: r.messages}) }
	textOf := func(x map[string]any, k string) *string {
		if s, ok := x[k].(string); ok {
			return &s
		}
		return nil
	}
	switch s := rec.System.(type) {
	case string:
		add(&s)
		r.messages++
	case []any:
		for _, b := range s {
			add(textOf(b.(map[string]any), "text"))
		}
		r.messages++
	}
	for _, m := range rec.Messages {
		switch c := m.Content.(type) {
		case string:
			add(&c)
		case []any:
			for _, x := range c {
				b := x.(map[string]any)
				switch b["type"] {
				case "text":
					add(textOf(b, "text"))
				case "thinking":
					add(textOf(b, "thinking"))
				case "tool_use", "server_tool_use":
					add(sp(jcs(t, b["input"])))
				case "tool_result":
					switch rc := b["content"].(type) {
					case string:
						add(&rc)
					case []any:
						if len(rc) == 0 {
							add(nil)
						}
						for _, p := range rc {
							add(textOf(p.(map[string]any), "text"))
						}
					default:
						add(nil)
					}
				default:
					add(textOf(b, "text"))
				}
			}
		default:
			t.Fatalf("anthropic message content of type %T", m.Content)
		}
		r.messages++
	}
}

func adaptGeneric(t *testing.T, raw json.RawMessage, r *tRecord) {
	var rec struct {
		Messages []struct {
			Role   *string      `json:"role"`
			Text   *string      `json:"text"`
			Stated *json.Number `json:"stated_tokens"`
		} `json:"messages"`
		Schemas []struct {
			Text string `json:"text"`
		} `json:"tool_schemas"`
	}
	decode(t, raw, &rec)
	for _, s := range rec.Schemas {
		r.blocks = append(r.blocks, tBlock{text: sp(s.Text), msg: -1})
	}
	for i, m := range rec.Messages {
		if m.Role == nil {
			t.Fatalf("generic message %d has no role", i)
		}
		r.blocks = append(r.blocks, tBlock{text: m.Text, msg: i})
		if m.Stated != nil {
			v, err := m.Stated.Int64()
			if err != nil || v < 0 {
				t.Fatalf("stated_tokens %v", m.Stated)
			}
			r.stated[i] = v
		}
	}
	r.messages = len(rec.Messages)
}

// ---- M08 / M09 / M10 helpers, written from the criteria text ----------

func norm(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	// unicode.IsSpace is the Unicode White_Space property (ANNEX C-12).
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// tokens3 is a block's word 3-grams (hashed, duplicates possible).
func tokens3(s string) []uint64 {
	var toks []uint64
	for _, w := range strings.Split(strings.ToLower(norm(s)), " ") {
		w = strings.Trim(w, ".,;:!?()[]{}\"'`\u2018\u2019\u201c\u201d")
		if w != "" {
			toks = append(toks, fnv64(w))
		}
	}
	if len(toks) < 3 {
		return nil
	}
	out := make([]uint64, 0, len(toks)-2)
	for i := 0; i+2 < len(toks); i++ {
		out = append(out, fnv64(string([]byte{byte(toks[i]), byte(toks[i] >> 8), byte(toks[i] >> 16), byte(toks[i] >> 24),
			byte(toks[i] >> 32), byte(toks[i] >> 40), byte(toks[i] >> 48), byte(toks[i] >> 56)}))^toks[i+1]*31^toks[i+2]*961)
	}
	return out
}

// nearPairs is an exact similarity join (prefix filtering on the rarest
// shingles) at Jaccard ≥ lo; it returns the pairs at ≥ 0.80 (decided as
// 5·I ≥ 4·U) and the pairs in [lo, 0.80), both excluding blocks whose
// normalised texts are equal (those are M08's).
func nearPairs(texts []string, lo float64) (above, below int) {
	ids := map[uint64]int32{}
	var freq []int32
	sets := make([][]int32, len(texts))
	for i, s := range texts {
		for _, h := range tokens3(s) {
			id, ok := ids[h]
			if !ok {
				id = int32(len(freq))
				ids[h] = id
				freq = append(freq, 0)
			}
			sets[i] = append(sets[i], id)
		}
		slices.Sort(sets[i])
		sets[i] = slices.Compact(sets[i])
		for _, id := range sets[i] {
			freq[id]++
		}
	}
	order := make([]int32, len(freq))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(freq[a], freq[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	rank := make([]int32, len(freq))
	for r, id := range order {
		rank[id] = int32(r)
	}
	for _, s := range sets {
		for k := range s {
			s[k] = rank[s[k]]
		}
		slices.Sort(s)
	}
	normed := make([]string, len(texts))
	for i, s := range texts {
		normed[i] = norm(s)
	}
	index := make([][]int32, len(freq))
	seen := make([]int, len(texts))
	for i, a := range sets {
		if len(a) == 0 {
			continue
		}
		p := min(len(a)-int(lo*float64(len(a)))+1, len(a))
		for _, r := range a[:p] {
			for _, j := range index[r] {
				if seen[j] == i+1 {
					continue
				}
				seen[j] = i + 1
				b := sets[j]
				if float64(min(len(a), len(b))) < lo*float64(max(len(a), len(b))) || normed[i] == normed[j] {
					continue
				}
				inter := 0
				for x, y := 0, 0; x < len(a) && y < len(b); {
					switch {
					case a[x] == b[y]:
						inter++
						x++
						y++
					case a[x] < b[y]:
						x++
					default:
						y++
					}
				}
				union := len(a) + len(b) - inter
				switch {
				case 5*inter >= 4*union:
					above++
				case float64(inter) >= lo*float64(union):
					below++
				}
			}
			index[r] = append(index[r], int32(i))
		}
	}
	return above, below
}

// census counts qualifying base64 segments under ANNEX C-5: maximal runs
// of one alphabet plus at most two '=', length ≥ 40 and a multiple of 4,
// strict decoding to ≥ 30 bytes.
func census(s string) (std, url int) {
	isAl := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
	}
	i := 0
	for i < len(s) {
		c := s[i]
		if !isAl(c) && c != '+' && c != '/' && c != '-' && c != '_' {
			i++
			continue
		}
		kind := 0 // 0 undecided, 1 standard, 2 url-safe
		j := i
		for j < len(s) {
			c := s[j]
			switch {
			case isAl(c):
			case (c == '+' || c == '/') && kind != 2:
				kind = 1
			case (c == '-' || c == '_') && kind != 1:
				kind = 2
			default:
				goto done
			}
			j++
		}
	done:
		end := j
		for k := 0; k < 2 && end < len(s) && s[end] == '='; k++ {
			end++
		}
		seg := s[i:end]
		if len(seg) >= 40 && len(seg)%4 == 0 {
			enc := base64.StdEncoding.Strict()
			if kind == 2 {
				enc = base64.URLEncoding.Strict()
			}
			if d, err := enc.DecodeString(seg); err == nil && len(d) >= 30 {
				if kind == 2 {
					url++
				} else {
					std++
				}
			}
		}
		if end == i {
			end++
		}
		i = end
	}
	return std, url
}

func isFenced(s string) bool {
	s = strings.Trim(s, " \t\r\n")
	lines := strings.Split(s, "\n")
	return len(lines) >= 2 && strings.HasPrefix(lines[0], "```") && !strings.Contains(lines[0][3:], "`") && lines[len(lines)-1] == "```"
}

func em1Test(s string) int64 { return int64((utf8.RuneCountInString(s) + 3) / 4) }

// ---- facts ------------------------------------------------------------

type facts struct {
	blocks, sized, messages     int
	maxBlockBytes               int
	nearAbove, nearBelow        int
	exactGroups, exactExcess    int
	stdSegs, urlSegs            int
	fencedBlocks, fenceMentions int
	stated, within, disagree    int
	statedBytes                 int
}

func measure(t *testing.T, body []byte) (tRecord, facts) {
	r := adapt(t, body)
	var f facts
	f.blocks = len(r.blocks)
	f.messages = r.messages
	f.statedBytes = r.statedBytes
	var texts []string
	groups := map[string]int{}
	perMsg := make([]int64, r.messages)
	for _, b := range r.blocks {
		if b.text == nil {
			continue
		}
		s := *b.text
		f.sized++
		texts = append(texts, s)
		f.maxBlockBytes = max(f.maxBlockBytes, len(s))
		if n := norm(s); n != "" {
			groups[n]++
		}
		a, u := census(s)
		f.stdSegs += a
		f.urlSegs += u
		if isFenced(s) {
			f.fencedBlocks++
		}
		if strings.Contains(s, "\n```") || strings.HasPrefix(s, "```") {
			f.fenceMentions++
		}
		if b.msg >= 0 {
			perMsg[b.msg] += em1Test(s)
		}
	}
	for _, n := range groups {
		if n > 1 {
			f.exactGroups++
			f.exactExcess += n - 1
		}
	}
	f.nearAbove, f.nearBelow = nearPairs(texts, 0.7)
	for i, s := range r.stated {
		f.stated++
		e := perMsg[i]
		d := s - e
		if d < 0 {
			d = -d
		}
		if e > 0 && 20*d <= e {
			f.within++
		} else if !(e == 0 && s == 0) {
			f.disagree++
		}
	}
	return r, f
}

func TestBenchRecords(t *testing.T) {
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			body := benchRecord(t, f)
			if len(body) > benchSize || len(body)*50 < benchSize*49 {
				t.Fatalf("size %d, want within [0.98·%d, %d]", len(body), benchSize, benchSize)
			}
			if len(body) > BodyCap {
				t.Fatalf("body %d bytes over the criteria's body cap %d", len(body), BodyCap)
			}
			// json.Valid lets invalid UTF-8 through; the host refuses it
			if !json.Valid(body) || !utf8.Valid(body) {
				t.Fatal("body is not valid JSON in UTF-8")
			}
			r, x := measure(t, body)
			t.Logf("%s: %d bytes, %d messages, %d blocks (%d sized), largest block %d B, near pairs ≥0.80: %d, in [0.70,0.80): %d, exact groups %d (excess %d), base64 segments std %d url-safe %d, fenced blocks %d, stated %d (within %d, disagree %d), harness_stated_counts %d B",
				f, len(body), x.messages, x.blocks, x.sized, x.maxBlockBytes, x.nearAbove, x.nearBelow, x.exactGroups, x.exactExcess, x.stdSegs, x.urlSegs, x.fencedBlocks, x.stated, x.within, x.disagree, x.statedBytes)
			if r.envelope != "context-composition-envelope/1" || r.declared != f {
				t.Errorf("envelope %q / format %q", r.envelope, r.declared)
			}
			if x.blocks > EntryCap {
				t.Errorf("%d entries, over the entry cap %d", x.blocks, EntryCap)
			}
			if x.maxBlockBytes > EntryBytesCap {
				t.Errorf("a block of %d bytes, over the entry cap %d", x.maxBlockBytes, EntryBytesCap)
			}
			if x.statedBytes > StatedCountsCap {
				t.Errorf("harness_stated_counts is %d bytes, over its cap %d", x.statedBytes, StatedCountsCap)
			}
			if x.messages < 3000 {
				t.Errorf("only %d messages: not a long conversation", x.messages)
			}
			if x.nearAbove < 200 {
				t.Errorf("%d near-duplicate pairs at Jaccard ≥ 0.80, want at least 200", x.nearAbove)
			}
			if x.nearBelow < 50 {
				t.Errorf("%d pairs just below the threshold, want at least 50", x.nearBelow)
			}
			if x.exactGroups < 10 {
				t.Errorf("%d exact-duplicate groups, want at least 10", x.exactGroups)
			}
			if x.stdSegs == 0 || x.urlSegs == 0 {
				t.Errorf("base64 census: %d standard and %d URL-safe segments, want both", x.stdSegs, x.urlSegs)
			}
			if x.fencedBlocks == 0 || x.fenceMentions < 50 {
				t.Errorf("%d fenced-code blocks and %d blocks with fences", x.fencedBlocks, x.fenceMentions)
			}
			if x.stated < 100 || x.within == 0 || x.disagree == 0 {
				t.Errorf("stated counts: %d stated, %d within 5%%, %d disagreeing", x.stated, x.within, x.disagree)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	const size = 300 << 10
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			a, err := Record(f, size, 7)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Record(f, size, 7)
			c, _ := Record(f, size, 8)
			if !bytes.Equal(a, b) {
				t.Error("same format, size and seed gave different bytes")
			}
			if bytes.Equal(a, c) {
				t.Error("seeds 7 and 8 gave the same bytes")
			}
			for _, x := range [][]byte{a, c} {
				if len(x) > size || len(x)*50 < size*49 || !json.Valid(x) || !utf8.Valid(x) {
					t.Errorf("record of %d bytes (valid JSON: %v, UTF-8: %v) for size %d", len(x), json.Valid(x), utf8.Valid(x), size)
				}
			}
		})
	}
}

func TestFormatsDiffer(t *testing.T) {
	a, _ := Record(Formats[1], MinSize, 3)
	b, _ := Record(Formats[2], MinSize, 3)
	if bytes.Equal(a, b) {
		t.Fatal("two formats gave the same bytes")
	}
}

func TestSizes(t *testing.T) {
	for _, size := range []int{MinSize, 100001, 777777} {
		for _, f := range Formats {
			b, err := Record(f, size, uint64(size))
			if err != nil {
				t.Fatalf("%s at %d: %v", f, size, err)
			}
			if len(b) > size || len(b)*50 < size*49 {
				t.Errorf("%s: %d bytes for size %d", f, len(b), size)
			}
			r := adapt(t, b)
			if len(r.blocks) > EntryCap {
				t.Errorf("%s: %d entries", f, len(r.blocks))
			}
		}
	}
}

func TestRefusals(t *testing.T) {
	if _, err := Record("letta-af", BodyCap+1, 1); err == nil || !strings.Contains(err.Error(), "body cap") {
		t.Errorf("a size over the body cap: err = %v", err)
	}
	if _, err := Record("example-unknown-format-never-accepted", MinSize, 1); err == nil {
		t.Error("an unknown format was accepted")
	}
	if _, err := Record("letta-af", MinSize-1, 1); err == nil {
		t.Error("a size below the minimum was accepted")
	}
}

func TestVocabulary(t *testing.T) {
	// "A vocabulary of a few thousand distinct words": count the surface
	// forms the templates can write.
	if vocab.distinct < 3000 {
		t.Fatalf("%d distinct words", vocab.distinct)
	}
	for _, v := range vocab.verbs {
		if v.base == "" || v.s == "" || v.past == "" || v.pp == "" || v.ing == "" {
			t.Fatalf("incomplete forms %+v", v)
		}
	}
}

func BenchmarkRecord(b *testing.B) {
	for _, f := range Formats {
		b.Run(f, func(b *testing.B) {
			b.SetBytes(benchSize)
			for b.Loop() {
				if _, err := Record(f, benchSize, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
