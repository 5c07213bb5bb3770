package sdk

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// isCanonicalByDefinition: a document is canonical when it is valid JSON
// and CanonicalJSON of its decoding gives it back byte for byte.
func isCanonicalByDefinition(doc []byte) bool {
	if !ValidJSON(doc) {
		return false
	}
	tree, err := DecodeJSON(doc)
	if err != nil {
		return false
	}
	c, err := CanonicalJSON(tree)
	return err == nil && bytes.Equal(c, doc)
}

var canonicalSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1`, `-1`, `1.5`, `1.50`, `1e3`, `1000`, `1e21`, `1e+21`, `0.000001`, `1e-7`,
	`123456789012345`, `1234567890123456`, `12345678901234567890`, `01`, `-`, `1.`, `.5`, `-.5`, `1E3`,
	`true`, `false`, `null`, `nul`, ` {}`, `{} `, `{"a":1}`, `{"a": 1}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
	`{"a":1,"b":[1,2,{"c":null}]}`, `["\u001f","\u0008","\b","\t","\n","\f","\r","\u000b"]`, `"\u001F"`,
	`"\/"`, `"\u0041"`, `"A"`, `"\u2028"`, "\"\u2028\"", `"\"\\"`, "\"\xff\"", "\"\xed\xa0\x80\"",
	`{"\ud83d\ude00":1,"\uffff":2}`, "{\"\U0001F600\":1,\"\uffff\":2}", "{\"\uffff\":2,\"\U0001F600\":1}",
	`{"a\n":1,"a":2}`, `{"a":1,"a\n":2}`, `[1,]`, `[,1]`, `{"a":}`, `{"a"1}`, `[1 ,2]`,
	"\"0123456789abcdefghij\u00e9klmnopqrstuvwxyz\"",
}

func TestIsCanonicalJSONIsTheDefinition(t *testing.T) {
	for _, s := range canonicalSeeds {
		if got, want := IsCanonicalJSON([]byte(s)), isCanonicalByDefinition([]byte(s)); got != want {
			t.Errorf("IsCanonicalJSON(%q) = %v, want %v", s, got, want)
		}
	}
	// CanonicalJSON's own output is always recognised: the host's fast
	// path is taken for every family that answers through the SDK
	r := rand.New(rand.NewPCG(3, 5))
	for range 2000 {
		doc, err := CanonicalJSON(randomTree(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		if !IsCanonicalJSON(doc) {
			t.Fatalf("CanonicalJSON output %q not recognised", doc)
		}
	}
}

func randomTree(r *rand.Rand, depth int) any {
	// valid UTF-8 and integers a double holds: CanonicalJSON of other Go
	// values is not canonical, and the host canonicalizes such bodies
	strs := []string{"", "a", "B", "\u00e9", "\U0001F600", "\uffff", "\x01", "\n", "\"", "\\", "plain text that runs past eight bytes", "x\u2028y", "\ufffd"}
	switch k := r.IntN(7); {
	case k == 0 && depth < 4:
		m := map[string]any{}
		for range r.IntN(5) {
			m[strs[r.IntN(len(strs))]+strs[r.IntN(len(strs))]] = randomTree(r, depth+1)
		}
		return m
	case k == 1 && depth < 4:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomTree(r, depth+1)
		}
		return a
	case k == 2:
		return strs[r.IntN(len(strs))]
	case k == 3:
		return r.Int64N(1<<54) - 1<<53
	case k == 4:
		return []float64{0.1, 1e21, 1e-7, 123.456, -5e-324, 1.7976931348623157e308}[r.IntN(6)]
	case k == 5:
		return r.IntN(2) == 0
	}
	return nil
}

func FuzzIsCanonicalJSON(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if got, want := IsCanonicalJSON(doc), isCanonicalByDefinition(doc); got != want {
			t.Fatalf("IsCanonicalJSON(%q) = %v, want %v", doc, got, want)
		}
	})
}

func TestCanonicalizeCopiesOnlyWhenItMust(t *testing.T) {
	doc := []byte(`{"a":1,"b":"x"}`)
	got, err := Canonicalize(doc)
	if err != nil || &got[0] != &doc[0] {
		t.Errorf("a canonical document was copied (%v)", err)
	}
	got, err = Canonicalize([]byte(`{ "b":"x", "a":1.0 }`))
	if err != nil || string(got) != `{"a":1,"b":"x"}` {
		t.Errorf("Canonicalize = %s, %v", got, err)
	}
	if _, err := Canonicalize([]byte(`{"a":`)); err == nil {
		t.Error("invalid JSON canonicalized")
	}
}

type label string

type stamp struct{ At time.Time }

type shout string

func (s shout) MarshalJSON() ([]byte, error) { return json.Marshal(strings.ToUpper(string(s))) }

// Typed values written without encoding/json print as encoding/json's
// marshalling of them, canonicalized.
func TestTypedValuesAsEncodingJSON(t *testing.T) {
	for _, v := range []any{
		[]map[string]any{{"a": 1}, nil, {"b": []string{"x", "y"}}},
		[]string{"b", "a", "\u2028"}, []string(nil), map[string]int{"b": 2, "a": 1}, map[string][]int(nil),
		map[label]label{"k": "v"}, []label{"l"}, [2]int{1, 2}, []int8{-1, 2}, []uint64{1 << 60},
		[]int64{1<<53 + 1}, []byte("base64"), []float32{0.1}, []shout{"quiet"}, map[string]shout{"k": "v"},
		[]stamp{{time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)}}, []any{label("x"), 3, shout("s")}, []*int{nil},
	} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		tree, _ := DecodeJSON(raw)
		want, _ := CanonicalJSON(tree)
		got, err := CanonicalJSON(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%T %v: %s (%v), want %s", v, v, got, err, want)
		}
	}
	raw := RawCanonical(`{"a":1}`)
	if got, _ := CanonicalJSON(map[string]any{"r": raw}); string(got) != `{"r":{"a":1}}` {
		t.Errorf("raw member written as %s", got)
	}
}
