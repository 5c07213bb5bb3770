// Package generic adapts the generic-message-list format of
// context-composition/v1 (ANNEX C-8): one message, one block; text null is
// a non-serialisable block; the level (L0, L1, L2) follows from content.
package generic

import (
	"context"
	_ "embed"
	"encoding/json"
	"slices"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// FormatID is the format this adapter serves.
const FormatID = "generic-message-list"

// Adapter adapts generic-message-list records.
type Adapter struct{}

// recordSchema is the record's shape (ANNEX C-8), as JSON Schema: what
// Adapt accepts, never less (adaptertest checks it admits every valid
// record).
//
//go:embed record.schema.json
var recordSchema []byte

// Describe names the family and format, and the record's shape.
func (Adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "context-composition/v1", FormatId: FormatID, FormatVersions: []string{"1"}, AdapterVersion: "0.1.0",
		RecordSchema: recordSchema}
}

func refuse() *pb.AdaptResponse {
	return sdk.Refuse(sdk.RecordDoesNotParse, "the record is not a generic message list")
}

type entry struct {
	Role, Kind, Name, Source *string
	HasArgs                  *bool
	Text                     *sdk.Value // nil when missing
	StatedTokens             json.RawMessage
}

// Adapt turns a record into a SessionRecord. Member names are matched
// exactly (JSON is case-sensitive; the published envelope names them), and
// the record is located once (sdk.Locate): texts go back as spans.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	doc, err := sdk.Locate(req.GetRecord())
	if err != nil {
		return refuse()
	}
	top := doc.Root()
	if top.Kind != '{' {
		return refuse()
	}
	msgs, ok := top.Get("messages")
	if !ok || msgs.Kind != '[' {
		return refuse()
	}
	out := &pb.SessionRecord{}
	var statedTotal json.RawMessage
	if st, ok := top.Get("stated_total"); ok {
		statedTotal = st.Raw()
	}
	if n, present, ok := statedInt(statedTotal); !ok {
		return refuse()
	} else if present {
		out.HasStatedTotal, out.StatedTotal = true, n
	}
	l2, l1 := false, false
	if ts, ok := top.Get("tool_schemas"); ok && ts.Kind != 'n' {
		if ts.Kind != '[' {
			return refuse()
		}
		if ts.Len() > 0 {
			l2 = true
			schema := &pb.Message{Schema: true}
			for n := range ts.Elems() {
				e, ok := entryOf(n)
				if !ok {
					return refuse()
				}
				b, ok := block(e, req.GetJsonStringSpans())
				if !ok {
					return refuse()
				}
				b.KindRaw = string(sdk.KindToolDefinition)
				schema.Blocks = append(schema.Blocks, b)
			}
			out.Messages = append(out.Messages, schema)
		}
	}
	out.Messages = slices.Grow(out.Messages, msgs.Len())
	for n := range msgs.Elems() {
		e, ok := entryOf(n)
		if !ok || e.Text == nil {
			return refuse()
		}
		b, ok := block(e, req.GetJsonStringSpans())
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
		out.Messages = append(out.Messages, sdk.Message(role, b))
	}
	level := sdk.L0
	switch {
	case l2:
		level = sdk.L2
	case l1:
		level = sdk.L1
	}
	out.Level = string(level)
	return sdk.Adapted(out)
}

// entryOf reads a message (or schema) object: a string member that is
// neither a string nor null, or a has_args that is neither a boolean nor
// null, does not parse as the format; null is absence. The members are
// read in one pass; of duplicates the last counts (encoding/json's rule),
// and only it is checked.
func entryOf(n sdk.Value) (entry, bool) {
	var e entry
	if n.Kind != '{' {
		return e, false
	}
	const (
		role = iota
		kind
		name
		source
		hasArgs
		text
		statedTokens
		fields
	)
	names := [fields]string{"role", "kind", "name", "source", "has_args", "text", "stated_tokens"}
	var found [fields]sdk.Value // kind 0: absent
	for k, v := range n.Members() {
		for i, want := range names {
			if k.Is(want) {
				found[i] = v
				break
			}
		}
	}
	for i, dst := range [...]**string{role: &e.Role, kind: &e.Kind, name: &e.Name, source: &e.Source} {
		if v := found[i]; v.Kind != 0 && v.Kind != 'n' {
			s, ok := v.String()
			if !ok {
				return e, false
			}
			*dst = &s
		}
	}
	if v := found[hasArgs]; v.Kind != 0 && v.Kind != 'n' {
		if v.Kind != 't' && v.Kind != 'f' {
			return e, false
		}
		b := v.Kind == 't'
		e.HasArgs = &b
	}
	if v := found[text]; v.Kind != 0 {
		e.Text = &v
	}
	if v := found[statedTokens]; v.Kind != 0 {
		e.StatedTokens = v.Raw()
	}
	return e, true
}

// block builds one block; ok is false for a text that is neither a string
// nor null, or a stated count that is not a whole number. A string text
// goes back as a span of the record where it can (jsonSpans: escaped ones
// too, the request's json_string_spans).
func block(e entry, jsonSpans bool) (*pb.Block, bool) {
	var kind sdk.Kind
	if e.Kind != nil {
		kind = sdk.Kind(*e.Kind)
	}
	var b *pb.Block
	if e.Text == nil || e.Text.Kind == 'n' {
		b = sdk.NonSerialisableBlock(kind)
	} else if b, _ = sdk.StringBlock(kind, *e.Text, jsonSpans); b == nil {
		return nil, false // neither a string nor null
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
