// Package lettaaf adapts Letta agent files (.af) to the SessionRecord of
// context-composition/v1 (ANNEX C-8): the current agents[] schema and the
// older single-agent shape, the in-context selection, messages as content
// parts, tool calls and tool returns, and tool definitions as the schema
// pseudo-message. Plain Go: no gRPC, no I/O.
package lettaaf

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// FormatID is the format this adapter serves.
const FormatID = "letta-af"

// Adapter adapts letta-af records.
type Adapter struct{}

// Describe names the family and format.
func (Adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "context-composition/v1", FormatId: FormatID,
		FormatVersions: []string{"agent-file"}, AdapterVersion: "0.1.0"}
}

const (
	codeParse    = "record_does_not_parse_as_declared_format"
	codeRequired = "record_required"
)

func refuse(code, msg string) *pb.AdaptResponse {
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Refusal{Refusal: &pb.AdaptRefusal{Code: code, Message: msg}}}
}

type obj = map[string]json.RawMessage

type message struct {
	f     obj
	index int
	at    time.Time
	hasAt bool
}

// Adapt turns one agent file into a SessionRecord.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	raw := req.GetRecord()
	rec := &pb.SessionRecord{Level: "L2"}
	if !sdk.ValidJSON(raw) {
		return refuse(codeParse, "the record does not parse as a Letta agent file")
	}
	doc := raw // texts go back as spans of it (none when unwrapped below)
	if sdk.JSONKind(raw, '"') {
		doc = nil
		inner, ok := sdk.StringOf(raw)
		if !ok || !sdk.ValidJSON([]byte(inner)) {
			return refuse(codeParse, "the record does not parse as a Letta agent file")
		}
		raw = []byte(inner)
		rec.Disclosures = append(rec.Disclosures, &pb.Disclosure{Code: "record_was_json_string", Message: "the record was a JSON string holding the agent file; it was unwrapped once", Count: 1})
	}
	// raw is valid JSON from here on: every member and element below is a
	// span of it, found without decoding or copying (sdk.TopLevel,
	// sdk.Elements), with encoding/json's answers (the last of duplicate
	// members wins; a value of the wrong kind reads as absent)
	top, ok := object(raw)
	if !ok {
		return refuse(codeParse, "the record does not parse as a Letta agent file")
	}
	var agent obj
	var toolIDs []string
	hasToolIDs := false
	if rawAgents, ok := top["agents"]; ok {
		agents, ok := array(rawAgents)
		if !ok {
			return refuse(codeParse, "agents is not an array")
		}
		if len(agents) != 1 {
			return refuse(codeRequired, "the agent file holds other than exactly one agent")
		}
		if agent, ok = object(agents[0]); !ok {
			return refuse(codeParse, "the agent is not an object")
		}
		toolIDs, hasToolIDs = strings(agent["tool_ids"])
	} else if _, ok := top["messages"]; ok {
		agent = top
	} else {
		return refuse(codeParse, "neither agents nor messages is present")
	}
	tools := objects(top["tools"])
	rawMsgs, ok := array(agent["messages"])
	if !ok {
		return refuse(codeParse, "messages is not an array")
	}
	msgs := make([]message, 0, len(rawMsgs))
	for i, rm := range rawMsgs {
		f, ok := object(rm)
		if !ok {
			return refuse(codeParse, "a message is not an object")
		}
		m := message{f: f, index: i}
		if s, ok := str(f["created_at"]); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				m.at, m.hasAt = t, true
			}
		}
		msgs = append(msgs, m)
	}
	selected, leftOut := selectInContext(agent, msgs)
	if leftOut > 0 {
		rec.Disclosures = append(rec.Disclosures, &pb.Disclosure{Code: "messages_left_out", Message: "messages outside the agent's in-context selection were not measured", Count: int64(leftOut)})
	}
	// tool definitions: the schema pseudo-message, first
	schema := &pb.Message{Schema: true}
	// a set: an agent file may list a hundred thousand tools and ids
	chosen := make(map[string]bool, len(toolIDs))
	for _, id := range toolIDs {
		chosen[id] = true
	}
	for _, t := range tools {
		id, _ := str(t["id"])
		if hasToolIDs && !chosen[id] {
			continue
		}
		name, _ := str(t["name"])
		b := &pb.Block{KindRaw: "tool_definition", Name: name}
		var compact bytes.Buffer
		if js, ok := t["json_schema"]; ok && json.Compact(&compact, js) == nil && !sdk.JSONKind(js, 'n') {
			b.Content = &pb.Block_Text{Text: compact.String()}
		} else {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		schema.Blocks = append(schema.Blocks, b)
	}
	if len(schema.Blocks) > 0 {
		rec.Messages = append(rec.Messages, schema)
	}
	callNames := map[string]string{}
	for _, m := range selected {
		rec.Messages = append(rec.Messages, adaptMessage(doc, m.f, callNames))
	}
	return &pb.AdaptResponse{Result: &pb.AdaptResponse_Record{Record: rec}}
}

// selectInContext applies the in-context selection and its order (ANNEX
// C-8): in_context_message_ids when present; else in_context flags, the
// system prompt first and the rest by created_at; else every message in
// file order.
func selectInContext(agent obj, msgs []message) ([]message, int) {
	if ids, ok := strings(agent["in_context_message_ids"]); ok {
		byID := map[string]message{}
		for _, m := range msgs {
			if id, ok := str(m.f["id"]); ok {
				byID[id] = m
			}
		}
		var out []message
		for _, id := range ids {
			if m, ok := byID[id]; ok {
				out = append(out, m)
			}
		}
		return out, len(msgs) - len(out)
	}
	flagged := false
	var in []message
	for _, m := range msgs {
		if _, ok := m.f["in_context"]; ok {
			flagged = true
		}
		if bytes.Equal(bytes.TrimSpace(m.f["in_context"]), []byte("true")) {
			in = append(in, m)
		}
	}
	if !flagged {
		return msgs, 0
	}
	slices.SortStableFunc(in, func(a, b message) int {
		if a.hasAt && b.hasAt {
			return a.at.Compare(b.at)
		}
		return a.index - b.index
	})
	// the system prompt (a role-system message whose text is not a packed
	// notice) goes first: Letta keeps it at context position 0
	for i, m := range in {
		if role, _ := str(m.f["role"]); role == "system" && packedType(firstText(m.f)) == "" {
			sys := in[i]
			in = append([]message{sys}, append(in[:i:i], in[i+1:]...)...)
			break
		}
	}
	return in, len(msgs) - len(in)
}

var packedTypes = []string{"user_message", "heartbeat", "login", "system_alert"}

// packedType is the type of a Letta packed JSON text, or "".
func packedType(text string) string {
	var p struct {
		Type string `json:"type"`
	}
	if !sdk.JSONKind([]byte(text), '{') || json.Unmarshal([]byte(text), &p) != nil || !slices.Contains(packedTypes, p.Type) {
		return ""
	}
	return p.Type
}

func firstText(f obj) string {
	for _, p := range objects(f["content"]) {
		if t, ok := str(p["text"]); ok {
			return t
		}
	}
	if t, ok := str(f["text"]); ok {
		return t
	}
	return ""
}

// apiRoles maps the API view's message_type to the stored role it stands
// for (ANNEX C-8).
var apiRoles = map[string]string{
	"system_message": "system", "user_message": "user", "assistant_message": "assistant",
	"reasoning_message": "assistant", "hidden_reasoning_message": "assistant",
	"tool_call_message": "assistant", "tool_return_message": "tool",
}

// adaptAPIMessage adapts a message in the API view (message_type set).
func adaptAPIMessage(f obj, mt string, callNames map[string]string) *pb.Message {
	m := &pb.Message{RoleRaw: apiRoles[mt]}
	if m.RoleRaw == "" {
		m.RoleRaw = mt // an unknown view type: reported as it is (P-OTHER)
	}
	add := func(kind, name, text string, ok bool) {
		b := &pb.Block{KindRaw: kind, Name: name}
		if ok {
			b.Content = &pb.Block_Text{Text: text}
		} else {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		m.Blocks = append(m.Blocks, b)
	}
	switch mt {
	case "reasoning_message":
		t, ok := str(f["reasoning"])
		add("reasoning", "", t, ok)
	case "hidden_reasoning_message":
		add("reasoning", "", "", false)
	case "tool_call_message":
		tc, _ := object(f["tool_call"])
		name, _ := str(tc["name"])
		if id, ok := str(tc["tool_call_id"]); ok {
			callNames[id] = name
		}
		args, ok := str(tc["arguments"])
		b := &pb.Block{KindRaw: "tool_call", Name: name, HasArgs: true}
		if ok {
			b.Content = &pb.Block_Text{Text: args}
		} else {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		m.Blocks = append(m.Blocks, b)
	case "tool_return_message":
		id, _ := str(f["tool_call_id"])
		t, ok := str(f["tool_return"])
		add("tool_return", callNames[id], t, ok)
	default:
		if t, ok := str(f["content"]); ok {
			add("text", "", t, true)
			if k := packedType(t); k != "" {
				m.Blocks[len(m.Blocks)-1].KindRaw = k
			}
			break
		}
		for _, p := range objects(f["content"]) {
			kind, _ := str(p["type"])
			t, ok := str(p["text"])
			add(kind, "", t, ok)
		}
	}
	return m
}

func adaptMessage(doc []byte, f obj, callNames map[string]string) *pb.Message {
	if mt, ok := str(f["message_type"]); ok {
		return adaptAPIMessage(f, mt, callNames)
	}
	role, _ := str(f["role"])
	m := &pb.Message{RoleRaw: role}
	texts := map[string]bool{}
	resultOf := ""
	if id, ok := str(f["tool_call_id"]); ok {
		resultOf = callNames[id]
	}
	var parts []json.RawMessage
	if sdk.JSONKind(f["content"], '"') { // a bare string content
		s, _ := str(f["content"])
		parts = []json.RawMessage{mustJSON(map[string]string{"type": "text", "text": s})}
	} else {
		parts, _ = array(f["content"])
	}
	for _, rp := range parts {
		b := &pb.Block{}
		if p, ok := object(rp); ok || isNull(rp) {
			b.KindRaw, _ = str(p["type"])
			if t, ok := str(p["text"]); ok {
				setText(b, doc, p["text"], t)
				texts[t] = true
				if k := packedType(t); k != "" {
					b.KindRaw = k
				}
			}
		}
		if b.Content == nil && b.TextSpan == nil {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		if role == "tool" {
			b.Name = resultOf
		}
		m.Blocks = append(m.Blocks, b)
	}
	for _, c := range objects(f["tool_calls"]) {
		fn, _ := object(c["function"])
		name, _ := str(fn["name"])
		if id, ok := str(c["id"]); ok {
			callNames[id] = name
		}
		b := &pb.Block{KindRaw: "tool_call", Name: name, HasArgs: true}
		if args, ok := str(fn["arguments"]); ok {
			setText(b, doc, fn["arguments"], args)
		} else {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		m.Blocks = append(m.Blocks, b)
	}
	for _, r := range objects(f["tool_returns"]) {
		resp, ok := str(r["func_response"])
		if ok && texts[resp] {
			continue // present in the content too: counted once
		}
		b := &pb.Block{KindRaw: "tool_return", Name: resultOf}
		if ok {
			setText(b, doc, r["func_response"], resp)
		} else {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		m.Blocks = append(m.Blocks, b)
	}
	return m
}

func mustJSON(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

func str(raw json.RawMessage) (string, bool) {
	if raw == nil {
		return "", false
	}
	return sdk.StringOf(raw)
}

func strings(raw json.RawMessage) ([]string, bool) {
	elems, ok := array(raw)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		if isNull(e) {
			out = append(out, "") // as encoding/json decodes null into a string
			continue
		}
		s, ok := sdk.StringOf(e)
		if !ok {
			return nil, false // encoding/json refuses a non-string element
		}
		out = append(out, s)
	}
	return out, true
}

func isNull(raw json.RawMessage) bool { return sdk.JSONKind(raw, 'n') }

// object is a valid JSON value's members when it is an object.
func object(raw json.RawMessage) (obj, bool) {
	if raw == nil || !sdk.JSONKind(raw, '{') {
		return nil, false
	}
	members, ok := sdk.TopLevel(raw)
	if !ok {
		return nil, false
	}
	o := make(obj, len(members))
	for _, m := range members {
		o[m.Name] = raw[m.Start:m.End] // capacity kept: spanIn locates it in the record
	}
	return o, true
}

// array is a valid JSON value's elements when it is an array.
func array(raw json.RawMessage) ([]json.RawMessage, bool) {
	if raw == nil || !sdk.JSONKind(raw, '[') {
		return nil, false
	}
	spans, ok := sdk.Elements(raw)
	if !ok {
		return nil, false
	}
	out := make([]json.RawMessage, len(spans))
	for i, s := range spans {
		out[i] = raw[s[0]:s[1]] // capacity kept: spanIn locates it in the record
	}
	return out, true
}

// objects reads an array of objects as encoding/json fills a []obj: an
// element that is not an object is an empty entry, and a value that is
// not an array is no entries.
func objects(raw json.RawMessage) []obj {
	elems, _ := array(raw)
	out := make([]obj, len(elems))
	for i, e := range elems {
		out[i], _ = object(e)
	}
	return out
}

// setText gives a block its text: as a span of the record when raw (the
// JSON string it was read from) lies in the record and needs no decoding,
// so the text need not cross back to the family; as the text otherwise.
func setText(b *pb.Block, doc []byte, raw json.RawMessage, text string) {
	if span, ok := spanIn(doc, raw); ok {
		b.TextSpan = span
		return
	}
	b.Content = &pb.Block_Text{Text: text}
}

// spanIn locates a string value read from doc: every value here is a
// re-slice of the record (capacity kept), so its offset is the difference
// of capacities, confirmed by the first byte's address.
func spanIn(doc []byte, raw json.RawMessage) (*pb.Span, bool) {
	if doc == nil || len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	off := cap(doc) - cap(raw)
	if off < 0 || off+len(raw) > len(doc) || &doc[off] != &raw[0] {
		return nil, false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
		return nil, false
	}
	return &pb.Span{Offset: uint64(off + 1), Length: uint64(len(inner))}, true
}
