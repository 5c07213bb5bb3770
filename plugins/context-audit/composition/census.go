package composition

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
)

// Segment is one qualifying base64 run of the M10 census.
type Segment struct {
	URLSafe bool
	Start   int // byte offset in the NFC text (every alphabet character is ASCII)
	Length  int // characters, padding included (bytes = code points here)
}

// inSegment is membership in either alphabet or '=': the bytes a
// qualifying segment is made of.
var inSegment = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isBoth(byte(c)) || isStd(byte(c)) || isURL(byte(c)) || c == '='
	}
	return t
}()

func isStd(c byte) bool  { return c == '+' || c == '/' }
func isURL(c byte) bool  { return c == '-' || c == '_' }
func isBoth(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// Base64Segments finds the qualifying segments (ANNEX C-5): maximal runs
// of one alphabet plus at most two '=', length ≥ 40 and a multiple of 4,
// decoding strictly to ≥ 30 bytes. A run of letters and digits only is
// standard; it is counted once. It scans bytes: every alphabet character
// is ASCII and no byte of a multi-byte UTF-8 sequence is, so runs and
// lengths are the same as over code points.
//
// No qualifying segment contains a byte outside both alphabets and '=':
// before scanning a run the 40 bytes ahead are read from their far end,
// and on finding such a byte the scan resumes after it (prose has one
// every few bytes, so most of a text is stepped over).
func Base64Segments(nfc string) []Segment {
	var out []Segment
	// a run that starts fewer than 40 bytes from the end is too short
	for i := 0; i+40 <= len(nfc); {
		j := i + 39
		for j >= i && inSegment[nfc[j]] {
			j--
		}
		if j >= i {
			i = j + 1
			continue
		}
		var seg Segment
		var ok bool
		if seg, i, ok = runAt(nfc, i); ok {
			out = append(out, seg)
		}
	}
	return out
}

// runAt reads the run at nfc[i], if one starts there: it returns where
// the scan goes on, and the run as a segment when it qualifies. A byte of
// neither alphabet starts no run.
func runAt(nfc string, i int) (seg Segment, next int, ok bool) {
	if c := nfc[i]; !isBoth(c) && !isStd(c) && !isURL(c) {
		return Segment{}, i + 1, false
	}
	start, url, decided := i, false, false
	for ; i < len(nfc); i++ {
		c := nfc[i]
		if isBoth(c) {
			continue
		}
		if isStd(c) && (!decided || !url) {
			decided, url = true, false
			continue
		}
		if isURL(c) && (!decided || url) {
			decided, url = true, true
			continue
		}
		break // the other alphabet's character starts the next run
	}
	pads := 0
	for i+pads < len(nfc) && nfc[i+pads] == '=' {
		pads++
	}
	end := i + min(pads, 2) // a third '=' ends the run before it
	if end-start >= 40 && qualifies(nfc[start:end], url) {
		return Segment{URLSafe: url, Start: start, Length: end - start}, i + pads, true
	}
	return Segment{}, i + pads, false
}

func qualifies(seg string, url bool) bool {
	if len(seg) < 40 || len(seg)%4 != 0 {
		return false
	}
	enc := base64.StdEncoding.Strict()
	if url {
		enc = base64.URLEncoding.Strict()
	}
	d, err := enc.DecodeString(seg)
	return err == nil && len(d) >= 30
}

var logLine = regexp.MustCompile(`^\[?[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}`)

const space = " \t\r\n"

// lines splits on LF, CRLF or CR and keeps the non-empty ones.
func lines(s string) []string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Trim(l, space) != "" {
			out = append(out, l)
		}
	}
	return out
}

// rawExport is test R-1 (ANNEX C-5), given the trimmed text and its JSON
// validity, which axis C computes once for C-STRUCT too.
func rawExport(nfc string, chars int, trimmed string, isJSON bool) bool {
	ls := lines(nfc)
	if len(ls) == 0 {
		return false
	}
	first := strings.Trim(ls[0], space)
	for _, m := range []string{"BEGIN EXPORT", "BEGIN RAW", "BEGIN LOG"} {
		if strings.HasPrefix(first, m) {
			return true
		}
	}
	matching := 0
	for _, l := range ls {
		if logLine.MatchString(l) {
			matching++
		}
	}
	if 5*matching >= 4*len(ls) {
		return true
	}
	return chars >= 200 && isJSON && wideJSON(trimmed)
}

// wideJSON: a strict JSON object with ≥ 10 distinct member names, or an
// array with ≥ 10 elements.
func wideJSON(s string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) == nil && obj != nil {
		return len(obj) >= 10
	}
	var arr []json.RawMessage
	return json.Unmarshal([]byte(s), &arr) == nil && len(arr) >= 10
}
