package realistic

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// obj is a JSON object that keeps its member order: real payloads are
// written in the order their producer chose, and only the JCS form (the
// anthropic tool_use adaptation) sorts them.
type obj struct {
	k []string
	v []any
}

func o(kv ...any) *obj {
	x := &obj{}
	for i := 0; i+1 < len(kv); i += 2 {
		x.k = append(x.k, kv[i].(string))
		x.v = append(x.v, kv[i+1])
	}
	return x
}

func (x *obj) set(k string, v any) *obj {
	x.k = append(x.k, k)
	x.v = append(x.v, v)
	return x
}

// style is one producer's JSON dialect.
type style struct {
	comma, colon string
	indent       string // "" writes one line
	ascii        bool   // escape every non-ASCII code point (Python's ensure_ascii)
	sortKeys     bool
}

var (
	// stCompact is JavaScript's JSON.stringify and Go's encoder without HTML escaping.
	stCompact = style{comma: ",", colon: ":"}
	// stPy is Python's json.dumps default, as Letta writes .af files.
	stPy = style{comma: ", ", colon: ": ", ascii: true}
	// stPyU is json.dumps with ensure_ascii=False.
	stPyU = style{comma: ", ", colon: ": "}
	// stPretty is json.dumps(indent=2) / JSON.stringify(v, null, 2).
	stPretty = style{comma: ",", colon: ": ", indent: "  "}
	// stJCS is RFC 8785 for the values this package writes (ASCII keys,
	// integers and short decimals only).
	stJCS = style{comma: ",", colon: ":", sortKeys: true}
)

func enc(v any, st style) string {
	var b strings.Builder
	encTo(&b, v, st, 0)
	return b.String()
}

func encTo(b *strings.Builder, v any, st style, depth int) {
	nl := func(d int) {
		if st.indent != "" {
			b.WriteByte('\n')
			for i := 0; i < d; i++ {
				b.WriteString(st.indent)
			}
		}
	}
	comma := st.comma
	if st.indent != "" {
		comma = ","
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	case string:
		quote(b, x, st.ascii)
	case []string:
		a := make([]any, len(x))
		for i, s := range x {
			a[i] = s
		}
		encTo(b, a, st, depth)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(comma)
			}
			nl(depth + 1)
			encTo(b, e, st, depth+1)
		}
		nl(depth)
		b.WriteByte(']')
	case *obj:
		if len(x.k) == 0 {
			b.WriteString("{}")
			return
		}
		idx := make([]int, len(x.k))
		for i := range idx {
			idx[i] = i
		}
		if st.sortKeys {
			sort.SliceStable(idx, func(i, j int) bool { return x.k[idx[i]] < x.k[idx[j]] })
		}
		b.WriteByte('{')
		for n, i := range idx {
			if n > 0 {
				b.WriteString(comma)
			}
			nl(depth + 1)
			quote(b, x.k[i], st.ascii)
			b.WriteString(st.colon)
			encTo(b, x.v[i], st, depth+1)
		}
		nl(depth)
		b.WriteByte('}')
	default:
		panic("realistic: unsupported JSON value")
	}
}

const hexDigits = "0123456789abcdef"

func quote(b *strings.Builder, s string, ascii bool) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		// Runs of characters written as they are go out in one piece.
		if c >= 0x20 && c != '"' && c != '\\' && (c < 0x7f || !ascii) {
			i++
			continue
		}
		b.WriteString(s[start:i])
		r, size := rune(c), 1
		if c >= 0x80 {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r > 0xffff {
				r -= 0x10000
				u4(b, 0xd800+(r>>10))
				u4(b, 0xdc00+(r&0x3ff))
			} else {
				u4(b, r)
			}
		}
		i += size
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

func u4(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	b.WriteByte(hexDigits[r>>12&0xf])
	b.WriteByte(hexDigits[r>>8&0xf])
	b.WriteByte(hexDigits[r>>4&0xf])
	b.WriteByte(hexDigits[r&0xf])
}
