// Package anthropic adapts Anthropic Messages records (anthropic-messages,
// level L0) to the SessionRecord of context-composition/v1 (ANNEX C-8):
// {messages, system?} or a bare array; string or block content; every
// block type adapts and none is a refusal ground.
package anthropic

import (
	"context"
	"slices"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// FormatID is the format this adapter serves.
const FormatID = "anthropic-messages"

// Adapter adapts anthropic-messages records.
type Adapter struct{}

// Describe names the family and format.
func (Adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "context-composition/v1", FormatId: FormatID, FormatVersions: []string{"2023-06-01"}, AdapterVersion: "0.1.0"}
}

func refuse() *pb.AdaptResponse {
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{
		Code: "record_does_not_parse_as_declared_format", Message: "the record is not an Anthropic messages list"}}}
}

type obj = map[string]any

// Adapt turns a record into a SessionRecord. The record is decoded once
// into a tree (exact member names, numbers kept as written) and walked:
// no part of it is scanned again, and a tool input's canonical text is
// written from the tree it already is.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	tree, err := sdk.DecodeJSON(req.GetRecord())
	if err != nil {
		return refuse()
	}
	var msgs []any
	rec := &pb.SessionRecord{Level: "L0"}
	switch top := tree.(type) {
	case []any:
		msgs = top
	case obj:
		m, ok := top["messages"].([]any)
		if !ok {
			return refuse()
		}
		msgs = m
		if sys, ok := top["system"]; ok && sys != nil {
			blocks, ok := content(sys)
			if !ok {
				return refuse()
			}
			rec.Messages = append(rec.Messages, &pb.Message{RoleRaw: "system", Blocks: blocks})
		}
	default:
		return refuse()
	}
	rec.Messages = slices.Grow(rec.Messages, len(msgs))
	for _, rm := range msgs {
		m, ok := rm.(obj)
		if !ok {
			return refuse()
		}
		role, _ := m["role"].(string)
		blocks, ok := content(m["content"])
		if !ok {
			return refuse()
		}
		rec.Messages = append(rec.Messages, &pb.Message{RoleRaw: role, Blocks: blocks})
	}
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Record{Record: rec}}
}

// content adapts a content member: a string is one text block; an array is
// one or more blocks per element.
func content(v any) ([]*pb.Block, bool) {
	switch c := v.(type) {
	case string:
		return []*pb.Block{text("text", c)}, true
	case []any:
		var out []*pb.Block
		for _, rp := range c {
			p, ok := rp.(obj)
			if !ok {
				return nil, false
			}
			out = append(out, blocksOf(p)...)
		}
		return out, true
	}
	return nil, false
}

func blocksOf(p obj) []*pb.Block {
	typ, _ := p["type"].(string)
	switch typ {
	case "text":
		t, _ := p["text"].(string)
		return []*pb.Block{text(typ, t)}
	case "tool_use", "server_tool_use":
		name, _ := p["name"].(string)
		b := canonical(typ, p, "input")
		b.Name, b.HasArgs = name, true
		return []*pb.Block{b}
	case "tool_result":
		if s, ok := p["content"].(string); ok {
			return []*pb.Block{text(typ, s)}
		}
		inner, ok := content(p["content"])
		if !ok || len(inner) == 0 {
			return []*pb.Block{nonSerialisable(typ)}
		}
		for _, b := range inner {
			b.KindRaw = typ
		}
		return inner
	case "thinking":
		t, _ := p["thinking"].(string)
		return []*pb.Block{text(typ, t)}
	case "redacted_thinking", "image":
		return []*pb.Block{nonSerialisable(typ)}
	case "document":
		src, _ := p["source"].(obj)
		if st, _ := src["type"].(string); st == "text" {
			d, _ := src["data"].(string)
			return []*pb.Block{text(typ, d)}
		}
		return []*pb.Block{nonSerialisable(typ)}
	case "search_result":
		return []*pb.Block{canonical(typ, p, "content")}
	}
	if len(typ) > len("_tool_result") && typ[len(typ)-len("_tool_result"):] == "_tool_result" {
		return []*pb.Block{canonical(typ, p, "content")}
	}
	if t, ok := p["text"].(string); ok {
		return []*pb.Block{text(typ, t)}
	}
	return []*pb.Block{nonSerialisable(typ)}
}

func text(kind, s string) *pb.Block {
	return &pb.Block{KindRaw: kind, Content: &pb.Block_Text{Text: s}}
}

func nonSerialisable(kind string) *pb.Block {
	return &pb.Block{KindRaw: kind, Content: &pb.Block_NonSerialisable{NonSerialisable: true}}
}

// canonical is a member's RFC 8785 serialization (the same bytes in every
// implementation); a missing member is non-serialisable.
func canonical(kind string, p obj, member string) *pb.Block {
	v, ok := p[member]
	if !ok {
		return nonSerialisable(kind)
	}
	c, err := sdk.CanonicalJSON(v)
	if err != nil {
		return nonSerialisable(kind)
	}
	return text(kind, string(c))
}
