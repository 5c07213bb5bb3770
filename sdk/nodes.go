package sdk

import (
	"bytes"
	"errors"
	"slices"
	"unicode/utf8"
	"unsafe"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Node is a JSON value located in its document: its kind (the first byte:
// '{', '[', '"', 'n', 't', 'f', or '0' for a number), its byte span, and
// for containers their children. Adapters walk a record as Nodes: one
// scan, no value copied, and a string's text can go back to the family as
// a span (pb.Block.text_span) instead of bytes.
type Node struct {
	Kind       byte
	Start, End int
	Members    []NamedNode // an object's members, in order
	Elems      []Node      // an array's elements
}

// NamedNode is one object member.
type NamedNode struct {
	Name string
	Node Node
}

// ErrNotJSON is a document that is not one valid JSON value.
var ErrNotJSON = errors.New("not a JSON document")

// ParseNodes locates every value of a JSON document.
//
// Children are collected on one scratch stack and each container's are
// then copied into slabs allocated a few thousand at a time, so a 5 MiB
// record's hundred thousand nodes cost their own size and no appends'
// doubling; member names repeat (a record has a handful of distinct ones)
// and are stored once per parse.
func ParseNodes(doc []byte) (Node, error) {
	if !ValidJSON(doc) {
		return Node{}, ErrNotJSON
	}
	p := nodeParser{doc: doc, names: map[string]string{}, elemGrow: 8, memberGrow: 8}
	n, _ := p.parse(skipSpace(doc, 0))
	return n, nil
}

// nodeParser holds one parse's scratch stacks, slabs and names.
type nodeParser struct {
	doc         []byte
	elemStack   []Node
	memberStack []NamedNode
	elemSlab    []Node
	memberSlab  []NamedNode
	names       map[string]string
	// slabs start small and double up to slabMax: most documents parsed
	// (a tool call's arguments) are tiny
	elemGrow, memberGrow int
}

// slabMax is how many nodes a full-grown slab holds.
const slabMax = 4096

// handOver is how many children make a container take the stack's array
// rather than a copy in a slab.
const handOver = 4 * slabMax

// parse parses the (valid) value at doc[i] and returns the index after it.
func (p *nodeParser) parse(i int) (Node, int) {
	doc := p.doc
	n := Node{Kind: doc[i], Start: i}
	switch doc[i] {
	case '{':
		base := len(p.memberStack)
		i = skipSpace(doc, i+1)
		for doc[i] != '}' {
			end := stringEnd(doc, i)
			name := p.name(doc[i:end])
			i = skipSpace(doc, skipSpace(doc, end)+1)
			var child Node
			child, i = p.parse(i)
			p.memberStack = push(p.memberStack, NamedNode{Name: name, Node: child})
			if i = skipSpace(doc, i); doc[i] == ',' {
				i = skipSpace(doc, i+1)
			}
		}
		i++
		n.Members = carve(&p.memberStack, base, &p.memberSlab, &p.memberGrow)
	case '[':
		base := len(p.elemStack)
		i = skipSpace(doc, i+1)
		for doc[i] != ']' {
			var child Node
			child, i = p.parse(i)
			p.elemStack = push(p.elemStack, child)
			if i = skipSpace(doc, i); doc[i] == ',' {
				i = skipSpace(doc, i+1)
			}
		}
		i++
		n.Elems = carve(&p.elemStack, base, &p.elemSlab, &p.elemGrow)
	case '"':
		i = stringEnd(doc, i)
	default:
		if doc[i] == '-' || doc[i] >= '0' && doc[i] <= '9' {
			n.Kind = '0'
		}
		i = valueEnd(doc, i)
	}
	n.End = i
	return n, i
}

// push appends v, doubling a full stack: append grows a large slice by a
// quarter, which for an array of millions of values copies the stack four
// times over.
func push[T any](stack []T, v T) []T {
	if len(stack) == cap(stack) {
		stack = slices.Grow(stack, max(len(stack), 64))
	}
	return append(stack, v)
}

// carve moves the children a container pushed (stack[base:]) into the
// slab, starting a new slab, grow long, when this one is too short, and
// returns them (nil for none).
func carve[T any](stack *[]T, base int, slab *[]T, grow *int) []T {
	k := len(*stack) - base
	if k == 0 {
		return nil
	}
	if k >= handOver {
		// a container of many children keeps the stack's own array, cut
		// off where they end: copying them would hold them twice at once
		out := (*stack)[base:len(*stack):len(*stack)]
		*stack = (*stack)[:base:base]
		return out
	}
	if len(*slab) < k {
		*slab = make([]T, max(k, *grow))
		*grow = min(2**grow, slabMax)
	}
	out := (*slab)[:k:k]
	copy(out, (*stack)[base:])
	*slab = (*slab)[k:]
	clear((*stack)[base:])
	*stack = (*stack)[:base]
	return out
}

// name decodes a member name, once per distinct spelling for the first
// few hundred short ones (a document of many distinct names, such as a
// map keyed by ids, gains nothing from keeping them).
func (p *nodeParser) name(raw []byte) string {
	if s, ok := p.names[string(raw)]; ok {
		return s
	}
	s, _ := StringOf(raw)
	if len(raw) <= 64 && len(p.names) < 512 {
		p.names[string(raw)] = s
	}
	return s
}

// Get is an object's member (the last of duplicates, as encoding/json).
func (n Node) Get(name string) (Node, bool) {
	for i := len(n.Members) - 1; i >= 0; i-- {
		if n.Members[i].Name == name {
			return n.Members[i].Node, true
		}
	}
	return Node{}, false
}

// Raw is the value's bytes.
func (n Node) Raw(doc []byte) []byte { return doc[n.Start:n.End] }

// String decodes a string value; ok is false for any other kind.
func (n Node) String(doc []byte) (string, bool) {
	if n.Kind != '"' {
		return "", false
	}
	return StringOf(doc[n.Start:n.End])
}

// TextSpan is a string value's contents as a span of doc when they need no
// decoding (no escape, valid UTF-8); ok is false otherwise.
func (n Node) TextSpan(doc []byte) (*pb.Span, bool) {
	if n.Kind != '"' {
		return nil, false
	}
	inner := doc[n.Start+1 : n.End-1]
	if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
		return nil, false
	}
	return &pb.Span{Offset: uint64(n.Start + 1), Length: uint64(len(inner))}, true
}

// ResolveTextSpans replaces every block's text_span with the text it names
// in record. A span yields nothing an adapter could not have sent inline
// (the adapter is pinned and trusted with the record), so only what keeps
// the record well-formed is checked: the span lies inside the record and
// its bytes are valid UTF-8.
//
// The texts share record's memory (a 5 MiB record's texts are not copied
// again), so record must not change afterwards: the SDK resolves spans
// only against bodies it owns and never writes.
func ResolveTextSpans(rec *pb.SessionRecord, record []byte) error {
	for _, m := range rec.GetMessages() {
		for _, b := range m.GetBlocks() {
			span := b.GetTextSpan()
			if span == nil {
				continue
			}
			t, err := SpanOf(record, span)
			if err != nil {
				return err
			}
			if !utf8.Valid(t) {
				return ErrSpan
			}
			b.TextSpan = nil
			b.Content = &pb.Block_Text{Text: unsafe.String(unsafe.SliceData(t), len(t))}
		}
	}
	return nil
}
