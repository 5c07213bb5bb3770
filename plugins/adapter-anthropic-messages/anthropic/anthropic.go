// Package anthropic adapts Anthropic Messages records (anthropic-messages,
// level L0) to the SessionRecord of context-composition/v1 (ANNEX C-8):
// {messages, system?} or a bare array; string or block content; every
// block type adapts and none is a refusal ground.
package anthropic

import (
	"context"
	"encoding/json"

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

type obj = map[string]json.RawMessage

// Adapt turns a record into a SessionRecord.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	raw := req.GetRecord()
	var msgs []json.RawMessage
	rec := &pb.SessionRecord{Level: "L0"}
	switch {
	case sdk.JSONKind(raw, '['):
		if json.Unmarshal(raw, &msgs) != nil {
			return refuse()
		}
	case sdk.JSONKind(raw, '{'):
		var top obj
		if json.Unmarshal(raw, &top) != nil || !sdk.JSONKind(top["messages"], '[') || json.Unmarshal(top["messages"], &msgs) != nil {
			return refuse()
		}
		if sys, ok := top["system"]; ok && !sdk.JSONKind(sys, 'n') {
			blocks, ok := content(sys)
			if !ok {
				return refuse()
			}
			rec.Messages = append(rec.Messages, &pb.Message{RoleRaw: "system", Blocks: blocks})
		}
	default:
		return refuse()
	}
	for _, rm := range msgs {
		var m obj
		if !sdk.JSONKind(rm, '{') || json.Unmarshal(rm, &m) != nil {
			return refuse()
		}
		role, _ := str(m["role"])
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
func content(raw json.RawMessage) ([]*pb.Block, bool) {
	if s, ok := str(raw); ok {
		return []*pb.Block{text("text", s)}, true
	}
	var parts []json.RawMessage
	if !sdk.JSONKind(raw, '[') || json.Unmarshal(raw, &parts) != nil {
		return nil, false
	}
	var out []*pb.Block
	for _, rp := range parts {
		var p obj
		if !sdk.JSONKind(rp, '{') || json.Unmarshal(rp, &p) != nil {
			return nil, false
		}
		out = append(out, blocksOf(p)...)
	}
	return out, true
}

func blocksOf(p obj) []*pb.Block {
	typ, _ := str(p["type"])
	switch typ {
	case "text":
		t, _ := str(p["text"])
		return []*pb.Block{text(typ, t)}
	case "tool_use", "server_tool_use":
		name, _ := str(p["name"])
		b := canonical(typ, p["input"])
		b.Name, b.HasArgs = name, true
		return []*pb.Block{b}
	case "tool_result":
		if s, ok := str(p["content"]); ok {
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
		t, _ := str(p["thinking"])
		return []*pb.Block{text(typ, t)}
	case "redacted_thinking", "image":
		return []*pb.Block{nonSerialisable(typ)}
	case "document":
		var src obj
		_ = json.Unmarshal(p["source"], &src)
		if st, _ := str(src["type"]); st == "text" {
			d, _ := str(src["data"])
			return []*pb.Block{text(typ, d)}
		}
		return []*pb.Block{nonSerialisable(typ)}
	case "search_result":
		return []*pb.Block{canonical(typ, p["content"])}
	}
	if len(typ) > len("_tool_result") && typ[len(typ)-len("_tool_result"):] == "_tool_result" {
		return []*pb.Block{canonical(typ, p["content"])}
	}
	if t, ok := str(p["text"]); ok {
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
// implementation); a missing or malformed member is non-serialisable.
func canonical(kind string, raw json.RawMessage) *pb.Block {
	if len(raw) == 0 {
		return nonSerialisable(kind)
	}
	tree, err := sdk.DecodeJSON(raw)
	if err != nil {
		return nonSerialisable(kind)
	}
	c, err := sdk.CanonicalJSON(tree)
	if err != nil {
		return nonSerialisable(kind)
	}
	return text(kind, string(c))
}

func str(raw json.RawMessage) (string, bool) {
	if raw == nil || !sdk.JSONKind(raw, '"') {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
