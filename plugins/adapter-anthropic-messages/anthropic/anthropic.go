// Package anthropic adapts Anthropic Messages records (anthropic-messages,
// level L0) to the SessionRecord of context-composition/v1 (ANNEX C-8):
// {messages, system?} or a bare array; string or block content; every
// block type adapts and none is a refusal ground.
package anthropic

import (
	"context"
	_ "embed"
	"slices"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// FormatID is the format this adapter serves.
const FormatID = "anthropic-messages"

// Adapter adapts anthropic-messages records.
type Adapter struct{}

// recordSchema is the record's shape (ANNEX C-8), as JSON Schema: what
// Adapt accepts, never less (adaptertest checks it admits every valid
// record).
//
//go:embed record.schema.json
var recordSchema []byte

// Describe names the family and format, and the record's shape.
func (Adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "context-composition/v1", FormatId: FormatID, FormatVersions: []string{"2023-06-01"}, AdapterVersion: "0.1.0",
		RecordSchema: recordSchema}
}

// adapter is one Adapt call's reading: jsonSpans is the request's
// json_string_spans (escaped texts may go back as spans too).
type adapter struct{ jsonSpans bool }

func refuse() *pb.AdaptResponse {
	return sdk.Refuse(sdk.RecordDoesNotParse, "the record is not an Anthropic messages list")
}

// Adapt turns a record into a SessionRecord. The record is located once
// (sdk.Locate: one scan, nothing copied) and walked; a text that needs
// no decoding goes back as a span of the record, so the texts do not cross
// the process boundary a second time, and a tool input's canonical text is
// written from that input alone.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	a := adapter{jsonSpans: req.GetJsonStringSpans()}
	doc, err := sdk.Locate(req.GetRecord())
	if err != nil {
		return refuse()
	}
	top := doc.Root()
	var msgs sdk.Value
	rec := sdk.Record(sdk.L0)
	switch top.Kind {
	case '[':
		msgs = top
	case '{':
		m, ok := top.Get("messages")
		if !ok || m.Kind != '[' {
			return refuse()
		}
		msgs = m
		if sys, ok := top.Get("system"); ok && sys.Kind != 'n' {
			blocks, ok := a.content(sys)
			if !ok {
				return refuse()
			}
			rec.Messages = append(rec.Messages, sdk.Message("system", blocks...))
		}
	default:
		return refuse()
	}
	rec.Messages = slices.Grow(rec.Messages, msgs.Len())
	for m := range msgs.Elems() {
		if m.Kind != '{' {
			return refuse()
		}
		role := ""
		if r, ok := m.Get("role"); ok {
			role, _ = r.String()
		}
		c, _ := m.Get("content")
		blocks, ok := a.content(c)
		if !ok {
			return refuse()
		}
		rec.Messages = append(rec.Messages, sdk.Message(role, blocks...))
	}
	return sdk.Adapted(rec)
}

// content adapts a content member: a string is one text block; an array is
// one or more blocks per element; anything else (absent included) does
// not parse as the format.
func (a adapter) content(n sdk.Value) ([]*pb.Block, bool) {
	switch n.Kind {
	case '"':
		return []*pb.Block{a.text(sdk.KindText, n)}, true
	case '[':
		var out []*pb.Block
		ok := a.appendArray(&out, n, "")
		return out, ok
	}
	return nil, false
}

// appendArray appends the blocks of an array of block objects to out,
// each of kind when kind is set (a tool_result's inner blocks take its
// kind); an element that is not an object fails the array. One slice
// grows through every level of nesting, so a tool_result nested thousands
// deep costs its blocks once, not once per level.
func (a adapter) appendArray(out *[]*pb.Block, n sdk.Value, kind sdk.Kind) bool {
	for p := range n.Elems() {
		if p.Kind != '{' {
			return false
		}
		a.appendBlocks(out, p, kind)
	}
	return true
}

func str(p sdk.Value, name string) (string, bool) {
	n, ok := p.Get(name)
	if !ok {
		return "", false
	}
	return n.String()
}

// textOf is a member as a text block when it is a string; ok is false
// otherwise.
func (a adapter) textOf(kind sdk.Kind, p sdk.Value, name string) (*pb.Block, bool) {
	n, ok := p.Get(name)
	if !ok || n.Kind != '"' {
		return nil, false
	}
	return a.text(kind, n), true
}

// appendBlocks appends one block object's blocks: one, or a tool_result's
// inner blocks (none readable: one non-serialisable block in their place).
func (a adapter) appendBlocks(out *[]*pb.Block, p sdk.Value, kind sdk.Kind) {
	name, _ := str(p, "type")
	typ := sdk.Kind(name)
	if typ == sdk.KindToolResult {
		if kind == "" {
			kind = typ
		}
		c, _ := p.Get("content")
		if c.Kind == '"' {
			*out = append(*out, a.text(kind, c))
			return
		}
		before := len(*out)
		if c.Kind != '[' || !a.appendArray(out, c, kind) || len(*out) == before {
			*out = append((*out)[:before], sdk.NonSerialisableBlock(kind))
		}
		return
	}
	b := a.blockOf(typ, p)
	if kind != "" {
		b.KindRaw = string(kind)
	}
	*out = append(*out, b)
}

// blockOf is the one block of a block object other than a tool_result.
func (a adapter) blockOf(typ sdk.Kind, p sdk.Value) *pb.Block {
	switch typ {
	case sdk.KindText:
		if b, ok := a.textOf(typ, p, "text"); ok {
			return b
		}
		return sdk.TextBlock(typ, "")
	case "tool_use", "server_tool_use":
		name, _ := str(p, "name")
		b := a.canonical(typ, p, "input")
		b.Name, b.HasArgs = name, true
		return b
	case "thinking":
		if b, ok := a.textOf(typ, p, "thinking"); ok {
			return b
		}
		return sdk.TextBlock(typ, "")
	case "redacted_thinking", "image":
		return sdk.NonSerialisableBlock(typ)
	case "document":
		src, _ := p.Get("source")
		if st, _ := str(src, "type"); src.Kind == '{' && st == "text" {
			if b, ok := a.textOf(typ, src, "data"); ok {
				return b
			}
			return sdk.TextBlock(typ, "")
		}
		return sdk.NonSerialisableBlock(typ)
	case "search_result":
		return a.canonical(typ, p, "content")
	}
	if len(typ) > len("_tool_result") && typ[len(typ)-len("_tool_result"):] == "_tool_result" {
		return a.canonical(typ, p, "content")
	}
	if b, ok := a.textOf(typ, p, "text"); ok {
		return b
	}
	return sdk.NonSerialisableBlock(typ)
}

// text is a string node as a block: a span of the record when its
// contents need no decoding (with jsonSpans, whatever they hold), else the
// decoded text.
func (a adapter) text(kind sdk.Kind, n sdk.Value) *pb.Block {
	if b, ok := sdk.StringBlock(kind, n, a.jsonSpans); ok {
		return b
	}
	return sdk.TextBlock(kind, "")
}

// canonical is a member's RFC 8785 serialization (the same bytes in every
// implementation); a missing member is non-serialisable. A member already
// written in that form is answered as a span of the record.
func (a adapter) canonical(kind sdk.Kind, p sdk.Value, member string) *pb.Block {
	n, ok := p.Get(member)
	if !ok {
		return sdk.NonSerialisableBlock(kind)
	}
	if sdk.IsCanonicalJSON(n.Raw()) { // canonical JSON is valid UTF-8
		return sdk.SpanBlock(kind, &pb.Span{Offset: uint64(n.Start), Length: uint64(n.End - n.Start)})
	}
	c, err := sdk.Canonicalize(n.Raw())
	if err != nil {
		return sdk.NonSerialisableBlock(kind)
	}
	return sdk.TextBlock(kind, string(c))
}
