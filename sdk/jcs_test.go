package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// decodeReference is DecodeJSON as encoding/json writes it. (The decoder
// alone accepts "0}0": More reports the end of an enclosing value, not
// trailing data, so the document is checked whole first.)
func decodeReference(raw []byte) (any, error) {
	if !json.Valid(raw) {
		return nil, errors.New("not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

func FuzzDecodeJSONIsEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.50,-0e1,"\u00e9\ud800x"],"a":{"b":null},"c":true}`, `"bad utf8 ` + "\xff" + `"`, `[]`, ` 12 `, `{"a":1} x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := DecodeJSON(raw)
		want, werr := decodeReference(raw)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", raw, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v, encoding/json %#v", raw, got, want)
		}
	})
}

// A document with trailing text is not JSON, even when the text starts by
// closing a value (encoding/json's decoder alone lets "0}0" through).
func TestDecodeJSONRefusesTrailingText(t *testing.T) {
	for _, raw := range []string{`0}0`, `{"a":1}}`, `[1]]`, `1 2`} {
		if _, err := DecodeJSON([]byte(raw)); err == nil {
			t.Errorf("%s decoded", raw)
		}
	}
}

// writeString (runs copied whole) prints what escaping rune by rune
// prints, on strings of every kind of character, invalid UTF-8 included.
func TestWriteStringByRuns(t *testing.T) {
	byRune := func(s string) string {
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				b.WriteString(`\` + string(r))
			case r == '\b':
				b.WriteString(`\b`)
			case r == '\f':
				b.WriteString(`\f`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\t':
				b.WriteString(`\t`)
			case r < 0x20:
				b.WriteString(fmt.Sprintf(`\u%04x`, r))
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	r := rand.New(rand.NewPCG(5, 5))
	pieces := []string{"a", "Z", " ", `"`, `\`, "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "€", "😀", "\ufffd", "\xff", "\xe2\x82", "\xc3"}
	for range 20000 {
		var s strings.Builder
		for range r.IntN(20) {
			s.WriteString(pieces[r.IntN(len(pieces))])
		}
		var b bytes.Buffer
		writeString(&b, s.String())
		if got, want := b.String(), byRune(s.String()); got != want {
			t.Fatalf("%q: %s, want %s", s.String(), got, want)
		}
	}
}

// BenchmarkDecodeJSON decodes a 200 KB report-like document (the host
// canonicalizes every family answer that is not already canonical).
func BenchmarkDecodeJSON(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`{"factors":[`)
	for i := 0; doc.Len() < 200<<10; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		doc.WriteString(`{"id":"F-` + strconv.Itoa(i) + `","rows":[{"class":"P-USER","count":12,"share":"est:~1.25%"},{"class":"P-TOOL","count":3,"note":"caf\u00e9"}],"ok":true,"none":null}`)
	}
	doc.WriteString(`]}`)
	b.SetBytes(int64(doc.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJSON(doc.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
