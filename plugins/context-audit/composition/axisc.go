package composition

import (
	"encoding/json"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Axis-C classes in precedence order.
const (
	CEmpty  = "C-EMPTY"
	CUnk    = "C-UNK"
	CBlob   = "C-BLOB"
	CRaw    = "C-RAW"
	CStruct = "C-STRUCT"
	CCode   = "C-CODE"
	CText   = "C-TEXT"
)

// ClassifyC applies ANNEX C-4; serialisable is false for a block with no
// text (C-UNK).
func ClassifyC(text string, serialisable bool) string {
	if !serialisable {
		return CUnk
	}
	nfc := norm.NFC.String(text)
	return contentTests(nfc, Chars(nfc)).class
}

// content is what the axis-C tests and the M10 census found in one
// block's NFC text.
type content struct {
	class     string
	conflict  bool // two or more of C-BLOB, C-RAW, C-STRUCT, C-CODE hold (ANNEX C-13)
	std, url  int  // qualifying segments per alphabet
	segChars  int
	rawExport bool
}

// contentTests runs every axis-C test once (the census needs each result
// whatever the class) and picks the first in precedence order.
func contentTests(nfc string, chars int) content {
	if chars == 0 {
		return content{class: CEmpty}
	}
	var k content
	for _, s := range Base64Segments(nfc) {
		if s.URLSafe {
			k.url++
		} else {
			k.std++
		}
		k.segChars += s.Length
	}
	trimmed := strings.Trim(nfc, space)
	isJSON := trimmed != "" && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid([]byte(trimmed))
	k.rawExport = rawExport(nfc, chars, trimmed, isJSON)
	blob := 10*k.segChars >= 9*chars
	code := code(nfc)
	fired := 0
	for _, t := range []bool{blob, k.rawExport, isJSON, code} {
		if t {
			fired++
		}
	}
	k.conflict = fired >= 2
	switch {
	case blob:
		k.class = CBlob
	case k.rawExport:
		k.class = CRaw
	case isJSON:
		k.class = CStruct
	case code:
		k.class = CCode
	default:
		k.class = CText
	}
	return k
}

func code(s string) bool {
	t := strings.Trim(s, space)
	all := strings.Split(strings.ReplaceAll(strings.ReplaceAll(t, "\r\n", "\n"), "\r", "\n"), "\n")
	if len(all) >= 2 && strings.HasPrefix(all[0], "```") && !strings.Contains(all[0][3:], "`") && all[len(all)-1] == "```" {
		return true
	}
	ls := lines(s)
	indented := 0
	for _, l := range ls {
		if strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t") {
			indented++
		}
	}
	return len(ls) > 0 && 2*indented >= len(ls)
}
