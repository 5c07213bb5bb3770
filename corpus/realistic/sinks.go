package realistic

import (
	"strconv"
	"strings"
)

const envelopeHead = `{"envelope_version":"context-composition-envelope/1","declared_format_id":`
const envelopeTail = `,"criteria_ack":"context-composition/v1"}`

// statedTotalReserve bounds the bytes of `,"total":N` and its braces.
const statedTotalReserve = 40

// addMsg records one adapted message: its chunk, its entries, its EM-1
// estimate and the stated figure the harness gives for it (if any).
func (a *acct) addMsg(g *gen, chunk string, blocks, e int, stated int) {
	a.push(chunk)
	a.blocks += blocks
	a.measured = append(a.measured, e)
	a.stated = append(a.stated, stated)
	if stated >= 0 {
		a.statedLast = a.statedAll + len(strconv.Itoa(stated))
		if len(a.stated) > 1 {
			a.statedLast++
		}
		a.statedAll = a.statedLast
	} else {
		a.statedAll += 4
		if len(a.stated) > 1 {
			a.statedAll++
		}
	}
}

// stateFor draws a stated figure for a message of estimate e unless that
// would push harness_stated_counts near its cap; trailing nulls are
// dropped when the object is written, so stopping is always safe.
func (a *acct) stateFor(g *gen, e int, h hint, coverage float64) int {
	v := g.statedFor(e, h, coverage)
	if v < 0 {
		return -1
	}
	grow := a.statedAll - a.statedLast + len(strconv.Itoa(v)) + 1
	if a.statedLast+grow+statedTotalReserve+32 > StatedCountsCap-statedHeadroom {
		return -1
	}
	return v
}

// harnessCounts writes harness_stated_counts: per_message without its
// trailing nulls, and a whole-record total as a real tokenizer would
// report it (a few percent to a fifth above EM-1).
func (a *acct) harnessCounts(totalFactor float64, schemaE int) string {
	last := len(a.stated)
	for last > 0 && a.stated[last-1] < 0 {
		last--
	}
	var b strings.Builder
	b.WriteString(`{"per_message":[`)
	for i := 0; i < last; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if a.stated[i] < 0 {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.Itoa(a.stated[i]))
		}
	}
	t := schemaE
	for _, e := range a.measured {
		t += e
	}
	b.WriteString(`],"total":`)
	b.WriteString(strconv.Itoa(int(float64(t)*totalFactor + 0.5)))
	b.WriteByte('}')
	return b.String()
}

func (a *acct) harnessCountsBound() int {
	return len(`{"per_message":[`) + a.statedLast + statedTotalReserve
}

func (a *acct) joined(sep string) int {
	if len(a.chunks) == 0 {
		return 0
	}
	return (len(a.chunks) - 1) * len(sep)
}

func sumEM1(ts ...string) int {
	e := 0
	for _, t := range ts {
		e += em1(t)
	}
	return e
}

func mainHint(rs []toolResult) hint {
	h := hProse
	for _, r := range rs {
		if r.hint > h {
			h = r.hint
		}
	}
	return h
}

// systemPrompt is a long harness prompt: identity, rules and tool advice.
func (g *gen) systemPrompt() string {
	var b strings.Builder
	team := strings.ToLower(g.p.pick(vocab.nouns))
	b.WriteString("You are " + g.p.pick(vocab.first) + ", an AI assistant that helps the " + team + " team at " + g.pascal(1) + " with software engineering, operations and research tasks. " + g.p.paragraph(3) + "\n")
	for _, h := range []string{"Tone and style", "Doing tasks", "Tool usage policy", "Code style", "Safety", "Memory"} {
		b.WriteString("\n# " + h + "\n")
		b.WriteString(g.p.paragraph(2+g.r.IntN(3)) + "\n")
		for i := 0; i < 3+g.r.IntN(6); i++ {
			b.WriteString("- " + g.p.sentence() + "\n")
		}
		if g.r.IntN(3) == 0 {
			b.WriteString("\nExample:\n" + g.fenced(6+g.r.IntN(10)) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) summaryText() string {
	var b strings.Builder
	b.WriteString(g.p.paragraph(4))
	for i := 0; i < 4+g.r.IntN(5); i++ {
		b.WriteString("\n" + strconv.Itoa(i+1) + ". " + g.p.sentence())
	}
	b.WriteString("\n\n" + g.p.paragraph(3))
	return b.String()
}

// ---------------------------------------------------------------------
// anthropic-messages

type anthropicSink struct {
	acct
	prefix      string
	totalFactor float64
}

const anthropicFillOverhead = len(`,{"role":"user","content":""}`)

func (s *anthropicSink) acc() *acct { return &s.acct }

func (s *anthropicSink) begin(g *gen) {
	s.totalFactor = 1.04 + g.r.Float64()*0.16
	sys := []string{g.systemPrompt(), "<env>\nWorking directory: /home/" + strings.ToLower(g.p.pick(vocab.first)) + "/src/" + g.kebab(2) +
		"\nIs directory a git repo: Yes\nPlatform: linux\nToday's date: " + g.now.Format("2006-01-02") + "\n</env>"}
	arr := []any{o("type", "text", "text", sys[0]), o("type", "text", "text", sys[1], "cache_control", o("type", "ephemeral"))}
	s.prefix = envelopeHead + `"anthropic-messages","declared_format_version":"2023-06-01","record":{"system":` + enc(arr, stCompact) + `,"messages":[`
	// The top-level system is the adapted record's first message (ANNEX C-8).
	e := sumEM1(sys...)
	s.measured = append(s.measured, e)
	s.stated = append(s.stated, -1)
	s.statedAll = 4
	s.blocks += 2
	g.tick()
	s.user(g, userMsg{parts: []string{"This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n" + g.summaryText()}})
	g.tick()
	s.assistant(g, asstMsg{text: "Understood. I'll continue from where we left off."})
}

func (s *anthropicSink) fixedBytes() int {
	return len(s.prefix) + s.joined(",") + anthropicFillOverhead + len(`]}`) + len(`,"harness_stated_counts":`) + s.harnessCountsBound() + len(envelopeTail)
}

func (s *anthropicSink) user(g *gen, u userMsg) {
	var content any
	blocks := len(u.images) + len(u.parts)
	e := sumEM1(u.parts...)
	if len(u.parts) == 1 && len(u.images) == 0 && u.reminder == "" {
		content = u.parts[0]
	} else {
		var arr []any
		for _, im := range u.images {
			arr = append(arr, o("type", "image", "source", o("type", "base64", "media_type", im.media, "data", im.data)))
		}
		for _, p := range u.parts {
			arr = append(arr, o("type", "text", "text", p))
		}
		if u.reminder != "" {
			arr = append(arr, o("type", "text", "text", u.reminder))
			blocks++
			e += em1(u.reminder)
		}
		content = arr
	}
	chunk := enc(o("role", "user", "content", content), stCompact)
	s.addMsg(g, chunk, blocks, e, s.stateFor(g, e, u.hint, 0.45))
}

func (s *anthropicSink) assistant(g *gen, a asstMsg) {
	var arr []any
	blocks, e := 0, 0
	h := hProse
	if a.thinking != "" {
		arr = append(arr, o("type", "thinking", "thinking", a.thinking, "signature", g.b64(180+g.r.IntN(500), -1, false)))
		blocks++
		e += em1(a.thinking)
	} else if g.r.IntN(40) == 0 {
		arr = append(arr, o("type", "redacted_thinking", "data", g.b64(200+g.r.IntN(800), -1, false)))
		blocks++
	}
	if a.text != "" {
		arr = append(arr, o("type", "text", "text", a.text))
		blocks++
		e += em1(a.text)
		if strings.Contains(a.text, "```") {
			h = hCode
		}
	}
	for _, c := range a.calls {
		arr = append(arr, o("type", "tool_use", "id", c.id, "name", c.name, "input", c.args))
		blocks++
		e += em1(enc(c.args, stJCS))
		h = hJSON
	}
	chunk := enc(o("role", "assistant", "content", arr), stCompact)
	s.addMsg(g, chunk, blocks, e, s.stateFor(g, e, h, 0.45))
}

func (s *anthropicSink) results(g *gen, rs []toolResult, reminder string) {
	var arr []any
	blocks, e := 0, 0
	for _, r := range rs {
		tr := o("type", "tool_result", "tool_use_id", r.call.id)
		if r.image != nil {
			tr.set("content", []any{o("type", "text", "text", r.raw), o("type", "image", "source", o("type", "base64", "media_type", r.image.media, "data", r.image.data))})
			blocks += 2
		} else {
			tr.set("content", r.raw)
			blocks++
		}
		e += em1(r.raw)
		if !r.ok {
			tr.set("is_error", true)
		}
		arr = append(arr, tr)
	}
	if reminder != "" {
		arr = append(arr, o("type", "text", "text", reminder))
		blocks++
		e += em1(reminder)
	}
	chunk := enc(o("role", "user", "content", arr), stCompact)
	s.addMsg(g, chunk, blocks, e, s.stateFor(g, e, mainHint(rs), 0.45))
}

func (s *anthropicSink) heartbeat(*gen) {}

func (s *anthropicSink) userBlock(_ *gen, parts []string) string { return parts[len(parts)-1] }
func (s *anthropicSink) replyBlock(_ *gen, text string) string   { return text }
func (s *anthropicSink) resultBlock(_ *gen, _, raw string, _ bool) string {
	return raw
}

func (s *anthropicSink) assemble(g *gen, fill string) string {
	var b strings.Builder
	b.Grow(g.size)
	b.WriteString(s.prefix)
	for i, c := range s.chunks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c)
	}
	// The record ends on the user's pending message, as a request does.
	b.WriteString(`,{"role":"user","content":`)
	quote(&b, fill, false)
	b.WriteString(`}]}`)
	b.WriteString(`,"harness_stated_counts":`)
	b.WriteString(s.harnessCounts(s.totalFactor, 0))
	b.WriteString(envelopeTail)
	return b.String()
}

// ---------------------------------------------------------------------
// generic-message-list

type genericSink struct {
	acct
	schemas     string
	totalFactor float64
}

const genericHead = envelopeHead + `"generic-message-list","declared_format_version":"1","record":{"messages":[`

func (s *genericSink) acc() *acct { return &s.acct }

func (s *genericSink) begin(g *gen) {
	s.totalFactor = 1.04 + g.r.Float64()*0.16
	var arr []any
	for _, t := range commonTools {
		txt := enc(t.schema(false), stCompact)
		arr = append(arr, o("name", t.name, "text", txt))
		s.schemaE += em1(txt)
		s.blocks++
	}
	s.schemas = enc(arr, stCompact)
	g.tick()
	s.msg(g, o("role", "system", "source", "harness"), g.systemPrompt(), hProse)
	s.msg(g, o("role", "system", "kind", "summary", "source", "harness"), "Summary of the conversation so far:\n"+g.summaryText(), hProse)
}

// msg writes one message (one block); its stated_tokens, when the harness
// logged one, is the record's own stated count.
func (s *genericSink) msg(g *gen, m *obj, text string, h hint) {
	e := em1(text)
	st := g.statedFor(e, h, 0.6)
	m.set("text", text)
	if st >= 0 {
		m.set("stated_tokens", st)
	}
	s.addMsg(g, enc(m, stCompact), 1, e, -1)
}

func (s *genericSink) nullMsg(g *gen, m *obj) {
	m.set("text", nil)
	s.addMsg(g, enc(m, stCompact), 1, 0, -1)
}

func (s *genericSink) fixedBytes() int {
	return len(genericHead) + s.joined(",") + len(`,{"role":"user","source":"user","text":""}`) + len(`],"tool_schemas":`) + len(s.schemas) + len(`,"stated_total":`) + 16 + len(`}`) + len(envelopeTail)
}

func (s *genericSink) user(g *gen, u userMsg) {
	for _, im := range u.images {
		s.nullMsg(g, o("role", "user", "kind", "image", "name", im.name, "source", "upload"))
	}
	s.msg(g, o("role", "user", "source", "user"), strings.Join(u.parts, "\n\n"), u.hint)
	if u.reminder != "" {
		s.msg(g, o("role", "system", "source", "harness"), u.reminder, hProse)
	}
}

func (s *genericSink) assistant(g *gen, a asstMsg) {
	if a.thinking != "" {
		s.msg(g, o("role", "assistant", "kind", "reasoning", "source", "model"), a.thinking, hProse)
	}
	if a.text != "" {
		h := hProse
		if strings.Contains(a.text, "```") {
			h = hCode
		}
		s.msg(g, o("role", "assistant", "source", "model"), a.text, h)
	}
	for _, c := range a.calls {
		s.msg(g, o("role", "assistant", "kind", "tool_call", "name", c.name, "has_args", true, "source", "model"), enc(c.args, stCompact), hJSON)
	}
}

func (s *genericSink) results(g *gen, rs []toolResult, reminder string) {
	for _, r := range rs {
		kind := "tool_result"
		if r.call.name == "recall_notes" {
			kind = "retrieval"
		}
		s.msg(g, o("role", "tool", "kind", kind, "name", r.call.name, "source", "tool:"+r.call.name), r.raw, r.hint)
		if r.image != nil {
			s.nullMsg(g, o("role", "tool", "kind", "image", "name", r.image.name, "source", "tool:"+r.call.name))
		}
	}
	if reminder != "" {
		s.msg(g, o("role", "system", "source", "harness"), reminder, hProse)
	}
}

func (s *genericSink) heartbeat(*gen) {}

func (s *genericSink) userBlock(_ *gen, parts []string) string { return strings.Join(parts, "\n\n") }
func (s *genericSink) replyBlock(_ *gen, text string) string   { return text }
func (s *genericSink) resultBlock(_ *gen, _, raw string, _ bool) string {
	return raw
}

func (s *genericSink) assemble(g *gen, fill string) string {
	var b strings.Builder
	b.Grow(g.size)
	b.WriteString(genericHead)
	for i, c := range s.chunks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c)
	}
	b.WriteString(`,{"role":"user","source":"user","text":`)
	quote(&b, fill, false)
	b.WriteString(`}],"tool_schemas":`)
	b.WriteString(s.schemas)
	t := s.schemaE
	for _, e := range s.measured {
		t += e
	}
	b.WriteString(`,"stated_total":` + strconv.Itoa(int(float64(t)*s.totalFactor+0.5)) + `}`)
	b.WriteString(envelopeTail)
	return b.String()
}
