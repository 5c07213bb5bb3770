package realistic

import (
	"fmt"
	"strings"
	"time"
)

// plan spreads the planted structures evenly over the record: near-duplicate
// pairs on both sides of M09's threshold and retry clusters, in numbers
// proportional to the body size.
type plan struct {
	above, below, clusters    int
	sAbove, sBelow, sClusters int
}

func newPlan(size int) plan {
	f := float64(size) / float64(BodyCap)
	c := int(6*f + 0.5)
	if c < 1 {
		c = 1
	}
	return plan{above: int(260*f + 0.5), below: int(140*f + 0.5), clusters: c}
}

// pendingPair is the first member of a near-duplicate pair, waiting for
// the turn at which its edited second member is written.
type pendingPair struct {
	kind   int
	above  bool
	aText  string
	words  []string
	due    int
	url    string
	title  string
	footer string
	args   *obj
}

func (g *gen) progress(s sink) float64 {
	return float64(s.fixedBytes()+s.acc().bytes) / float64(g.size)
}

// turn writes one exchange: the user speaks, the assistant may work with
// tools for a few rounds, and answers.
func (g *gen) turn(s sink) {
	g.turnNo++
	prog := g.progress(s)
	for i, p := range g.pairs {
		if p.due <= g.turnNo || prog > 0.9 {
			g.pairs = append(g.pairs[:i], g.pairs[i+1:]...)
			g.pairB(s, p)
			return
		}
	}
	if g.small {
		g.chatTurn(s, true)
		return
	}
	if prog < 0.88 {
		pl := &g.plan
		if float64(pl.sAbove+pl.sBelow) < float64(pl.above+pl.below)*prog/0.85+1 && pl.sAbove+pl.sBelow < pl.above+pl.below {
			// Keep the above/below ratio of the plan as pairs are started.
			above := pl.sBelow >= pl.below || pl.sAbove*(pl.above+pl.below) <= pl.above*(pl.sAbove+pl.sBelow)
			if above {
				pl.sAbove++
			} else {
				pl.sBelow++
			}
			g.pairA(s, above)
			return
		}
		if float64(pl.sClusters) < float64(pl.clusters)*prog/0.85 && pl.sClusters < pl.clusters {
			pl.sClusters++
			g.pollTurn(s)
			return
		}
	}
	switch x := g.r.IntN(100); {
	case x < 28:
		g.chatTurn(s, false)
	case x < 31:
		g.attachTurn(s)
	case x < 36 && len(g.files) > 0:
		g.rereadTurn(s)
	default:
		g.toolTurn(s)
	}
}

func (g *gen) maybeReminder(p int) string {
	if g.r.IntN(100) < p {
		return g.reminders[g.r.IntN(len(g.reminders))]
	}
	return ""
}

func (g *gen) userAsk(small bool) string {
	var parts []string
	if !small && g.r.IntN(2) == 0 {
		parts = append(parts, g.p.paragraph(g.n(1, 3)))
	}
	switch g.r.IntN(6) {
	case 0:
		if !small {
			parts = append(parts, "I have this:\n\n"+g.fenced(g.n(6, 30)))
		}
	case 2:
		if !small && g.r.IntN(2) == 0 {
			// Code pasted alone; users often paste first and ask after.
			return g.fenced(g.n(6, 40))
		}
	case 1:
		if !small {
			parts = append(parts, "This is what I see in the logs:\n\n```\n"+g.logLines(g.n(3, 12), g.kebab(1))+"\n```")
		}
	}
	q := g.p.question()
	if g.r.IntN(25) == 0 {
		q += []string{" \U0001F44D", " \U0001F64F", " \U0001F680", " :)"}[g.r.IntN(4)]
	}
	parts = append(parts, q)
	return strings.Join(parts, "\n\n")
}

func (g *gen) answer(small bool) string {
	if small {
		return g.p.paragraph(1 + g.r.IntN(3))
	}
	switch g.r.IntN(12) {
	case 0:
		return g.canned[g.r.IntN(len(g.canned))]
	case 1:
		// A reply that is only code, as when the user asked for a snippet.
		return g.fenced(g.n(8, 50))
	}
	return g.p.markdown(g.n(1, 4), func() string { return g.fenced(g.n(5, 40)) })
}

func (g *gen) thinking() string {
	if g.r.IntN(100) < 40 {
		return g.p.paragraph(g.n(1, 4))
	}
	return ""
}

func (g *gen) chatTurn(s sink, small bool) {
	g.tick()
	s.user(g, userMsg{parts: []string{g.userAsk(small)}, reminder: g.maybeReminder(8)})
	g.tick()
	th := ""
	if !small {
		th = g.thinking()
	}
	s.assistant(g, asstMsg{thinking: th, text: g.answer(small)})
}

func (g *gen) attachTurn(s sink) {
	g.tick()
	k := g.r.IntN(len(magic))
	file := g.snake(2) + magicExt[k]
	q := g.p.question()
	u := userMsg{hint: hBlob}
	switch g.r.IntN(3) {
	case 0: // an image the format carries as a binary part
		u.parts = []string{"Here is a screenshot of what I am seeing. " + q}
		u.images = []attach{{name: g.snake(1) + ".png", media: "image/png", data: g.b64(g.blobBytes(), 0, false)}}
	case 1:
		u.parts = []string{fmt.Sprintf("I attached %s from %s's email, base64 encoded: %s", file, g.p.pick(vocab.first), g.b64(g.blobBytes(), k, false)), q}
	default:
		u.parts = []string{fmt.Sprintf("The export tool gave me this token blob for %s (base64url): %s", file, g.b64(g.blobBytes(), k, true)), q}
	}
	s.user(g, u)
	g.tick()
	s.assistant(g, asstMsg{thinking: g.thinking(), text: g.answer(false)})
}

// pickTool draws a tool by how often agents use it; Letta's memory tools
// only exist in agent files.
func (g *gen) pickTool() string {
	type w struct {
		n string
		w int
	}
	ws := []w{{"read_file", 18}, {"grep", 8}, {"run_command", 16}, {"edit_file", 8}, {"write_file", 5},
		{"http_request", 8}, {"query_db", 6}, {"web_search", 6}, {"fetch_url", 5}, {"list_dir", 5},
		{"get_attachment", 2}, {"take_screenshot", 2}, {"search_issues", 5}, {"recall_notes", 3}}
	if g.format == "letta-af" {
		ws = append(ws, w{"conversation_search", 3}, w{"archival_memory_search", 3}, w{"archival_memory_insert", 2}, w{"memory_insert", 2})
	}
	t := 0
	for _, x := range ws {
		t += x.w
	}
	n := g.r.IntN(t)
	for _, x := range ws {
		if n < x.w {
			return x.n
		}
		n -= x.w
	}
	return "read_file"
}

func (g *gen) callID() string {
	if g.format == "anthropic-messages" {
		return "toolu_01" + g.alnum(22)
	}
	return g.uuid()
}

// makeCall draws a call's arguments and, bound to it, the function that
// produces its output once the clock has moved.
func (g *gen) makeCall(name string) (*toolCall, func() toolResult) {
	c := &toolCall{id: g.callID(), name: name}
	ok := g.r.IntN(25) != 0
	res := func(raw string, h hint) func() toolResult {
		return func() toolResult { return toolResult{call: c, raw: raw, ok: true, hint: h} }
	}
	switch name {
	case "read_file":
		l := g.lang()
		path := g.path(langExt[l])
		c.args = o("path", path)
		if g.r.IntN(4) == 0 {
			c.args.set("offset", 1+g.r.IntN(200)).set("limit", 200)
		}
		raw := g.lineNumbered(g.code(l, g.n(20, 150)))
		if len(g.files) < 60 {
			g.files = append(g.files, fileRead{path: path, text: raw})
		}
		return c, res(raw, hCode)
	case "grep":
		c.args = o("pattern", g.camel(2), "path", strings.Split(g.path(""), "/")[0])
		if g.r.IntN(2) == 0 {
			c.args.set("glob", "*"+langExt[g.lang()])
		}
		return c, res(g.grepOutput(g.n(3, 30)), hCode)
	case "run_command":
		var cmd, out string
		switch g.r.IntN(10) {
		case 0, 1, 2, 3:
			cmd, out = "go test ./... -run "+g.pascal(1)+" -v", g.testOutput(g.n(5, 40))
		case 4, 5:
			cmd, out = "git log -n "+fmt.Sprint(3+g.r.IntN(8)), g.gitLog(3+g.r.IntN(8))
		case 6, 7, 8:
			svc := g.kebab(2)
			cmd, out = "kubectl logs deploy/"+svc+" --since=15m", g.logLines(g.n(10, 80), svc)
		default:
			f := g.path(magicExt[0])
			cmd, out = "base64 < "+f, g.b64(g.blobBytes(), 0, false)
			c.args = o("command", cmd, "timeout_ms", 120000)
			return c, res(out, hBlob)
		}
		c.args = o("command", cmd, "timeout_ms", 120000)
		if !ok {
			out += "\n\n[exit code: 1]"
		}
		return c, func() toolResult { return toolResult{call: c, raw: out, ok: ok, hint: hCode} }
	case "edit_file":
		l := g.lang()
		path := g.path(langExt[l])
		oldS, newS := g.code(l, g.n(3, 12)), g.code(l, g.n(3, 12))
		c.args = o("path", path, "old_string", oldS, "new_string", newS)
		return c, res("The file "+path+" has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"+g.lineNumbered(newS), hCode)
	case "write_file":
		l := g.lang()
		path := g.path(langExt[l])
		c.args = o("path", path, "content", g.code(l, g.n(15, 90)))
		return c, res("File created successfully at: "+path, hProse)
	case "http_request":
		c.args = o("method", "GET", "url", "https://api."+g.kebab(1)+".example.com/v2/"+g.kebab(2)+"?limit=50",
			"headers", o("Authorization", "Bearer "+g.jwt(), "Accept", "application/json"))
		st := stPretty
		if g.r.IntN(3) == 0 {
			st = stCompact
		}
		return c, res(enc(g.httpResponse(), st), hJSON)
	case "query_db":
		c.args = o("sql", "SELECT * FROM "+g.snake(2)+" WHERE "+g.snake(1)+" > $1 ORDER BY created_at DESC LIMIT 50", "params", []any{fmt.Sprint(g.r.IntN(1000))}, "database", "analytics")
		return c, res(enc(g.rows(g.n(3, 40)), stCompact), hJSON)
	case "web_search":
		q := strings.ToLower(g.p.title()) + " " + g.p.pick(vocab.tech)
		c.args = o("query", q, "num_results", 5+g.r.IntN(6))
		return c, res(enc(g.searchResults(q, g.n(3, 8)), stPretty), hJSON)
	case "fetch_url":
		c.args = o("url", "https://docs."+g.kebab(1)+".example.org/"+g.kebab(2), "format", "markdown")
		return c, res(g.page(g.p.title(), g.n(3, 9)), hProse)
	case "list_dir":
		c.args = o("path", strings.Split(g.path(""), "/")[0], "depth", 1)
		return c, res(g.listing(g.n(5, 40)), hCode)
	case "get_attachment":
		c.args = o("attachment_id", "att_"+g.alnum(20))
		return c, res(enc(g.attachmentJSON(g.r.IntN(2) == 0), stPretty), hBlob)
	case "take_screenshot":
		url := "https://" + g.kebab(1) + ".example.com/" + g.kebab(2)
		c.args = o("url", url, "full_page", g.r.IntN(2) == 0)
		img := &attach{name: "screenshot.png", media: "image/png", data: g.b64(g.blobBytes(), 0, false)}
		raw := fmt.Sprintf("Captured %s at 1280x%d.", url, 800+g.r.IntN(3000))
		return c, func() toolResult { return toolResult{call: c, raw: raw, ok: true, image: img, hint: hBlob} }
	case "search_issues":
		c.args = o("repo", g.kebab(1)+"/"+g.kebab(1), "query", g.lowerWords(2), "state", "open", "labels", []any{g.kebab(1)})
		return c, res(enc(g.issues(g.n(2, 7)), stPretty), hJSON)
	case "recall_notes":
		c.args = o("query", g.lowerWords(3), "top_k", 5)
		return c, res(enc(g.notes(g.n(2, 5)), stPretty), hJSON)
	case "conversation_search":
		c.args = o("query", strings.ToLower(g.p.pick(vocab.nouns)), "limit", 10)
		var rs []any
		for i := 0; i < g.n(2, 6); i++ {
			rs = append(rs, o("timestamp", g.now.Add(-time.Duration(g.r.IntN(900))*time.Hour).Format("2006-01-02 03:04:05 PM MST-0700"), "role", []string{"user", "assistant"}[g.r.IntN(2)], "content", g.p.paragraph(g.n(1, 3))))
		}
		return c, res(enc(o("message", fmt.Sprintf("Showing %d results:", len(rs)), "results", rs), stPyU), hJSON)
	case "archival_memory_search":
		c.args = o("query", g.lowerWords(2), "top_k", 5)
		return c, res(enc(g.notes(g.n(2, 5)), stPyU), hJSON)
	case "archival_memory_insert":
		c.args = o("content", g.p.paragraph(g.n(2, 5)), "tags", []any{g.kebab(1), g.kebab(1)})
		return c, res("None", hProse)
	case "memory_insert":
		label := []string{"human", "persona", "project", "tasks"}[g.r.IntN(4)]
		c.args = o("label", label, "new_str", g.p.sentence(), "insert_line", g.r.IntN(8))
		return c, res("The core memory block with label `"+label+"` has been edited. Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the memory block again if necessary.", hProse)
	}
	c.args = o()
	return c, res("", hProse)
}

func (g *gen) toolTurn(s sink) {
	g.tick()
	s.user(g, userMsg{parts: []string{g.userAsk(false)}, reminder: g.maybeReminder(10)})
	rounds := 1 + g.r.IntN(4)
	for i := 0; i < rounds; i++ {
		n := 1
		if g.r.IntN(10) < 3 {
			n = 2 + g.r.IntN(2)
		}
		var calls []*toolCall
		var outs []func() toolResult
		for j := 0; j < n; j++ {
			c, f := g.makeCall(g.pickTool())
			calls = append(calls, c)
			outs = append(outs, f)
		}
		text := ""
		if g.r.IntN(2) == 0 {
			text = g.p.sentence()
		}
		g.tick()
		s.assistant(g, asstMsg{thinking: g.thinking(), text: text, calls: calls})
		g.tick()
		var rs []toolResult
		for _, f := range outs {
			rs = append(rs, f())
		}
		s.results(g, rs, g.maybeReminder(6))
		s.heartbeat(g)
	}
	g.tick()
	s.assistant(g, asstMsg{thinking: g.thinking(), text: g.answer(false)})
}

// rereadTurn reads a file read before with the very same arguments: an
// identical call and, where the format does not stamp results, an
// identical result.
func (g *gen) rereadTurn(s sink) {
	f := g.files[g.r.IntN(len(g.files))]
	g.tick()
	s.user(g, userMsg{parts: []string{"Can you look at " + f.path + " again? " + g.p.question()}})
	c := &toolCall{id: g.callID(), name: "read_file", args: o("path", f.path)}
	g.tick()
	s.assistant(g, asstMsg{text: "Let me re-read " + f.path + ".", calls: []*toolCall{c}})
	g.tick()
	s.results(g, []toolResult{{call: c, raw: f.text, ok: true, hint: hCode}}, g.maybeReminder(6))
	s.heartbeat(g)
	g.tick()
	s.assistant(g, asstMsg{text: g.answer(false)})
}

// pollTurn deploys and polls the rollout: identical calls, results that
// differ only in their timestamps — a larger near-duplicate cluster.
func (g *gen) pollTurn(s sink) {
	d := g.newDeploy()
	g.tick()
	s.user(g, userMsg{parts: []string{fmt.Sprintf("Please deploy %s to %s from %s and keep an eye on the rollout.", d.service, d.env, d.ref)}})
	c := &toolCall{id: g.callID(), name: "trigger_deploy", args: o("service", d.service, "environment", d.env, "ref", d.ref)}
	g.tick()
	s.assistant(g, asstMsg{text: "Starting the deployment.", calls: []*toolCall{c}})
	g.tick()
	d.started = g.now
	s.results(g, []toolResult{{call: c, raw: enc(o("deployment_id", d.id, "status", "queued", "queued_at", isoMs(g.now)), stPretty), ok: true, hint: hJSON}}, "")
	s.heartbeat(g)
	args := o("deployment_id", d.id, "include_logs", true)
	thought := g.canned[g.r.IntN(len(g.canned))]
	polls := 5 + g.r.IntN(8)
	for i := 0; i < polls; i++ {
		pc := &toolCall{id: g.callID(), name: "get_deployment_status", args: args}
		g.now = g.now.Add(time.Duration(25+g.r.IntN(20)) * time.Second)
		s.assistant(g, asstMsg{text: thought, calls: []*toolCall{pc}})
		g.now = g.now.Add(time.Duration(200+g.r.IntN(900)) * time.Millisecond)
		s.results(g, []toolResult{{call: pc, raw: g.deployStatus(d), ok: true, hint: hJSON}}, "")
		s.heartbeat(g)
	}
	g.tick()
	s.assistant(g, asstMsg{text: g.answer(false)})
}

func (g *gen) paraWords() []string {
	// Long paragraphs, never scaled down: the words around a paragraph in
	// its block (an intro line, a heading) must stay a small share of its
	// shingles, or no edit count lands just above 0.80.
	return strings.Fields(g.p.words(80 + g.r.IntN(140)))
}

// pairA writes the first member of a near-duplicate pair; the second is
// written some turns later (or at once, for a proofreading exchange).
func (g *gen) pairA(s sink, above bool) {
	words := g.paraWords()
	para := strings.Join(words, " ")
	title := strings.ToLower(g.p.title())
	switch g.r.IntN(3) {
	case 0: // the assistant drafts, the user later sends back an edit
		g.tick()
		s.user(g, userMsg{parts: []string{"Could you draft a short " + title + " note for the team? " + g.p.sentence()}})
		g.tick()
		text := "Here's a draft:\n\n" + para
		aText := s.replyBlock(g, text)
		s.assistant(g, asstMsg{text: text})
		g.pairs = append(g.pairs, &pendingPair{kind: 0, above: above, aText: aText, words: words, due: g.turnNo + 1 + g.r.IntN(30)})
	case 1: // a page fetched twice, edited in between
		url := "https://wiki." + g.kebab(1) + ".example.org/" + g.kebab(3)
		footer := "Last edited by " + g.p.pick(vocab.first) + " " + g.p.pick(vocab.last) + ". Content is available under CC BY-SA 4.0."
		g.tick()
		s.user(g, userMsg{parts: []string{"Read " + url + " and tell me what it says about the " + title + "."}})
		args := o("url", url, "format", "markdown")
		c := &toolCall{id: g.callID(), name: "fetch_url", args: args}
		g.tick()
		s.assistant(g, asstMsg{text: "I'll fetch the page.", calls: []*toolCall{c}})
		g.tick()
		raw := "# " + capFirst(title) + "\n\n" + para + "\n\n" + footer
		aText := s.resultBlock(g, "fetch_url", raw, true)
		s.results(g, []toolResult{{call: c, raw: raw, ok: true, hint: hProse}}, "")
		s.heartbeat(g)
		g.tick()
		s.assistant(g, asstMsg{text: g.answer(false)})
		g.pairs = append(g.pairs, &pendingPair{kind: 1, above: above, aText: aText, words: words, due: g.turnNo + 1 + g.r.IntN(30), url: url, title: title, footer: footer, args: args})
	default: // the user pastes a paragraph, the assistant returns it corrected
		g.tick()
		intro := "Fix the wording, keep it close:"
		parts := []string{intro, para}
		aText := s.userBlock(g, parts)
		s.user(g, userMsg{parts: parts})
		g.tick()
		lead := "Corrected:"
		build := func(ws []string) string { return s.replyBlock(g, lead+"\n\n"+strings.Join(ws, " ")) }
		b := g.tune(aText, words, build, above)
		s.assistant(g, asstMsg{text: lead + "\n\n" + strings.Join(b, " ")})
	}
}

func (g *gen) pairB(s sink, p *pendingPair) {
	switch p.kind {
	case 0:
		g.tick()
		intro := "I changed a few words:"
		build := func(ws []string) string { return s.userBlock(g, []string{intro, strings.Join(ws, " ")}) }
		b := g.tune(p.aText, p.words, build, p.above)
		s.user(g, userMsg{parts: []string{intro, strings.Join(b, " ")}})
		g.tick()
		s.assistant(g, asstMsg{text: g.answer(true)})
	case 1:
		g.tick()
		s.user(g, userMsg{parts: []string{"The page at " + p.url + " was edited this morning. Can you fetch it again and tell me what changed?"}})
		c := &toolCall{id: g.callID(), name: "fetch_url", args: p.args}
		g.tick()
		s.assistant(g, asstMsg{text: "I'll fetch the page again.", calls: []*toolCall{c}})
		g.tick()
		head := "# " + capFirst(p.title) + "\n\n"
		tail := "\n\n" + p.footer
		build := func(ws []string) string { return s.resultBlock(g, "fetch_url", head+strings.Join(ws, " ")+tail, true) }
		b := g.tune(p.aText, p.words, build, p.above)
		s.results(g, []toolResult{{call: c, raw: head + strings.Join(b, " ") + tail, ok: true, hint: hProse}}, "")
		s.heartbeat(g)
		g.tick()
		s.assistant(g, asstMsg{text: g.answer(true)})
	}
}
