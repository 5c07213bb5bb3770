package sdk

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

// RawCanonical is a JSON value already in RFC 8785 form: CanonicalJSON
// writes it as it is. The host signs a family's report members this way,
// straight from the bytes the family sent, once IsCanonicalJSON has said
// they are canonical.
type RawCanonical []byte

// MarshalJSON writes r as it is, so encoding/json embeds it too.
func (r RawCanonical) MarshalJSON() ([]byte, error) { return r, nil }

// IsCanonicalJSON reports whether doc is exactly CanonicalJSON of its own
// decoding: one JSON value with no insignificant whitespace, object
// members in strictly ascending UTF-16 order of their names (so no name
// twice), strings escaped only where and as JSON.stringify escapes them,
// valid UTF-8, and numbers in ECMAScript's shortest form. One scan, no
// tree (fuzzed against that definition).
func IsCanonicalJSON(doc []byte) bool {
	i, ok := canonicalValue(doc, 0, 0)
	return ok && i == len(doc)
}

// Canonicalize is doc in RFC 8785 form: doc itself when it already is
// (no copy), else CanonicalJSON of its decoding.
func Canonicalize(doc []byte) ([]byte, error) {
	if IsCanonicalJSON(doc) {
		return doc, nil
	}
	tree, err := DecodeJSON(doc)
	if err != nil {
		return nil, err
	}
	return CanonicalJSON(tree)
}

// canonicalValue and canonicalContainer follow validValue and
// validContainer step for step, held to the canonical form. One walker
// with a strictness flag served both and made ValidJSON 13 % slower (one
// core, eight interleaved runs); ValidJSON reads every 5 MiB body twice on
// the request's path, so the walk is written twice instead.
func canonicalValue(d []byte, i, depth int) (int, bool) {
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '"':
		return canonicalString(d, i)
	case c == '{' || c == '[':
		return canonicalContainer(d, i, depth, c == '{')
	case c == 't':
		return literal(d, i, "true")
	case c == 'f':
		return literal(d, i, "false")
	case c == 'n':
		return literal(d, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return canonicalNumber(d, i)
	}
	return i, false
}

func canonicalContainer(d []byte, i, depth int, object bool) (int, bool) {
	if depth+1 > maxDepth {
		return i, false
	}
	closer := byte(']')
	if object {
		closer = '}'
	}
	i++
	if i < len(d) && d[i] == closer {
		return i + 1, true
	}
	var prev []byte
	for first := true; ; first = false {
		var ok bool
		if object {
			start := i
			if i >= len(d) || d[i] != '"' {
				return i, false
			}
			if i, ok = canonicalString(d, i); !ok {
				return i, false
			}
			name := d[start+1 : i-1]
			if !first && !namesAscend(prev, name) {
				return i, false
			}
			prev = name
			if i >= len(d) || d[i] != ':' {
				return i, false
			}
			i++
		}
		if i, ok = canonicalValue(d, i, depth+1); !ok || i >= len(d) {
			return i, false
		}
		switch d[i] {
		case ',':
			i++
		case closer:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// namesAscend compares two member names as written in canonical form;
// an escape is rare enough to decode for.
func namesAscend(a, b []byte) bool {
	if bytes.IndexByte(a, '\\') < 0 && bytes.IndexByte(b, '\\') < 0 {
		return CompareUTF16(unsafe.String(unsafe.SliceData(a), len(a)), unsafe.String(unsafe.SliceData(b), len(b))) < 0
	}
	sa, _ := StringOf(append(append([]byte{'"'}, a...), '"'))
	sb, _ := StringOf(append(append([]byte{'"'}, b...), '"'))
	return CompareUTF16(sa, sb) < 0
}

// canonicalString checks the string at d[i] and returns the index after
// it. JSON.stringify escapes the quote, the backslash and the control
// characters, those with a short form (\b \f \n \r \t) by it and the rest
// as \u00xx in lower case; nothing else.
func canonicalString(d []byte, i int) (int, bool) {
	start := i + 1
	var high uint64
	for i++; i < len(d); {
		for i+8 <= len(d) {
			v := binary.LittleEndian.Uint64(d[i:])
			if !plain8(v) {
				break
			}
			high |= v
			i += 8
		}
		if i >= len(d) {
			break
		}
		c := d[i]
		switch {
		case c == '"':
			return i + 1, high&highs == 0 || utf8.Valid(d[start:i])
		case c == '\\':
			if i+1 >= len(d) {
				return i, false
			}
			switch d[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || d[i+2] != '0' || d[i+3] != '0' || d[i+4] != '0' && d[i+4] != '1' || !isLowerHex(d[i+5]) {
					return i, false // only a control character is escaped so
				}
				if x := d[i+5]; d[i+4] == '0' && (x == '8' || x == '9' || x == 'a' || x == 'c' || x == 'd') {
					return i, false // \b \t \n \f \r have a short form
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			high |= uint64(c)
			i++
		}
	}
	return i, false
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// canonicalNumber checks the number at d[i]. An integer of up to 15
// digits is its own canonical form (as writeNumberLiteral copies it);
// anything else must equal what writeNumberLiteral prints for it.
func canonicalNumber(d []byte, i int) (int, bool) {
	j := i
	for j < len(d) && (d[j] >= '0' && d[j] <= '9' || d[j] == '-' || d[j] == '+' || d[j] == '.' || d[j] == 'e' || d[j] == 'E') {
		j++
	}
	lit := d[i:j]
	digits := lit
	if digits[0] == '-' {
		digits = digits[1:]
	}
	plain := len(digits) > 0 && len(digits) <= 15 && (digits[0] != '0' || len(digits) == 1)
	for _, c := range digits {
		plain = plain && c >= '0' && c <= '9'
	}
	if plain {
		return j, !(len(lit) == 2 && lit[0] == '-' && lit[1] == '0') // -0 prints as 0
	}
	if end, ok := validNumber(d, i); !ok || end != j {
		return i, false
	}
	var b bytes.Buffer
	if writeNumberLiteral(&b, string(lit)) != nil {
		return i, false
	}
	return j, bytes.Equal(b.Bytes(), lit)
}
