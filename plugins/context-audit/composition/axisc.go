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
	c := Chars(nfc)
	if c == 0 {
		return CEmpty
	}
	blob := 0
	for _, s := range Base64Segments(nfc) {
		blob += s.Length
	}
	switch {
	case 10*blob >= 9*c:
		return CBlob
	case RawExport(nfc, c):
		return CRaw
	case structured(nfc):
		return CStruct
	case code(nfc):
		return CCode
	}
	return CText
}

func structured(s string) bool {
	t := strings.Trim(s, space)
	if t == "" || (t[0] != '{' && t[0] != '[') || !json.Valid([]byte(t)) {
		return false
	}
	return true
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
