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
	if sdk.JSONKind(raw, '"') {
		var inner string
		if json.Unmarshal(raw, &inner) != nil {
			return refuse(codeParse, "the record does not parse as a Letta agent file")
		}
		raw = []byte(inner)
		rec.Disclosures = append(rec.Disclosures, &pb.Disclosure{Code: "record_was_json_string", Message: "the record was a JSON string holding the agent file; it was unwrapped once", Count: 1})
	}
	var top obj
	if !sdk.JSONKind(raw, '{') || json.Unmarshal(raw, &top) != nil {
		return refuse(codeParse, "the record does not parse as a Letta agent file")
	}
	var agent obj
	var tools []obj
	var toolIDs []string
	hasToolIDs := false
	if rawAgents, ok := top["agents"]; ok {
		var agents []json.RawMessage
		if !sdk.JSONKind(rawAgents, '[') || json.Unmarshal(rawAgents, &agents) != nil {
			return refuse(codeParse, "agents is not an array")
		}
		if len(agents) != 1 {
			return refuse(codeRequired, "the agent file holds other than exactly one agent")
		}
		if !sdk.JSONKind(agents[0], '{') || json.Unmarshal(agents[0], &agent) != nil {
			return refuse(codeParse, "the agent is not an object")
		}
		toolIDs, hasToolIDs = strings(agent["tool_ids"])
	} else if _, ok := top["messages"]; ok {
		agent = top
	} else {
		return refuse(codeParse, "neither agents nor messages is present")
	}
	_ = json.Unmarshal(top["tools"], &tools)
	var rawMsgs []json.RawMessage
	if !sdk.JSONKind(agent["messages"], '[') || json.Unmarshal(agent["messages"], &rawMsgs) != nil {
		return refuse(codeParse, "messages is not an array")
	}
	msgs := make([]message, 0, len(rawMsgs))
	for i, rm := range rawMsgs {
		var f obj
		if !sdk.JSONKind(rm, '{') || json.Unmarshal(rm, &f) != nil {
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
	for _, t := range tools {
		id, _ := str(t["id"])
		if hasToolIDs && !slices.Contains(toolIDs, id) {
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
		rec.Messages = append(rec.Messages, adaptMessage(m.f, callNames))
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
	var parts []obj
	_ = json.Unmarshal(f["content"], &parts)
	for _, p := range parts {
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
		var tc obj
		_ = json.Unmarshal(f["tool_call"], &tc)
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
		var parts []obj
		_ = json.Unmarshal(f["content"], &parts)
		for _, p := range parts {
			kind, _ := str(p["type"])
			t, ok := str(p["text"])
			add(kind, "", t, ok)
		}
	}
	return m
}

func adaptMessage(f obj, callNames map[string]string) *pb.Message {
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
		var s string
		_ = json.Unmarshal(f["content"], &s)
		parts = []json.RawMessage{mustJSON(map[string]string{"type": "text", "text": s})}
	} else {
		_ = json.Unmarshal(f["content"], &parts)
	}
	for _, rp := range parts {
		var p obj
		b := &pb.Block{}
		if json.Unmarshal(rp, &p) == nil {
			b.KindRaw, _ = str(p["type"])
			if t, ok := str(p["text"]); ok {
				b.Content = &pb.Block_Text{Text: t}
				texts[t] = true
				if k := packedType(t); k != "" {
					b.KindRaw = k
				}
			}
		}
		if b.Content == nil {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		if role == "tool" {
			b.Name = resultOf
		}
		m.Blocks = append(m.Blocks, b)
	}
	var calls []obj
	_ = json.Unmarshal(f["tool_calls"], &calls)
	for _, c := range calls {
		var fn obj
		_ = json.Unmarshal(c["function"], &fn)
		name, _ := str(fn["name"])
		if id, ok := str(c["id"]); ok {
			callNames[id] = name
		}
		b := &pb.Block{KindRaw: "tool_call", Name: name, HasArgs: true}
		if args, ok := str(fn["arguments"]); ok {
			b.Content = &pb.Block_Text{Text: args}
		} else {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		m.Blocks = append(m.Blocks, b)
	}
	var returns []obj
	_ = json.Unmarshal(f["tool_returns"], &returns)
	for _, r := range returns {
		resp, ok := str(r["func_response"])
		if ok && texts[resp] {
			continue // present in the content too: counted once
		}
		b := &pb.Block{KindRaw: "tool_return", Name: resultOf}
		if ok {
			b.Content = &pb.Block_Text{Text: resp}
		} else {
			b.Content = &pb.Block_NonSerialisable{NonSerialisable: true}
		}
		m.Blocks = append(m.Blocks, b)
	}
	return m
}

func mustJSON(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

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

func strings(raw json.RawMessage) ([]string, bool) {
	if raw == nil || !sdk.JSONKind(raw, '[') {
		return nil, false
	}
	var out []string
	if json.Unmarshal(raw, &out) != nil {
		return nil, false
	}
	return out, true
}
