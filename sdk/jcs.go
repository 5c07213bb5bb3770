package sdk

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
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
// encoding/json decodes it) from one validating scan and a walk over the
// located values (tested against encoding/json by fuzzing). A document of
// 4 GiB or more is refused (Locate).
func DecodeJSON(raw []byte) (any, error) {
	d, err := Locate(raw)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return (&decoder{names: map[string]string{}}).treeOf(d.Root()), nil
}

// decoder keeps the member names one decoding has met: a document repeats
// a handful of names many times over, so each is decoded once.
type decoder struct{ names map[string]string }

// name decodes a member name, once per distinct spelling for the first
// few hundred short ones (a map keyed by ids gains nothing from keeping
// them).
func (d *decoder) name(k Value) string {
	raw := k.Raw()
	if s, ok := d.names[string(raw)]; ok {
		return s
	}
	s, _ := k.String()
	if len(raw) <= 64 && len(d.names) < 512 {
		d.names[string(raw)] = s
	}
	return s
}

func (d *decoder) treeOf(n Value) any {
	switch n.Kind {
	case '{':
		m := make(map[string]any, n.Len())
		for c := n.cursor(); ; {
			k, v, ok := c.next()
			if !ok {
				return m
			}
			m[d.name(k)] = d.treeOf(v)
		}
	case '[':
		a := make([]any, 0, n.Len())
		for c := n.cursor(); ; {
			_, e, ok := c.next()
			if !ok {
				return a
			}
			a = append(a, d.treeOf(e))
		}
	case '"':
		s, _ := n.String()
		return s
	case '0':
		return json.Number(n.Raw())
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
	if r, ok := v.(RawCanonical); ok {
		return r, nil
	}
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
		// beyond 15 digits an integer prints as the double JSON.parse
		// would read, so a verifier that decodes and re-encodes agrees
		return writeNumberLiteral(b, strconv.FormatInt(int64(x), 10))
	case int64:
		return writeNumberLiteral(b, strconv.FormatInt(x, 10))
	case float64:
		return writeFloat(b, x)
	case []any:
		if x == nil {
			b.WriteString("null") // as encoding/json prints a nil slice
			return nil
		}
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
		if x == nil {
			b.WriteString("null")
			return nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		return writeMembers(b, keys, func(k string) any { return x[k] })
	case RawCanonical:
		b.Write(x)
	case json.RawMessage:
		if IsCanonicalJSON(x) {
			b.Write(x)
			return nil
		}
		d, err := DecodeJSON(x)
		if err != nil {
			return err
		}
		return writeCanonical(b, d)
	default:
		if done, err := writeReflected(b, x); done {
			return err
		}
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

// writeMembers writes an object whose member names are keys, sorted here
// as RFC 8785 sorts them, and whose values value gives.
func writeMembers(b *bytes.Buffer, keys []string, value func(string) any) error {
	slices.SortFunc(keys, CompareUTF16)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, k)
		b.WriteByte(':')
		if err := writeCanonical(b, value(k)); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// writeReflected writes the typed slices, string-keyed maps and integers
// a family builds its body from ([]map[string]any, []string, map[string]int
// …) as encoding/json would marshal them, without the marshal and decode
// round trip; done is false for anything else (structs, floats, byte
// slices, types with their own JSON or text form), which takes that trip.
func writeReflected(b *bytes.Buffer, x any) (done bool, err error) {
	t := reflect.TypeOf(x)
	if t == nil || ownForm(t) {
		return false, nil
	}
	v := reflect.ValueOf(x)
	switch t.Kind() {
	case reflect.String:
		writeString(b, v.String())
	case reflect.Bool:
		return true, writeCanonical(b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true, writeNumberLiteral(b, strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true, writeNumberLiteral(b, strconv.FormatUint(v.Uint(), 10))
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 || ownForm(t.Elem()) {
			return false, nil // bytes marshal as base64
		}
		if t.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("null")
			return true, nil
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, v.Index(i).Interface()); err != nil {
				return true, err
			}
		}
		b.WriteByte(']')
	case reflect.Map:
		if t.Key().Kind() != reflect.String || ownForm(t.Key()) || ownForm(t.Elem()) {
			return false, nil
		}
		if v.IsNil() {
			b.WriteString("null")
			return true, nil
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		return true, writeMembers(b, keys, func(k string) any { return v.MapIndex(reflect.ValueOf(k).Convert(t.Key())).Interface() })
	default:
		return false, nil
	}
	return true, nil
}

// ownForm says t, or a pointer to it (encoding/json uses a pointer
// method on an addressable element), has its own JSON or text form.
func ownForm(t reflect.Type) bool {
	if t == reflect.TypeFor[RawCanonical]() {
		return false // written by writeCanonical itself
	}
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(reflect.TypeFor[json.Marshaler]()) || u.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}

// CompareUTF16 orders strings by UTF-16 code units, as RFC 8785 §3.2.3
// asks for member names (and JavaScript sorts strings). Byte order equals
// it unless a string holds characters above U+FFFF.
//
// It decodes both strings in step and allocates nothing: a tool call's
// input may hold a few hundred thousand non-ASCII member names, and the
// sort compares each many times.
func CompareUTF16(a, b string) int {
	if IsASCII(a) && IsASCII(b) {
		return strings.Compare(a, b)
	}
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			// a rune above U+FFFF is a surrogate pair, whose high half
			// sorts below U+E000..U+FFFF; two such runes differ in one
			// of their halves
			ha, la := utf16.EncodeRune(ra)
			hb, lb := utf16.EncodeRune(rb)
			if ha == utf8.RuneError && la == utf8.RuneError {
				ha = ra // one unit: the rune itself
			}
			if hb == utf8.RuneError && lb == utf8.RuneError {
				hb = rb
			}
			if ha != hb {
				return cmp.Compare(ha, hb)
			}
			return cmp.Compare(la, lb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// IsASCII reports a text of ASCII bytes only, reading eight bytes at a
// time (most of a record is ASCII text; an ASCII text is its own NFC form).
func IsASCII(s string) bool {
	var acc uint64
	i := 0
	for ; i+8 <= len(s); i += 8 {
		acc |= uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	}
	for ; i < len(s); i++ {
		acc |= uint64(s[i])
	}
	return acc&highs == 0
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
