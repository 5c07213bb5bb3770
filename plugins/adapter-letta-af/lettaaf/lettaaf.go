// Package lettaaf adapts Letta agent files (.af) to the SessionRecord of
// context-composition/v1 (ANNEX C-8): the current agents[] schema and the
// older single-agent shape, the in-context selection, messages as content
// parts, tool calls and tool returns, and tool definitions as the schema
// pseudo-message. Plain Go: no gRPC, no I/O.
package lettaaf

import (
	"bytes"
	"context"
	_ "embed"
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

// recordSchema is the record's shape (ANNEX C-8), as JSON Schema: what
// Adapt accepts, never less (adaptertest checks it admits every valid
// record).
//
//go:embed record.schema.json
var recordSchema []byte

// Describe names the family and format, and the record's shape.
func (Adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "context-composition/v1", FormatId: FormatID,
		FormatVersions: []string{"agent-file"}, AdapterVersion: "0.1.0", RecordSchema: recordSchema}
}

// message is a message of the file, with the members the selection reads.
type message struct {
	f         sdk.Value
	id        sdk.Value
	index     int
	at        time.Time
	hasAt     bool
	inContext sdk.Value
}

// adapter is one Adapt call's state.
type adapter struct {
	// spans: texts may go back as spans of the located document (false
	// when the document is an unwrapped JSON string, not the record);
	// jsonSpans: escaped ones too (the request's json_string_spans)
	spans, jsonSpans bool
	callNames        map[string]string
}

// The members read from each kind of object, each set picked in one walk
// of the object (sdk.Value.Pick), in these orders.
var (
	selectionMembers = []string{"id", "created_at", "in_context"}
	messageMembers   = []string{"message_type", "role", "tool_call_id", "content", "tool_calls", "tool_returns", "reasoning", "tool_call", "tool_return"}
	toolMembers      = []string{"id", "name", "json_schema"}
	pairMembers      = []string{"type", "text"}      // a content part
	callMembers      = []string{"id", "function"}    // a stored tool call
	functionMembers  = []string{"name", "arguments"} // its function
)

// message members, by their index in messageMembers
const (
	mType = iota
	mRole
	mToolCallID
	mContent
	mToolCalls
	mToolReturns
	mReasoning
	mToolCall
	mToolReturn
	nMessage
)

// common names of roles and part types: answered without a copy
var common = []string{"user", "assistant", "system", "tool", "text", "reasoning"}

// nameOf is a string value's text, common ones without allocating.
func nameOf(v sdk.Value) (string, bool) {
	for _, c := range common {
		if v.Is(c) {
			return c, true
		}
	}
	return v.String()
}

// Adapt turns one agent file into a SessionRecord. The record is located
// once (sdk.Locate: one validating scan, nothing copied) and walked in
// place, as encoding/json would read it (the last of duplicate members
// wins; a value of the wrong kind reads as absent); a text that needs no
// decoding goes back as a span of the record.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	rec := sdk.Record(sdk.L2)
	doc, err := sdk.Locate(req.GetRecord())
	if err != nil {
		return sdk.Refuse(sdk.RecordDoesNotParse, "the record does not parse as a Letta agent file")
	}
	a := adapter{spans: true, jsonSpans: req.GetJsonStringSpans(), callNames: map[string]string{}}
	top := doc.Root()
	if top.Kind == '"' {
		inner, _ := top.String()
		if doc, err = sdk.Locate([]byte(inner)); err != nil {
			return sdk.Refuse(sdk.RecordDoesNotParse, "the record does not parse as a Letta agent file")
		}
		a.spans = false // the texts are the unwrapped string's, not the record's
		top = doc.Root()
		rec.Disclosures = append(rec.Disclosures, &pb.Disclosure{Code: "record_was_json_string", Message: "the record was a JSON string holding the agent file; it was unwrapped once", Count: 1})
	}
	if top.Kind != '{' {
		return sdk.Refuse(sdk.RecordDoesNotParse, "the record does not parse as a Letta agent file")
	}
	var agent sdk.Value
	var toolIDs []string
	hasToolIDs := false
	if agents, ok := top.Get("agents"); ok {
		if agents.Kind != '[' {
			return sdk.Refuse(sdk.RecordDoesNotParse, "agents is not an array")
		}
		if agents.Len() != 1 {
			return sdk.Refuse(sdk.RecordRequired, "the agent file holds other than exactly one agent")
		}
		for e := range agents.Elems() {
			agent = e
		}
		if agent.Kind != '{' {
			return sdk.Refuse(sdk.RecordDoesNotParse, "the agent is not an object")
		}
		toolIDs, hasToolIDs = strings(member(agent, "tool_ids"))
	} else if _, ok := top.Get("messages"); ok {
		agent = top
	} else {
		return sdk.Refuse(sdk.RecordDoesNotParse, "neither agents nor messages is present")
	}
	rawMsgs := member(agent, "messages")
	if rawMsgs.Kind != '[' {
		return sdk.Refuse(sdk.RecordDoesNotParse, "messages is not an array")
	}
	msgs := make([]message, 0, rawMsgs.Len())
	for f := range rawMsgs.Elems() {
		if f.Kind != '{' {
			return sdk.Refuse(sdk.RecordDoesNotParse, "a message is not an object")
		}
		var p [3]sdk.Value
		f.Pick(selectionMembers, p[:])
		m := message{f: f, id: p[0], index: len(msgs), inContext: p[2]}
		if s, ok := p[1].String(); ok {
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
	rec.Messages = make([]*pb.Message, 0, len(selected)+1)
	// tool definitions: the schema pseudo-message, first
	schema := &pb.Message{Schema: true}
	// a set: an agent file may list a hundred thousand tools and ids
	chosen := make(map[string]bool, len(toolIDs))
	for _, id := range toolIDs {
		chosen[id] = true
	}
	var tool [3]sdk.Value
	for t := range member(top, "tools").Elems() {
		// an element that is not an object is a tool with no members
		t.Pick(toolMembers, tool[:])
		if id, _ := tool[0].String(); hasToolIDs && !chosen[id] {
			continue
		}
		name, _ := tool[1].String()
		var b *pb.Block
		if js := tool[2]; js.Kind != 0 && js.Kind != 'n' {
			var compact bytes.Buffer
			_ = json.Compact(&compact, js.Raw()) // a located value is valid JSON
			b = sdk.TextBlock(sdk.KindToolDefinition, compact.String())
		} else {
			b = sdk.NonSerialisableBlock(sdk.KindToolDefinition)
		}
		b.Name = name
		schema.Blocks = append(schema.Blocks, b)
	}
	if len(schema.Blocks) > 0 {
		rec.Messages = append(rec.Messages, schema)
	}
	a.linkCalls(msgs)
	for _, m := range selected {
		rec.Messages = append(rec.Messages, a.message(m.f))
	}
	return sdk.Adapted(rec)
}

// linkCalls names every call of the file by its id before any message is
// adapted: a result carries its call's name wherever the call stands,
// selected or left out, before or after it, and a repeated id keeps the
// last call's name in file order (ANNEX C-8).
func (a *adapter) linkCalls(msgs []message) {
	var f [nMessage]sdk.Value
	var call, fn [2]sdk.Value
	for _, m := range msgs {
		m.f.Pick(messageMembers, f[:])
		if mt, api := f[mType].String(); api {
			if mt == "tool_call_message" {
				if id, ok := str(f[mToolCall], "tool_call_id"); ok {
					a.callNames[id], _ = str(f[mToolCall], "name")
				}
			}
			continue
		}
		for c := range f[mToolCalls].Elems() {
			c.Pick(callMembers, call[:])
			call[1].Pick(functionMembers, fn[:])
			if id, ok := call[0].String(); ok {
				a.callNames[id], _ = fn[0].String()
			}
		}
	}
}

// selectInContext applies the in-context selection and its order (ANNEX
// C-8): in_context_message_ids when present; else in_context flags, the
// system prompt first and the rest by created_at; else every message in
// file order.
func selectInContext(agent sdk.Value, msgs []message) ([]*message, int) {
	if ids, ok := strings(member(agent, "in_context_message_ids")); ok {
		byID := make(map[string]int, len(msgs))
		for i, m := range msgs {
			if id, ok := m.id.String(); ok {
				byID[id] = i
			}
		}
		out := make([]*message, 0, len(ids))
		for _, id := range ids {
			if i, ok := byID[id]; ok {
				out = append(out, &msgs[i])
			}
		}
		return out, len(msgs) - len(out)
	}
	flagged := false
	in := make([]*message, 0, len(msgs))
	for i := range msgs {
		flagged = flagged || msgs[i].inContext.Kind != 0
		if msgs[i].inContext.Kind == 't' {
			in = append(in, &msgs[i])
		}
	}
	if !flagged {
		in = in[:0]
		for i := range msgs {
			in = append(in, &msgs[i])
		}
		return in, 0
	}
	slices.SortStableFunc(in, func(a, b *message) int {
		if a.hasAt && b.hasAt {
			return a.at.Compare(b.at)
		}
		return a.index - b.index
	})
	// the system prompt (a role-system message whose text is not a packed
	// notice) goes first: Letta keeps it at context position 0
	for i, m := range in {
		if member(m.f, "role").Is("system") && packedType(firstText(m.f)) == "" {
			sys := in[i]
			copy(in[1:i+1], in[:i]) // the rest keep their order
			in[0] = sys
			break
		}
	}
	return in, len(msgs) - len(in)
}

var packedTypes = []string{"user_message", "heartbeat", "login", "system_alert"}

// packedType is the type of a Letta packed JSON text (a string value), or
// "". Only a text that starts with '{' is decoded.
func packedType(text sdk.Value) string {
	if text.Kind != '"' || !mayBeObject(text.Raw()) {
		return ""
	}
	s, _ := text.String()
	var p struct {
		Type string `json:"type"`
	}
	if !sdk.JSONKind([]byte(s), '{') || json.Unmarshal([]byte(s), &p) != nil || !slices.Contains(packedTypes, p.Type) {
		return ""
	}
	return p.Type
}

// mayBeObject reports whether a JSON string's text (raw: the string with
// its quotes) may start with '{' after leading JSON whitespace, read
// through escapes: false only when it surely does not, so most texts are
// never decoded to find out.
func mayBeObject(raw []byte) bool {
	inner := raw[1 : len(raw)-1]
	for i := 0; i < len(inner); {
		switch c := inner[i]; c {
		case ' ', '\t', '\r', '\n':
			i++
		case '\\':
			if i+1 >= len(inner) {
				return true
			}
			switch inner[i+1] {
			case 'n', 't', 'r':
				i += 2
			case 'u':
				if i+6 > len(inner) {
					return true
				}
				switch string(bytes.ToLower(inner[i+2 : i+6])) {
				case "0020", "0009", "000a", "000d":
					i += 6
				case "007b":
					return true
				default:
					return false
				}
			default:
				return false
			}
		default:
			return c == '{'
		}
	}
	return false
}

// firstText is a message's first content part's text, else its text
// member (a zero Value when neither is a string).
func firstText(f sdk.Value) sdk.Value {
	for p := range member(f, "content").Elems() {
		if t := member(p, "text"); t.Kind == '"' {
			return t
		}
	}
	return member(f, "text")
}

// apiRoles maps the API view's message_type to the stored role it stands
// for (ANNEX C-8).
var apiRoles = map[string]string{
	"system_message": "system", "user_message": "user", "assistant_message": "assistant",
	"reasoning_message": "assistant", "hidden_reasoning_message": "assistant",
	"tool_call_message": "assistant", "tool_return_message": "tool",
}

// text is a block of kind whose content is v when v is a string (a span
// of the record where it can be), non-serialisable otherwise.
func (a *adapter) text(kind sdk.Kind, name string, v sdk.Value) *pb.Block {
	var b *pb.Block
	switch {
	case v.Kind != '"':
		b = sdk.NonSerialisableBlock(kind)
	case a.spans:
		b, _ = sdk.StringBlock(kind, v, a.jsonSpans) // a located string always decodes
	default:
		s, _ := v.String()
		b = sdk.TextBlock(kind, s)
	}
	b.Name = name
	return b
}

// apiMessage adapts a message in the API view (message_type set).
func (a *adapter) apiMessage(f []sdk.Value, mt string) *pb.Message {
	m := sdk.Message(apiRoles[mt])
	if m.RoleRaw == "" {
		m.RoleRaw = mt // an unknown view type: reported as it is (P-OTHER)
	}
	switch mt {
	case "reasoning_message":
		m.Blocks = append(m.Blocks, a.text(sdk.KindReasoning, "", f[mReasoning]))
	case "hidden_reasoning_message":
		m.Blocks = append(m.Blocks, a.text(sdk.KindReasoning, "", sdk.Value{}))
	case "tool_call_message":
		tc := f[mToolCall]
		name, _ := str(tc, "name")
		b := a.text(sdk.KindToolCall, name, member(tc, "arguments"))
		b.HasArgs = true
		m.Blocks = append(m.Blocks, b)
	case "tool_return_message":
		id, _ := f[mToolCallID].String()
		m.Blocks = append(m.Blocks, a.text(sdk.KindToolReturn, a.callNames[id], f[mToolReturn]))
	default:
		if c := f[mContent]; c.Kind == '"' {
			b := a.text(sdk.KindText, "", c)
			if k := packedType(c); k != "" {
				b.KindRaw = k
			}
			m.Blocks = append(m.Blocks, b)
			break
		}
		var part [2]sdk.Value
		for p := range f[mContent].Elems() {
			p.Pick(pairMembers, part[:])
			kind, _ := nameOf(part[0])
			m.Blocks = append(m.Blocks, a.text(sdk.Kind(kind), "", part[1]))
		}
	}
	return m
}

// message adapts one selected message (stored view, or API view when
// message_type is set).
func (a *adapter) message(msg sdk.Value) *pb.Message {
	var f [nMessage]sdk.Value
	msg.Pick(messageMembers, f[:])
	if mt, ok := f[mType].String(); ok {
		return a.apiMessage(f[:], mt)
	}
	role, _ := nameOf(f[mRole])
	m := sdk.Message(role)
	resultOf := ""
	if id, ok := f[mToolCallID].String(); ok {
		resultOf = a.callNames[id]
	}
	name := ""
	if role == "tool" {
		name = resultOf
	}
	var texts []sdk.Value // the content's texts, for the tool returns
	add := func(kind sdk.Kind, t sdk.Value) {
		b := a.text(kind, name, t)
		if t.Kind == '"' {
			texts = append(texts, t)
			if k := packedType(t); k != "" {
				b.KindRaw = k
			}
		}
		m.Blocks = append(m.Blocks, b)
	}
	if c := f[mContent]; c.Kind == '"' { // a bare string content
		add(sdk.KindText, c)
	} else {
		var part [2]sdk.Value
		for p := range c.Elems() {
			// an element that is not an object is a part with no members
			p.Pick(pairMembers, part[:])
			kind, _ := nameOf(part[0])
			add(sdk.Kind(kind), part[1])
		}
	}
	var call, fn [2]sdk.Value
	for c := range f[mToolCalls].Elems() {
		c.Pick(callMembers, call[:])
		call[1].Pick(functionMembers, fn[:])
		name, _ := fn[0].String()
		b := a.text(sdk.KindToolCall, name, fn[1])
		b.HasArgs = true
		m.Blocks = append(m.Blocks, b)
	}
	var inContent map[string]bool // decoded only when a message has both
	for r := range f[mToolReturns].Elems() {
		resp := member(r, "func_response")
		if resp.Kind == '"' && len(texts) > 0 {
			if inContent == nil {
				inContent = make(map[string]bool, len(texts))
				for _, t := range texts {
					s, _ := t.String()
					inContent[s] = true
				}
			}
			if s, _ := resp.String(); inContent[s] {
				continue // present in the content too: counted once
			}
		}
		// each stored return names its own call, else its message's
		of := resultOf
		if id, ok := str(r, "tool_call_id"); ok {
			of = a.callNames[id]
		}
		m.Blocks = append(m.Blocks, a.text(sdk.KindToolReturn, of, resp))
	}
	return m
}

// member is an object's member (a zero Value when v is not an object or
// has no such member).
func member(v sdk.Value, name string) sdk.Value {
	m, _ := v.Get(name)
	return m
}

// str is an object's member decoded as a string; ok is false when v is not
// an object, or the member is absent or not a string.
func str(v sdk.Value, name string) (string, bool) {
	return member(v, name).String()
}

// strings reads an array of strings as encoding/json fills a []string: a
// null element is "", and any other non-string element (or a value that
// is not an array) is ok false.
func strings(v sdk.Value) ([]string, bool) {
	if v.Kind != '[' {
		return nil, false
	}
	out := make([]string, 0, v.Len())
	for e := range v.Elems() {
		if e.Kind == 'n' {
			out = append(out, "") // as encoding/json decodes null into a string
			continue
		}
		s, ok := e.String()
		if !ok {
			return nil, false // encoding/json refuses a non-string element
		}
		out = append(out, s)
	}
	return out, true
}
