package sdk

import "encoding/binary"

// maxDepth is encoding/json's nesting limit: ValidJSON agrees with
// json.Valid on every input, deep ones included.
const maxDepth = 10000

// ValidJSON reports whether b is one RFC 8259 JSON value, exactly as
// json.Valid does (invalid UTF-8 inside strings is its caller's concern,
// as there), at 4.5 times its speed (BenchmarkValidJSON): strings, which
// are nearly all of a large record, are scanned eight bytes at a time.
// Fuzzed against json.Valid.
func ValidJSON(b []byte) bool {
	i, ok := validValue(b, skipSpace(b, 0), 0, nil)
	return ok && skipSpace(b, i) == len(b)
}

// validValue checks the value at b[i] and returns the index after it.
// With tape set it also appends the value's strings and containers to it
// (Locate); ValidJSON passes nil and records nothing.
func validValue(b []byte, i, depth int, tape *[]located) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return validStringOn(b, i, tape)
	case c == '{' || c == '[':
		return validContainer(b, i, depth, c == '{', tape)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	}
	return i, false
}

// validContainer checks the object or array at b[i] and returns the index
// after it.
func validContainer(b []byte, i, depth int, object bool, tape *[]located) (int, bool) {
	if depth+1 > maxDepth {
		return i, false
	}
	at := -1
	if tape != nil {
		at = len(*tape)
		*tape = append(*tape, located{start: uint32(i)})
	}
	closer := byte(']')
	if object {
		closer = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return closeContainer(tape, at, i+1), true
	}
	for {
		var ok bool
		if object { // a member name and its colon first
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = validStringOn(b, i, tape); !ok {
				return i, false
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = validValue(b, i, depth+1, tape); !ok {
			return i, false
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case closer:
			return closeContainer(tape, at, i+1), true
		default:
			return i, false
		}
	}
}

// closeContainer completes the tape entry at (if recording) of a
// container that ends before end, and returns end.
func closeContainer(tape *[]located, at, end int) int {
	if tape != nil {
		(*tape)[at].end, (*tape)[at].after = uint32(end), uint32(len(*tape))
	}
	return end
}

// validStringOn is validString, recording the string when tape is set.
func validStringOn(b []byte, i int, tape *[]located) (int, bool) {
	end, ok := validString(b, i)
	if ok && tape != nil {
		*tape = append(*tape, located{start: uint32(i), end: uint32(end), after: uint32(len(*tape) + 1)})
	}
	return end, ok
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// validString checks the string at b[i] ('"') and returns the index
// after it.
func validString(b []byte, i int) (int, bool) {
	i++
	for i < len(b) {
		// eight plain bytes at a time (most of a record is text)
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b, i+2); !ok {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
	return i, false
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports eight string bytes none of which is a quote, a backslash
// or a control character (below 0x20): the exact zero-byte and less-than
// tests of "Bit Twiddling Hacks", on the word and on it xored with each
// special byte.
func plain8(v uint64) bool {
	q, s := v^(ones*'"'), v^(ones*'\\')
	return ((q-ones)&^q|(s-ones)&^s|(v-ones*0x20)&^v)&highs == 0
}

func digit(b []byte, i int) bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }

func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digit(b, i):
		for digit(b, i) {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digit(b, i) {
			return i, false
		}
		for digit(b, i) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digit(b, i) {
			return i, false
		}
		for digit(b, i) {
			i++
		}
	}
	return i, true
}
