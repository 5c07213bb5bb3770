package sdk

import (
	"bytes"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// JSONKind reports whether a raw JSON value starts with the given byte
// ('{' object, '[' array, '"' string, 'n' null, 't'/'f' booleans), after
// leading whitespace. Families use it to tell a member's type before
// decoding, so "not a string" and "not an object" rules stay exact.
func JSONKind(raw []byte, first byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == first
}

// HasLoneSurrogate finds a \u escape naming half a surrogate pair. Such a
// string is not Unicode text: Go would decode it to U+FFFD and JavaScript
// would keep the half, so two implementations could not agree on equality
// or order. Families refuse the body instead. Outside strings valid JSON
// has no backslash, so a linear scan of escapes suffices.
func HasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			// jump to the next backslash (most text has few)
			next := bytes.IndexByte(b[i:], '\\')
			if next < 0 {
				return false
			}
			i += next
		}
		if i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character (\\ included)
			continue
		}
		cu, ok := hex4(b, i+2)
		if !ok {
			return false // a malformed escape: the JSON decoder refuses it anyway
		}
		i += 5
		switch {
		case cu >= 0xDC00 && cu <= 0xDFFF:
			return true
		case cu >= 0xD800 && cu <= 0xDBFF:
			if i+2 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(b, i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

func hex4(b []byte, at int) (int, bool) {
	if at < 0 || at+4 > len(b) {
		return 0, false
	}
	v := 0
	for _, c := range b[at : at+4] {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= int(c - '0')
		case c >= 'a' && c <= 'f':
			v |= int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v |= int(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}

// StringOf decodes a raw JSON string value (surrounding whitespace
// allowed) that its caller has validated as JSON: ok is false when it is
// not a string, or when an escape in it is malformed. It decodes as
// encoding/json does (an escaped lone surrogate, and each byte of invalid
// UTF-8, become U+FFFD; fuzzed against it through DecodeJSON). A string
// with no escape and valid UTF-8 is its own bytes, so the common case
// costs one scan and one copy.
func StringOf(raw []byte) (s string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if plainContents(inner) {
		return string(inner), true
	}
	if end, valid := validString(raw, 0); !valid || end != len(raw) {
		return "", false
	}
	return string(appendText(make([]byte, 0, len(inner)), inner)), true
}

// plainContents reports whether a JSON string's contents (the bytes
// between its quotes) are their own text: no escape, and valid UTF-8.
func plainContents(inner []byte) bool {
	return bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner)
}

// appendText appends the text of a valid JSON string's contents (inner:
// the bytes between its quotes) to dst, exactly as encoding/json decodes
// them.
func appendText(dst, inner []byte) []byte {
	for i := 0; i < len(inner); {
		c := inner[i]
		switch {
		case c == '\\':
			e := inner[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				cu, _ := hex4(inner, i)
				i += 4
				r := rune(cu)
				if utf16.IsSurrogate(r) {
					// a pair only when a second escape follows and completes it
					lo := rune(-1)
					if i+6 <= len(inner) && inner[i] == '\\' && inner[i+1] == 'u' {
						if v, ok := hex4(inner, i+2); ok {
							lo = rune(v)
						}
					}
					if d := utf16.DecodeRune(r, lo); d != unicode.ReplacementChar {
						dst = utf8.AppendRune(dst, d)
						i += 6
						continue
					}
					r = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(inner[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, inner[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// Member is one top-level member of a JSON object: its decoded name and
// the byte span of its value.
type Member struct {
	Name       string
	Start, End int
}

// TopLevel lists an object's members in order with the byte span of each
// value, without decoding or copying the values: a family can hand a
// member (a whole record) onward by span. body must be valid JSON already
// (json.Valid): the scan trusts the grammar and tracks only strings and
// nesting. ok is false when body is not an object.
func TopLevel(body []byte) (members []Member, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return members, true
	}
	for {
		end := stringEnd(body, i)
		name, ok := StringOf(body[i:end])
		if !ok {
			return nil, false
		}
		i = skipSpace(body, skipSpace(body, end)+1) // past the colon
		start := i
		i = valueEnd(body, i)
		members = append(members, Member{Name: name, Start: start, End: i})
		i = skipSpace(body, i)
		if body[i] != ',' {
			return members, true
		}
		i = skipSpace(body, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the string starting at b[i] ('"').
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return len(b)
		}
		j += q
		// an even run of backslashes before the quote leaves it unescaped
		k := j
		for k > i+1 && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j + 1
		}
		j++
	}
}

// valueEnd is the index after the value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
		i++
	}
	return i
}
