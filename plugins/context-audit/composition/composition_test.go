package composition

import (
	"encoding/base64"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestEM1(t *testing.T) {
	// "héllo wörld" written with combining marks: 13 code points, 11 after NFC
	nfd := "he\u0301llo wo\u0308rld"
	if c := Chars(nfd); c != 11 {
		t.Errorf("C = %d, want 11", c)
	}
	for c, e := range map[int]int{0: 0, 1: 1, 4: 1, 5: 2, 11: 3, 400: 100} {
		if got := Estimate(c); got != e {
			t.Errorf("E(%d) = %d, want %d", c, got, e)
		}
	}
	if Share(1, 3) != "est:~33.33%" {
		t.Errorf("share %v", Share(1, 3))
	}
	if s, ok := Share(1, 0).(interface{ MarshalJSON() ([]byte, error) }); !ok {
		t.Errorf("a zero denominator must print NOT-ASSESSABLE, got %v", s)
	}
}

func TestBase64Census(t *testing.T) {
	std := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xff", 15))) // 30 bytes -> 40 chars with + and /
	url := base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xfb\xff", 15)))
	short := base64.StdEncoding.EncodeToString(make([]byte, 27)) // 36 chars
	pad := base64.StdEncoding.EncodeToString(make([]byte, 31))   // 44 chars with "="
	cases := []struct {
		text string
		want []Segment
	}{
		{"prose " + std + " prose", []Segment{{URLSafe: false, Start: 6, Length: 40}}},
		{url, []Segment{{URLSafe: true, Start: 0, Length: 40}}},
		{short, nil},
		{pad, []Segment{{Start: 0, Length: 44}}},
		// a third '=' ends the run before it: the segment keeps "==" (44)
		{strings.TrimRight(pad, "=") + "===", []Segment{{Start: 0, Length: 44}}},
		// one '=' where two are needed: 43 code points, not a multiple of 4
		{strings.TrimRight(pad, "=") + "=", nil},
		{"no blobs here at all", nil},
	}
	for _, c := range cases {
		got := Base64Segments(c.text)
		if len(got) != len(c.want) {
			t.Errorf("%.20s…: %v, want %v", c.text, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%.20s…: %v, want %v", c.text, got[i], c.want[i])
			}
		}
	}
}

func TestAxisC(t *testing.T) {
	blob := base64.StdEncoding.EncodeToString(make([]byte, 300))
	logText := "2026-11-29T10:00:00 start\n2026-11-29T10:00:01 step\n[2026-11-29 10:00:02] done\n2026-11-29T10:00:03 end\nnote"
	wide := `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"padding":"` + strings.Repeat("x", 150) + `"}`
	cases := map[string]string{
		"":                              CEmpty,
		"   ":                           CText, // whitespace-only is not empty
		blob:                            CBlob,
		"see " + blob:                   CBlob, // ≥ 90 % blob
		"BEGIN EXPORT\nanything":        CRaw,
		logText:                         CRaw, // 4 of 5 lines: 80 %
		wide:                            CRaw, // ≥ 10 keys and C ≥ 200
		`{"tool":"search","q":"x"}`:     CStruct,
		"  [1, 2, 3]\n":                 CStruct,
		"```go\nfmt.Println(1)\n```":    CCode,
		"    x := 1\n    y := 2\nprose": CCode,
		"Hello, how are you?":           CText,
		"{not json":                     CText,
	}
	for text, want := range cases {
		if got := ClassifyC(text, true); got != want {
			t.Errorf("%.30q: %s, want %s", text, got, want)
		}
	}
	if ClassifyC("", false) != CUnk {
		t.Error("a non-serialisable block is C-UNK")
	}
}

// Stepping over bytes no segment can hold finds what reading every byte
// finds: random texts of base64 runs around 40 characters (both
// alphabets, padding, runs that switch alphabet) between prose, marks,
// spaces and multi-byte text.
func TestBase64SkipIsTheByteScan(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 40))
	pieces := func() string {
		raw := make([]byte, 26+r.IntN(8))
		for i := range raw {
			raw[i] = byte(r.IntN(256))
		}
		switch r.IntN(8) {
		case 0:
			return base64.StdEncoding.EncodeToString(raw)
		case 1:
			return base64.URLEncoding.EncodeToString(raw)
		case 2:
			return base64.RawStdEncoding.EncodeToString(raw) + strings.Repeat("=", r.IntN(4))
		case 3:
			return strings.Repeat("ab", 15+r.IntN(8))
		case 4:
			return []string{" ", "\n", "=", "==", "+", "-", "_", "/", "é", "—", "."}[r.IntN(11)]
		case 5:
			return "word"
		}
		return strings.Repeat("x", r.IntN(45))
	}
	found := 0
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(pieces())
		}
		got, want := Base64Segments(b.String()), byteScanSegments(b.String())
		if !slices.Equal(got, want) {
			t.Fatalf("%q: %v, want %v", b.String(), got, want)
		}
		found += len(want)
	}
	if found < 5000 {
		t.Errorf("only %d segments in 20000 texts", found)
	}
}

// byteScanSegments is Base64Segments reading every byte: each run from
// where the last ended, none stepped over. The skip is held to it.
func byteScanSegments(nfc string) []Segment {
	var out []Segment
	for i := 0; i < len(nfc); {
		var seg Segment
		var ok bool
		if seg, i, ok = runAt(nfc, i); ok {
			out = append(out, seg)
		}
	}
	return out
}
