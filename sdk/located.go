package sdk

import (
	"bytes"
	"errors"
	"iter"
	"math"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ErrNotJSON is a document that is not one valid JSON value.
var ErrNotJSON = errors.New("not a JSON document")

// Doc is a JSON document located for walking: adapters read a record as
// Values, and a string's text can go back to the family as a span
// (pb.Block.text_span) instead of bytes.
//
// Locating records only the document's strings and containers, 12 bytes
// each, in one flat array filled by the validating scan; numbers and
// literals are read where they stand, and nothing is decoded until it is
// asked for. So a value no one reads costs no more than its scan: an
// array of millions of numbers costs nothing, one of millions of empty
// objects 12 bytes each (a tree of nodes cost 72 bytes for every value,
// and 0.5 GB for a 5 MiB array of zeros). A container's entry says where
// its subtree's entries end, so walking past a value is one step however
// large it is.
type Doc struct {
	src  []byte
	tape []located
}

// located is a string or container of a Doc: its bytes, and for a
// container the tape index after its subtree (a string's is its own
// index plus one).
type located struct{ start, end, after uint32 }

// Locate validates doc (as ValidJSON) and locates its strings and
// containers. doc must not change while the Doc is used. A document of
// 4 GiB or more is refused (ErrNotJSON): offsets are 32-bit.
func Locate(doc []byte) (*Doc, error) {
	if uint64(len(doc)) >= math.MaxUint32 {
		return nil, ErrNotJSON
	}
	d := &Doc{src: doc, tape: make([]located, 0, tapeSize(doc))}
	i, ok := validValue(doc, skipSpace(doc, 0), 0, &d.tape)
	if !ok || skipSpace(doc, i) != len(doc) {
		return nil, ErrNotJSON
	}
	return d, nil
}

// tapeSize estimates how many strings and containers doc holds, from its
// quotes (less the escaped ones), braces and brackets, so the tape is
// allocated once: grown by append, a 5 MiB record's tape was allocated
// about five times over (large slices grow by a quarter). Counting bytes
// is a fraction of the scan. Braces inside strings make it an
// overestimate, bounded by the most entries a document of that size can
// hold; a short estimate only means append grows the rest.
func tapeSize(doc []byte) int {
	quotes := bytes.Count(doc, []byte{'"'}) - bytes.Count(doc, []byte{'\\', '"'})
	n := quotes/2 + bytes.Count(doc, []byte{'{'}) + bytes.Count(doc, []byte{'['})
	return min(n, len(doc)/2+1) // "" and {} are the smallest entries
}

// Root is the document's value.
func (d *Doc) Root() Value { return d.valueAt(skipSpace(d.src, 0), 0) }

// valueAt is the value starting at src[i], whose tape entry (if it has
// one) is at t.
func (d *Doc) valueAt(i int, t uint32) Value {
	v := Value{Kind: d.src[i], Start: i, d: d, t: t}
	switch v.Kind {
	case '"', '{', '[':
		v.End = int(d.tape[t].end)
	default:
		if v.Kind == '-' || v.Kind >= '0' && v.Kind <= '9' {
			v.Kind = '0'
		}
		v.End = valueEnd(d.src, i)
	}
	return v
}

// Value is one value of a located document: its kind (the first byte:
// '{', '[', '"', 'n', 't', 'f', or '0' for a number) and its byte span.
// The zero Value is no value (kind 0): an absent member. Only Values a
// Doc gave are readable: the methods trust their fields.
type Value struct {
	Kind       byte
	Start, End int
	d          *Doc
	t          uint32 // tape index of this value, or of the next entry
}

// next is the tape index after v's subtree.
func (v Value) next() uint32 {
	switch v.Kind {
	case '"', '{', '[':
		return v.d.tape[v.t].after
	}
	return v.t
}

// cursor walks a container's children in order without allocating (the
// iterators and Get are built on it).
type cursor struct {
	d      *Doc
	i, end int    // the next child's byte, the container's closing byte
	t      uint32 // the next child's tape index
	object bool
}

// cursor starts a walk of v's children (none unless v is a container).
func (v Value) cursor() cursor {
	if v.Kind != '{' && v.Kind != '[' {
		return cursor{}
	}
	return cursor{d: v.d, i: skipSpace(v.d.src, v.Start+1), end: v.End - 1, t: v.t + 1, object: v.Kind == '{'}
}

// next is the next child: for an object its name (a string Value) and
// value, for an array a zero name and the element; ok is false at the end.
func (c *cursor) next() (name, value Value, ok bool) {
	if c.i >= c.end {
		return Value{}, Value{}, false
	}
	src := c.d.src
	if c.object {
		name = c.d.valueAt(c.i, c.t)
		c.t = name.next()
		c.i = skipSpace(src, skipSpace(src, name.End)+1) // past the colon
	}
	value = c.d.valueAt(c.i, c.t)
	c.t = value.next()
	if c.i = skipSpace(src, value.End); src[c.i] == ',' {
		c.i = skipSpace(src, c.i+1)
	}
	return name, value, true
}

// Elems yields an array's elements in order (nothing for any other kind).
func (v Value) Elems() iter.Seq[Value] {
	return func(yield func(Value) bool) {
		if v.Kind != '[' {
			return
		}
		for c := v.cursor(); ; {
			_, e, ok := c.next()
			if !ok || !yield(e) {
				return
			}
		}
	}
}

// Members yields an object's members in order, duplicates included: each
// name (a string Value: Is compares it, String decodes it) and value.
func (v Value) Members() iter.Seq2[Value, Value] {
	return func(yield func(Value, Value) bool) {
		if v.Kind != '{' {
			return
		}
		for c := v.cursor(); ; {
			k, m, ok := c.next()
			if !ok || !yield(k, m) {
				return
			}
		}
	}
}

// Len is how many elements or members a container has (0 for any other
// kind). It walks the container each time it is asked.
func (v Value) Len() int {
	n := 0
	for c := v.cursor(); ; n++ {
		if _, _, ok := c.next(); !ok {
			return n
		}
	}
}

// Get is an object's member (the last of duplicates, as encoding/json).
func (v Value) Get(name string) (Value, bool) {
	var found Value
	ok := false
	if v.Kind != '{' {
		return found, false
	}
	for c := v.cursor(); ; {
		k, m, more := c.next()
		if !more {
			return found, ok
		}
		if k.Is(name) {
			found, ok = m, true
		}
	}
}

// Pick sets out[i] to the member named names[i] (the last of duplicates,
// as Get; a zero Value when there is none) in one walk of the object, where
// a Get for each would walk it once per name. out must be as long as names;
// nothing is set when v is not an object.
func (v Value) Pick(names []string, out []Value) {
	clear(out)
	if v.Kind != '{' {
		return
	}
	for c := v.cursor(); ; {
		k, m, more := c.next()
		if !more {
			return
		}
		inner := v.d.src[k.Start+1 : k.End-1]
		if plainContents(inner) {
			for i, n := range names {
				if string(inner) == n { // the name's text is its bytes
					out[i] = m
				}
			}
			continue
		}
		for i, n := range names {
			if k.Is(n) {
				out[i] = m
			}
		}
	}
}

// Is reports whether v is a string whose text (as String decodes it) is
// s. It allocates nothing for a name of up to 64 bytes.
func (v Value) Is(s string) bool {
	if v.Kind != '"' {
		return false
	}
	inner := v.d.src[v.Start+1 : v.End-1]
	if plainContents(inner) {
		return string(inner) == s
	}
	if len(inner) > 6*len(s) { // an escape is at most 6 bytes for 1
		return false
	}
	var buf [64]byte
	return string(appendText(buf[:0], inner)) == s
}

// Raw is the value's bytes.
func (v Value) Raw() []byte {
	if v.d == nil {
		return nil
	}
	return v.d.src[v.Start:v.End]
}

// String decodes a string value; ok is false for any other kind.
func (v Value) String() (string, bool) {
	if v.Kind != '"' {
		return "", false
	}
	return StringOf(v.d.src[v.Start:v.End])
}

// TextSpan is a string value's contents as a span of the document when
// they need no decoding (no escape, valid UTF-8); ok is false otherwise.
func (v Value) TextSpan() (*pb.Span, bool) {
	return v.TextSpanFor(false)
}

// TextSpanFor is TextSpan, and, when jsonStrings is set (the request's
// json_string_spans: the family's SDK decodes such spans itself), also
// the span of a string that needs decoding, marked json_string: then
// every string value is a span, and ok is false only for other kinds.
func (v Value) TextSpanFor(jsonStrings bool) (*pb.Span, bool) {
	if v.Kind != '"' {
		return nil, false
	}
	inner := v.d.src[v.Start+1 : v.End-1]
	span := &pb.Span{Offset: uint64(v.Start + 1), Length: uint64(len(inner))}
	if !plainContents(inner) {
		if !jsonStrings {
			return nil, false
		}
		span.JsonString = true
	}
	return span, true
}
