// Package generic adapts the generic-message-list format of
// context-composition/v1 (ANNEX C-8): one message, one block; text null is
// a non-serialisable block; the level (L0, L1, L2) follows from content.
package generic

import (
	"context"
	"encoding/json"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// FormatID is the format this adapter serves.
const FormatID = "generic-message-list"

// Adapter adapts generic-message-list records.
type Adapter struct{}

// Describe names the family and format.
func (Adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "context-composition/v1", FormatId: FormatID, FormatVersions: []string{"1"}, AdapterVersion: "0.1.0"}
}

func refuse() *pb.AdaptResponse {
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{
		Code: "record_does_not_parse_as_declared_format", Message: "the record is not a generic message list"}}}
}

type entry struct {
	Role         *string         `json:"role"`
	Kind         *string         `json:"kind"`
	Name         *string         `json:"name"`
	HasArgs      *bool           `json:"has_args"`
	Source       *string         `json:"source"`
	Text         json.RawMessage `json:"text"` // "null" when null, empty when missing
	StatedTokens json.RawMessage `json:"stated_tokens"`
}

type record struct {
	Messages    *[]json.RawMessage `json:"messages"`
	ToolSchemas *[]json.RawMessage `json:"tool_schemas"`
	StatedTotal json.RawMessage    `json:"stated_total"`
}

// Adapt turns a record into a SessionRecord.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	var r record
	if !sdk.JSONKind(req.GetRecord(), '{') || json.Unmarshal(req.GetRecord(), &r) != nil || r.Messages == nil {
		return refuse()
	}
	out := &pb.SessionRecord{}
	if n, present, ok := statedInt(r.StatedTotal); !ok {
		return refuse()
	} else if present {
		out.HasStatedTotal, out.StatedTotal = true, n
	}
	l2, l1 := false, false
	if r.ToolSchemas != nil && len(*r.ToolSchemas) > 0 {
		l2 = true
		schema := &pb.Message{Schema: true}
		for _, raw := range *r.ToolSchemas {
			var e entry
			if !sdk.JSONKind(raw, '{') || json.Unmarshal(raw, &e) != nil {
				return refuse()
			}
			b, ok := block(e)
			if !ok {
				return refuse()
			}
			b.KindRaw = "tool_definition"
			schema.Blocks = append(schema.Blocks, b)
		}
		out.Messages = append(out.Messages, schema)
	}
	for _, raw := range *r.Messages {
		var e entry
		if !sdk.JSONKind(raw, '{') || json.Unmarshal(raw, &e) != nil || len(e.Text) == 0 {
			return refuse()
		}
		b, ok := block(e)
		if !ok {
			return refuse()
		}
		if e.Kind != nil && *e.Kind != "" {
			l2 = true
		}
		if e.Name != nil || e.HasArgs != nil || e.Source != nil {
			l1 = true
		}
		role := ""
		if e.Role != nil {
			role = *e.Role
		}
		out.Messages = append(out.Messages, &pb.Message{RoleRaw: role, Blocks: []*pb.Block{b}})
	}
	switch {
	case l2:
		out.Level = "L2"
	case l1:
		out.Level = "L1"
	default:
		out.Level = "L0"
	}
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Record{Record: out}}
}

// block builds one block; ok is false for a text that is neither a string
// nor null, or a stated count that is not a whole number.
func block(e entry) (*pb.Block, bool) {
	b := &pb.Block{}
	if e.Kind != nil {
		b.KindRaw = *e.Kind
	}
	if e.Name != nil {
		b.Name = *e.Name
	}
	if e.HasArgs != nil {
		b.HasArgs = *e.HasArgs
	}
	if e.Source != nil {
		b.Source = *e.Source
	}
	switch {
	case len(e.Text) == 0 || sdk.JSONKind(e.Text, 'n'):
		b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
	case sdk.JSONKind(e.Text, '"'):
		var s string
		if json.Unmarshal(e.Text, &s) != nil {
			return nil, false
		}
		b.Content = &pb.Block_Text{Text: s}
	default:
		return nil, false
	}
	n, present, ok := statedInt(e.StatedTokens)
	if !ok {
		return nil, false
	}
	b.HasStatedTokens, b.StatedTokens = present, n
	return b, true
}

// statedInt reads a stated figure: absent or null is not stated; an
// integer is carried as stated (the family decides whether it is a valid
// count); anything else does not parse as the format.
func statedInt(raw json.RawMessage) (n int64, present, ok bool) {
	if len(raw) == 0 || sdk.JSONKind(raw, 'n') {
		return 0, false, true
	}
	if json.Unmarshal(raw, &n) != nil {
		return 0, false, false
	}
	return n, true, true
}
