package sdk

import (
	"encoding/json"
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
