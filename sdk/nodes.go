package sdk

import (
	"bytes"
	"errors"
	"unicode/utf8"

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
func ParseNodes(doc []byte) (Node, error) {
	if !ValidJSON(doc) {
		return Node{}, ErrNotJSON
	}
	n, _ := parseNode(doc, skipSpace(doc, 0))
	return n, nil
}

// parseNode parses the (valid) value at doc[i] and returns the index after it.
func parseNode(doc []byte, i int) (Node, int) {
	n := Node{Kind: doc[i], Start: i}
	switch doc[i] {
	case '{':
		i = skipSpace(doc, i+1)
		for doc[i] != '}' {
			end := stringEnd(doc, i)
			name, _ := StringOf(doc[i:end])
			i = skipSpace(doc, skipSpace(doc, end)+1)
			var child Node
			child, i = parseNode(doc, i)
			n.Members = append(n.Members, NamedNode{Name: name, Node: child})
			if i = skipSpace(doc, i); doc[i] == ',' {
				i = skipSpace(doc, i+1)
			}
		}
		i++
	case '[':
		i = skipSpace(doc, i+1)
		for doc[i] != ']' {
			var child Node
			child, i = parseNode(doc, i)
			n.Elems = append(n.Elems, child)
			if i = skipSpace(doc, i); doc[i] == ',' {
				i = skipSpace(doc, i+1)
			}
		}
		i++
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
			b.Content = &pb.Block_Text{Text: string(t)}
		}
	}
	return nil
}
