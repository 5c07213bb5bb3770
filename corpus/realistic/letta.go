package realistic

import (
	"strconv"
	"strings"
	"time"
)

// lettaSink writes a current-shape Letta agent file (agents[], blocks[],
// tools[], ...) of a letta_v1_agent the way Letta exports it: Python
// json.dumps separators and ASCII escapes, replies as assistant text parts,
// native reasoning parts, packed tool returns ({"status","message","time"})
// stored twice (content text and tool_returns), and packed system alerts.
type lettaSink struct {
	acct
	envHead, recHead, recTail string
	totalFactor               float64
	model                     string
	g                         *gen // for the final message's size while generating
}

func (s *lettaSink) acc() *acct { return &s.acct }

func lettaTime(t time.Time) string { return t.UTC().Format("2006-01-02 03:04:05 PM MST-0700") }

func packResult(raw string, ok bool, t time.Time) string {
	st := "OK"
	if !ok {
		st = "Failed"
	}
	return enc(o("status", st, "message", raw, "time", lettaTime(t)), stPretty)
}

func packAlert(msg string, t time.Time) string {
	return enc(o("type", "system_alert", "message", msg, "time", lettaTime(t)), stPretty)
}

const lettaMemoryWarning = "Warning: the conversation history will soon reach its maximum length and be trimmed. Make sure to save any important information from the conversation to your memory before it is removed."

func (s *lettaSink) begin(g *gen) {
	s.g = g
	s.totalFactor = 1.04 + g.r.Float64()*0.16
	llm := [][3]string{
		{"claude-sonnet-4-5-20250929", "anthropic", "https://api.anthropic.com/v1"},
		{"gpt-4.1-2025-04-14", "openai", "https://api.openai.com/v1"},
		{"gpt-4o-2024-08-06", "openai", "https://api.openai.com/v1"},
	}[g.r.IntN(3)]
	s.model = llm[0]
	agentName := g.p.pick(vocab.first)
	base := g.systemPrompt()

	// Memory blocks, rendered into the system message as Letta does.
	type mb struct{ label, desc, value string }
	mbs := []mb{
		{"human", "The human block: Stores key details about the person you are conversing with, allowing for more personalized and friend-like conversation.",
			"Name: " + g.p.pick(vocab.first) + " " + g.p.pick(vocab.last) + "\nRole: " + strings.ToLower(g.p.title()) + " lead\n" + g.p.paragraph(3)},
		{"persona", "The persona block: Stores details about your current persona, guiding how you behave and respond.",
			"I am " + agentName + ". " + g.p.paragraph(4)},
		{"project", "Notes about the project the user is working on.", g.p.paragraph(3) + "\n- " + g.p.sentence() + "\n- " + g.p.sentence()},
		{"tasks", "Open tasks and their state.", "- [ ] " + g.p.sentence() + "\n- [x] " + g.p.sentence() + "\n- [ ] " + g.p.sentence()},
	}
	var blocks []any
	var blockIDs []any
	var mem strings.Builder
	mem.WriteString("<memory_blocks>\nThe following memory blocks are currently engaged in your core memory unit:\n\n")
	for i, m := range mbs {
		id := "block-" + strconv.Itoa(i)
		blockIDs = append(blockIDs, id)
		blocks = append(blocks, o("value", m.value, "limit", 20000, "project_id", nil, "template_name", nil, "is_template", false,
			"template_id", nil, "base_template_id", nil, "deployment_id", nil, "entity_id", nil, "preserve_on_migration", false,
			"label", m.label, "read_only", false, "description", m.desc, "metadata", o(), "hidden", nil, "tags", nil, "id", id))
		mem.WriteString("<" + m.label + ">\n<description>\n" + m.desc + "\n</description>\n<metadata>\n- chars_current=" +
			strconv.Itoa(len(m.value)) + "\n- chars_limit=20000\n</metadata>\n<value>\n" + m.value + "\n</value>\n</" + m.label + ">\n\n")
	}
	mem.WriteString("</memory_blocks>")
	sysText := "<base_instructions>\n" + base + "\n</base_instructions>\n\n" + mem.String() +
		"\n\n<memory_metadata>\n- The current system date is: " + g.now.Format("January 2, 2006") +
		"\n- Memory blocks were last modified: " + lettaTime(g.now) +
		"\n- " + strconv.Itoa(400+g.r.IntN(4000)) + " previous messages between you and the user are stored in recall memory (use tools to access them)\n</memory_metadata>"

	// Tools: Letta's built-ins, then the custom tools.
	var tools []any
	var toolIDs []any
	all := append(append([]toolSpec(nil), lettaTools...), commonTools...)
	for i, t := range all {
		id := "tool-" + strconv.Itoa(i)
		toolIDs = append(toolIDs, id)
		sch := t.schema(false)
		typ, src, tags, limit := "custom", any(g.toolSource(t)), []any{}, 50000
		if t.letta {
			typ, src, tags = "letta_core", nil, []any{"letta_core"}
		}
		tools = append(tools, o("id", id, "tool_type", typ, "description", t.desc, "source_type", "python", "name", t.name,
			"tags", tags, "source_code", src, "json_schema", sch, "args_json_schema", nil, "return_char_limit", limit,
			"pip_requirements", nil, "npm_requirements", nil, "default_requires_approval", nil, "enable_parallel_execution", false,
			"created_by_id", "user-"+g.uuid(), "last_updated_by_id", "user-"+g.uuid(), "metadata_", o(), "project_id", nil))
		// The schema pseudo-message: one block per listed tool, its
		// json_schema with insignificant whitespace removed (ANNEX C-8).
		s.schemaE += em1(enc(sch, stCompact))
		s.blocks++
	}
	var rules []any
	for _, t := range lettaTools {
		rules = append(rules, o("tool_name", t.name, "type", "continue_loop"))
	}
	agent := o("name", agentName, "memory_blocks", []any{}, "tools", []any{}, "tool_ids", toolIDs, "source_ids", []any{}, "folder_ids", nil,
		"block_ids", blockIDs, "tool_rules", rules, "tags", []any{"origin:letta-chat"}, "system", base, "agent_type", "letta_v1_agent",
		"initial_message_sequence", nil, "include_base_tools", false, "include_multi_agent_tools", false, "include_base_tool_rules", false,
		"include_default_source", false, "description", "A long-running engineering assistant.", "metadata", nil,
		"llm_config", o("model", s.model, "display_name", nil, "model_endpoint_type", llm[1], "model_endpoint", llm[2],
			"provider_name", llm[1], "provider_category", "base", "model_wrapper", nil, "context_window", 200000, "put_inner_thoughts_in_kwargs", false,
			"handle", llm[1]+"/"+s.model, "temperature", 0.7, "max_tokens", 8192, "enable_reasoner", true, "reasoning_effort", nil,
			"max_reasoning_tokens", 1024, "frequency_penalty", nil, "parallel_tool_calls", true, "response_format", nil, "strict", false),
		"embedding_config", o("embedding_endpoint_type", "openai", "embedding_endpoint", "https://api.openai.com/v1", "embedding_model", "text-embedding-3-small",
			"embedding_dim", 1536, "embedding_chunk_size", 300, "handle", "openai/text-embedding-3-small", "batch_size", 32,
			"azure_endpoint", nil, "azure_version", nil, "azure_deployment", nil),
		"model", nil, "embedding", nil, "model_settings", nil, "compaction_settings", nil, "context_window_limit", nil,
		"embedding_chunk_size", nil, "max_tokens", nil, "max_reasoning_tokens", nil, "enable_reasoner", false, "reasoning", nil,
		"from_template", nil, "template", false, "project", nil, "tool_exec_environment_variables", o(), "secrets", nil,
		"memory_variables", nil, "project_id", nil, "template_id", nil, "base_template_id", nil, "identity_ids", nil,
		"message_buffer_autoclear", false, "enable_sleeptime", false, "response_format", nil, "timezone", "UTC",
		"max_files_open", 10, "per_file_view_window_char_limit", 25000, "hidden", nil, "parallel_tool_calls", nil, "id", "agent-0")
	head := enc(agent, stPy)
	s.recHead = `{"agents": [` + head[:len(head)-1] + `, "in_context_message_ids": [`
	s.recTail = `], "files_agents": [], "group_ids": []}], "groups": [], "blocks": ` + enc(blocks, stPy) +
		`, "files": [], "sources": [], "tools": ` + enc(tools, stPy) + `, "mcp_servers": [], "metadata": {"revision_id": "` + g.hex(12) +
		`"}, "created_at": "` + g.now.Format("2006-01-02T15:04:05.000000+00:00") + `"}`
	s.envHead = envelopeHead + `"letta-af","record":`

	g.tick()
	s.msg(g, "system", []any{o("type", "text", "text", sysText, "signature", nil)}, nil, nil, []any{}, nil, nil, 1, em1(sysText), hProse)
	total := 200 + g.r.IntN(3000)
	hidden := total - 20 - g.r.IntN(40)
	alert := packAlert("Note: prior messages ("+strconv.Itoa(hidden)+" of "+strconv.Itoa(total)+
		" total messages) have been hidden from view due to conversation memory constraints.\nThe following is a summary of the previous "+
		strconv.Itoa(hidden-4)+" messages:\n"+g.summaryText(), g.now)
	s.msg(g, "user", []any{o("type", "text", "text", alert, "signature", nil)}, nil, nil, []any{}, nil, nil, 1, em1(alert), hProse)
}

// toolSource is a custom tool's Python source, as Letta stores it.
func (g *gen) toolSource(t toolSpec) string {
	var args []string
	for _, p := range t.params {
		ty := map[string]string{"string": "str", "integer": "int", "boolean": "bool", "object": "dict", "array": "list"}[p.typ]
		if p.required {
			args = append(args, p.name+": "+ty)
		} else {
			args = append(args, p.name+": "+ty+" | None = None")
		}
	}
	body := indent(g.pyStmt(0)+"\n"+g.pyStmt(0), "    ")
	return "def " + t.name + "(" + strings.Join(args, ", ") + ") -> str:\n    \"\"\"\n    " + t.desc + "\n    \"\"\"\n" + body + "\n    return json.dumps(result)\n"
}

// msg writes one stored message. Its id follows the adapted order, which
// is also in_context_message_ids' order.
func (s *lettaSink) msg(g *gen, role string, content []any, calls any, callID any, returns []any, name any, model any, blocks, e int, h hint) {
	id := "message-" + strconv.Itoa(len(s.measured))
	chunk := s.render(g, id, role, content, calls, callID, returns, name, model)
	s.addMsg(g, chunk, blocks, e, s.stateFor(g, e, h, 0.45))
	s.extra += len(id) + 2
	if len(s.measured) > 1 {
		s.extra += 2
	}
}

func (s *lettaSink) render(g *gen, id, role string, content []any, calls any, callID any, returns []any, name any, model any) string {
	created := g.now.Format("2006-01-02T15:04:05.000000") + "+00:00"
	m := o("type", "message", "role", role, "content", content, "name", name, "otid", nil, "sender_id", nil, "batch_item_id", nil,
		"group_id", nil, "id", id, "model", model, "agent_id", "agent-0", "tool_calls", calls, "tool_call_id", callID,
		"tool_returns", returns, "created_at", created, "approve", nil, "approval_request_id", nil, "denial_reason", nil, "approvals", []any{})
	return enc(m, stPy)
}

func (s *lettaSink) fillChunk(g *gen, fill string) string {
	id := "message-" + strconv.Itoa(len(s.measured))
	return s.render(g, id, "user", []any{o("type", "text", "text", fill, "signature", nil)}, nil, nil, []any{}, nil, nil)
}

func (s *lettaSink) fixedBytes() int {
	fid := len("message-"+strconv.Itoa(len(s.measured))) + 2
	return len(s.envHead) + len(s.recHead) + s.extra + 2 + fid + len(`], "messages": [`) + s.joined(", ") + 2 + len(s.fillChunk(s.g, "")) +
		len(s.recTail) + len(`,"harness_stated_counts":`) + s.harnessCountsBound() + len(envelopeTail)
}

func (s *lettaSink) user(g *gen, u userMsg) {
	if g.r.IntN(150) == 0 {
		// Letta warns the agent in a packed alert when its context fills up.
		a := packAlert(lettaMemoryWarning, g.now)
		s.msg(g, "user", []any{o("type", "text", "text", a, "signature", nil)}, nil, nil, []any{}, nil, nil, 1, em1(a), hProse)
		g.now = g.now.Add(time.Duration(1+g.r.IntN(900)) * time.Millisecond)
	}
	text := strings.Join(u.parts, "\n\n")
	content := []any{o("type", "text", "text", text, "signature", nil)}
	for _, im := range u.images {
		content = append(content, o("type", "image", "source", o("type", "base64", "media_type", im.media, "data", im.data)))
	}
	s.msg(g, "user", content, nil, nil, []any{}, nil, nil, len(content), em1(text), u.hint)
}

func (s *lettaSink) assistant(g *gen, a asstMsg) {
	var content []any
	if a.thinking != "" && g.r.IntN(2) == 0 {
		// Native reasoning is stored as a part without a text member.
		content = append(content, o("type", "reasoning", "is_native", true, "reasoning", a.thinking, "signature", g.b64(120+g.r.IntN(300), -1, false)))
	}
	e := 0
	h := hProse
	if a.text != "" {
		content = append(content, o("type", "text", "text", a.text, "signature", nil))
		e += em1(a.text)
		if strings.Contains(a.text, "```") {
			h = hCode
		}
	}
	var calls any
	if len(a.calls) > 0 {
		var cs []any
		for _, c := range a.calls {
			args := enc(c.args, stPy)
			cs = append(cs, o("id", c.id, "function", o("arguments", args, "name", c.name), "type", "function"))
			e += em1(args)
			h = hJSON
		}
		calls = cs
	}
	s.msg(g, "assistant", content, calls, nil, []any{}, nil, s.model, len(content)+len(a.calls), e, h)
}

func (s *lettaSink) toolMsg(g *gen, callID, name, packed string, ok bool, h hint) {
	status := "success"
	if !ok {
		status = "error"
	}
	content := []any{o("type", "text", "text", packed, "signature", nil)}
	if g.r.IntN(5) == 0 {
		// Some exports keep the payload only in tool_returns.
		content = []any{}
	}
	ret := []any{o("tool_call_id", callID, "status", status, "stdout", nil, "stderr", nil, "func_response", packed)}
	// One block either way: a tool_return equal to a text part is the same
	// payload and the adapter counts it once.
	s.msg(g, "tool", content, nil, callID, ret, name, s.model, 1, em1(packed), h)
}

func (s *lettaSink) results(g *gen, rs []toolResult, _ string) {
	for i, r := range rs {
		if i > 0 {
			g.now = g.now.Add(time.Duration(50+g.r.IntN(900)) * time.Millisecond)
		}
		raw := r.raw
		if r.image != nil {
			raw += " Image data (base64): " + r.image.data
		}
		s.toolMsg(g, r.call.id, r.call.name, packResult(raw, r.ok, g.now), r.ok, r.hint)
	}
}

func (s *lettaSink) heartbeat(*gen) {}

func (s *lettaSink) userBlock(_ *gen, parts []string) string { return strings.Join(parts, "\n\n") }
func (s *lettaSink) replyBlock(_ *gen, text string) string   { return text }
func (s *lettaSink) resultBlock(g *gen, _, raw string, ok bool) string {
	return packResult(raw, ok, g.now)
}

func (s *lettaSink) assemble(g *gen, fill string) string {
	var b strings.Builder
	b.Grow(g.size)
	b.WriteString(s.envHead)
	b.WriteString(s.recHead)
	for i := 0; i <= len(s.measured); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"message-` + strconv.Itoa(i) + `"`)
	}
	b.WriteString(`], "messages": [`)
	for i, c := range s.chunks {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c)
	}
	b.WriteString(", ")
	b.WriteString(s.fillChunk(g, fill))
	b.WriteString(s.recTail)
	b.WriteString(`,"harness_stated_counts":`)
	b.WriteString(s.harnessCounts(s.totalFactor, s.schemaE))
	b.WriteString(envelopeTail)
	return b.String()
}
