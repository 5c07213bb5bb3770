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
	Start   int // code-point offset in the NFC text
	Length  int // code points, padding included
}

func isStd(r rune) bool  { return r == '+' || r == '/' }
func isURL(r rune) bool  { return r == '-' || r == '_' }
func isBoth(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }

// Base64Segments finds the qualifying segments (ANNEX C-5): maximal runs
// of one alphabet plus at most two '=', length ≥ 40 and a multiple of 4,
// decoding strictly to ≥ 30 bytes. A run of letters and digits only is
// standard; it is counted once.
func Base64Segments(nfc string) []Segment {
	runes := []rune(nfc)
	var out []Segment
	for i := 0; i < len(runes); {
		if !isBoth(runes[i]) && !isStd(runes[i]) && !isURL(runes[i]) {
			i++
			continue
		}
		start, url, decided := i, false, false
		for ; i < len(runes); i++ {
			r := runes[i]
			if isBoth(r) {
				continue
			}
			if isStd(r) && (!decided || !url) {
				decided, url = true, false
				continue
			}
			if isURL(r) && (!decided || url) {
				decided, url = true, true
				continue
			}
			break // the other alphabet's character starts the next run
		}
		pads := 0
		for i+pads < len(runes) && runes[i+pads] == '=' {
			pads++
		}
		end := i + min(pads, 2) // a third '=' ends the run before it
		i += pads
		if seg := string(runes[start:end]); qualifies(seg, url) {
			out = append(out, Segment{URLSafe: url, Start: start, Length: end - start})
		}
	}
	return out
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

// RawExport is test R-1 (ANNEX C-5).
func RawExport(nfc string, chars int) bool {
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
	return chars >= 200 && wideJSON(strings.Trim(nfc, space))
}

// wideJSON: a strict JSON object with ≥ 10 distinct member names, or an
// array with ≥ 10 elements.
func wideJSON(s string) bool {
	if !json.Valid([]byte(s)) {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) == nil && obj != nil {
		return len(obj) >= 10
	}
	var arr []json.RawMessage
	return json.Unmarshal([]byte(s), &arr) == nil && len(arr) >= 10
}
