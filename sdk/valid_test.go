package sdk

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestValidJSONIsJSONValid(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{a:1}`, `"x"`, `"x`, `"\u00e9"`, `"\u00g9"`, `"\x"`,
		"\"a\tb\"", "\"a\x7fb\"", `01`, `-0`, `-`, `1.`, `1.5e`, `1.5e+3`, `1E-2`, `.5`, `+1`, `truex`, `tru`, `nul`, ` null `, `null null`,
		`{"a":[true,false,null,{"b":"c"}]}`, `[[[]]]`, `{"":""}`, "\xef\xbb\xbf{}", `"\ud800"`, `[1,2,3] x`, `{"a":1}}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	}
	for _, c := range cases {
		if got, want := ValidJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("%.40q: %v, json.Valid %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,"x\n\u0041"],"b":{"c":null}}`, `[true,false]`, `"\\"`, `-0.0E+1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("%q: %v, json.Valid %v", b, got, want)
		}
	})
}

// plain8 agrees with the byte-by-byte rule for every byte value at every
// position of a word, beside plain, high and special neighbours.
func TestPlain8(t *testing.T) {
	for _, fill := range []byte{'a', 0x7f, 0x80, 0xff, ' '} {
		for pos := range 8 {
			for c := range 256 {
				w := bytes.Repeat([]byte{fill}, 8)
				w[pos] = byte(c)
				want := true
				for _, x := range w {
					want = want && x != '"' && x != '\\' && x >= 0x20
				}
				if got := plain8(binary.LittleEndian.Uint64(w)); got != want {
					t.Fatalf("%q: %v", w, got)
				}
			}
		}
	}
}

// BenchmarkValidJSON: a 5 MiB record-like document (objects of prose
// strings, a few escapes and numbers), against json.Valid.
func BenchmarkValidJSON(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"messages":[`)
	for i := 0; doc.Len() < 5<<20; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`{"role":"user","n":` + strconv.Itoa(i) + `,"content":[{"type":"text","text":"`)
		doc.WriteString(strings.Repeat("The quick brown fox jumps over the lazy dog, then rests. ", 8))
		doc.WriteString(`\n\"quoted\" caf\u00e9 – naïve"}]}`)
	}
	doc.WriteString(`]}`)
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{{"sdk", ValidJSON}, {"encoding-json", json.Valid}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(doc.Len()))
			for b.Loop() {
				if !c.valid(doc.Bytes()) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// IsASCII agrees with a byte-by-byte reading for every byte value at every
// position of texts up to two words and a tail long.
func TestIsASCIIByBytes(t *testing.T) {
	for n := 1; n <= 19; n++ {
		for at := 0; at < n; at++ {
			for c := 0; c < 256; c++ {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				if got, want := IsASCII(string(b)), c < 0x80; got != want {
					t.Fatalf("IsASCII(%q) = %v", b, got)
				}
			}
		}
	}
	if !IsASCII("") {
		t.Error("the empty text is ASCII")
	}
}
