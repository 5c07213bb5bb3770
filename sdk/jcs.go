package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// DecodeJSON parses JSON into the value tree CanonicalJSON writes: map[string]any,
// []any, string, json.Number, bool and nil. Numbers stay json.Number so an
// integer is never rounded through float64 on its way to the signature.
// It gives encoding/json's tree (the last of duplicate members wins; a
// string with invalid UTF-8 or a lone surrogate escape decodes as
// encoding/json decodes it) from one validating scan and one walk over
// the located values (tested against encoding/json by fuzzing).
func DecodeJSON(raw []byte) (any, error) {
	n, err := ParseNodes(raw)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return treeOf(raw, n), nil
}

func treeOf(doc []byte, n Node) any {
	switch n.Kind {
	case '{':
		m := make(map[string]any, len(n.Members))
		for _, mm := range n.Members {
			m[mm.Name] = treeOf(doc, mm.Node)
		}
		return m
	case '[':
		a := make([]any, len(n.Elems))
		for i, e := range n.Elems {
			a[i] = treeOf(doc, e)
		}
		return a
	case '"':
		s, _ := n.String(doc)
		return s
	case '0':
		return json.Number(doc[n.Start:n.End])
	case 't':
		return true
	case 'f':
		return false
	}
	return nil
}

// CanonicalJSON returns the RFC 8785 (JCS) serialization of v: object members
// sorted by their UTF-16 code units, no insignificant whitespace, strings
// escaped as ECMAScript's JSON.stringify does, numbers in ECMAScript's
// shortest form. v is a DecodeJSON tree, or plain Go values (maps of any,
// strings, integers, floats, booleans, nil); anything else is marshalled
// through encoding/json first.
func CanonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeCanonical(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writeString(b, x)
	case json.Number:
		return writeNumberLiteral(b, string(x))
	case int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		return writeFloat(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, CompareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case json.RawMessage:
		d, err := DecodeJSON(x)
		if err != nil {
			return err
		}
		return writeCanonical(b, d)
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("canonical: %w", err)
		}
		d, err := DecodeJSON(raw)
		if err != nil {
			return err
		}
		return writeCanonical(b, d)
	}
	return nil
}

// CompareUTF16 orders strings by UTF-16 code units, as RFC 8785 §3.2.3
// asks for member names (and JavaScript sorts strings). Byte order equals
// it unless a string holds characters above U+FFFF.
func CompareUTF16(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	// runs that need no escape are copied whole; a byte that is not UTF-8
	// prints as U+FFFD, as ranging over the string would give it
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b.WriteString(s[start:i])
			b.WriteRune(utf8.RuneError)
			i++
			start = i
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// writeNumberLiteral prints a JSON number literal in ECMAScript form. Plain
// integers that a double holds exactly are copied; everything else goes
// through float64, as JSON.parse would take it.
func writeNumberLiteral(b *bytes.Buffer, lit string) error {
	digits := strings.TrimPrefix(lit, "-")
	if digits != "" && !strings.ContainsAny(digits, ".eE") && len(digits) <= 15 && (digits == "0" || digits[0] != '0') {
		if digits == "0" {
			b.WriteString("0") // -0 prints as 0
			return nil
		}
		b.WriteString(lit)
		return nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return fmt.Errorf("canonical: number out of range")
	}
	return writeFloat(b, f)
}

// writeFloat is ECMAScript's Number.prototype.toString for finite doubles.
func writeFloat(b *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return errors.New("canonical: NaN or infinity")
	}
	if f == 0 {
		b.WriteString("0")
		return nil
	}
	if f < 0 {
		b.WriteByte('-')
		f = -f
	}
	// shortest round-tripping digits and the decimal exponent n, so that
	// f = 0.d1d2...dk × 10^n
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±xx
	mant, expPart, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expPart)
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return nil
}
