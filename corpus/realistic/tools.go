package realistic

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// param is one property of a tool's input schema.
type param struct {
	name, typ, desc string
	required        bool
	enum            []string
	items           string
}

type toolSpec struct {
	name, desc string
	params     []param
	letta      bool // a Letta built-in, only in agent files
}

var commonTools = []toolSpec{
	{name: "read_file", desc: "Read a file from the workspace. Returns the file contents with line numbers. Use offset and limit for large files.", params: []param{
		{name: "path", typ: "string", desc: "Path of the file, relative to the workspace root.", required: true},
		{name: "offset", typ: "integer", desc: "First line to read (1-based)."},
		{name: "limit", typ: "integer", desc: "Maximum number of lines to read."}}},
	{name: "write_file", desc: "Create or overwrite a file in the workspace with the given content.", params: []param{
		{name: "path", typ: "string", desc: "Path of the file to write.", required: true},
		{name: "content", typ: "string", desc: "Full new content of the file.", required: true}}},
	{name: "edit_file", desc: "Replace an exact string in a file. The old string must match exactly once unless replace_all is set.", params: []param{
		{name: "path", typ: "string", desc: "Path of the file to edit.", required: true},
		{name: "old_string", typ: "string", desc: "Text to replace.", required: true},
		{name: "new_string", typ: "string", desc: "Replacement text.", required: true},
		{name: "replace_all", typ: "boolean", desc: "Replace every occurrence."}}},
	{name: "grep", desc: "Search file contents with a regular expression and return matching lines as path:line:text.", params: []param{
		{name: "pattern", typ: "string", desc: "Regular expression to search for.", required: true},
		{name: "path", typ: "string", desc: "Directory to search in."},
		{name: "glob", typ: "string", desc: "Only search files matching this glob."}}},
	{name: "run_command", desc: "Run a shell command in the workspace and return its combined output and exit code.", params: []param{
		{name: "command", typ: "string", desc: "The command line to run.", required: true},
		{name: "timeout_ms", typ: "integer", desc: "Kill the command after this many milliseconds."},
		{name: "cwd", typ: "string", desc: "Working directory."}}},
	{name: "http_request", desc: "Send an HTTP request and return the status, headers and decoded body.", params: []param{
		{name: "method", typ: "string", desc: "HTTP method.", required: true, enum: []string{"GET", "POST", "PUT", "PATCH", "DELETE"}},
		{name: "url", typ: "string", desc: "Absolute URL.", required: true},
		{name: "headers", typ: "object", desc: "Request headers."},
		{name: "body", typ: "object", desc: "JSON request body."}}},
	{name: "query_db", desc: "Run a read-only SQL query against the analytics replica and return the rows.", params: []param{
		{name: "sql", typ: "string", desc: "The SQL statement.", required: true},
		{name: "params", typ: "array", desc: "Positional parameters.", items: "string"},
		{name: "database", typ: "string", desc: "Database name.", enum: []string{"analytics", "billing", "events"}}}},
	{name: "web_search", desc: "Search the web and return ranked results with snippets.", params: []param{
		{name: "query", typ: "string", desc: "Search query.", required: true},
		{name: "num_results", typ: "integer", desc: "Number of results to return."}}},
	{name: "fetch_url", desc: "Fetch a web page and convert it to Markdown.", params: []param{
		{name: "url", typ: "string", desc: "URL of the page.", required: true},
		{name: "format", typ: "string", desc: "Output format.", enum: []string{"markdown", "text"}}}},
	{name: "list_dir", desc: "List the files in a directory.", params: []param{
		{name: "path", typ: "string", desc: "Directory path.", required: true},
		{name: "depth", typ: "integer", desc: "How many levels to descend."}}},
	{name: "get_attachment", desc: "Download an attachment from the ticketing system. Binary content is returned base64 encoded.", params: []param{
		{name: "attachment_id", typ: "string", desc: "Attachment id.", required: true}}},
	{name: "take_screenshot", desc: "Open a URL in a headless browser and capture a PNG screenshot.", params: []param{
		{name: "url", typ: "string", desc: "Page to capture.", required: true},
		{name: "full_page", typ: "boolean", desc: "Capture the full scrollable page."}}},
	{name: "trigger_deploy", desc: "Start a deployment of a service to an environment.", params: []param{
		{name: "service", typ: "string", desc: "Service name.", required: true},
		{name: "environment", typ: "string", desc: "Target environment.", required: true, enum: []string{"staging", "production", "canary"}},
		{name: "ref", typ: "string", desc: "Git ref to deploy."}}},
	{name: "get_deployment_status", desc: "Return the current status of a deployment, its replica counts and the tail of its rollout log.", params: []param{
		{name: "deployment_id", typ: "string", desc: "Deployment id returned by trigger_deploy.", required: true},
		{name: "include_logs", typ: "boolean", desc: "Include the rollout log tail."}}},
	{name: "search_issues", desc: "Search issues and pull requests in a repository.", params: []param{
		{name: "repo", typ: "string", desc: "owner/name.", required: true},
		{name: "query", typ: "string", desc: "Search terms.", required: true},
		{name: "state", typ: "string", desc: "Issue state.", enum: []string{"open", "closed", "all"}},
		{name: "labels", typ: "array", desc: "Labels to filter by.", items: "string"}}},
	{name: "recall_notes", desc: "Search the agent's saved notes by meaning and return the closest matches.", params: []param{
		{name: "query", typ: "string", desc: "What to look for.", required: true},
		{name: "top_k", typ: "integer", desc: "Number of notes to return."}}},
}

var lettaTools = []toolSpec{
	{name: "conversation_search", letta: true, desc: "Search prior conversation history using hybrid search (text + semantic similarity).", params: []param{
		{name: "query", typ: "string", desc: "String to search for.", required: true},
		{name: "roles", typ: "array", desc: "Optional list of message roles to filter by.", items: "string"},
		{name: "limit", typ: "integer", desc: "Maximum number of results to return."}}},
	{name: "archival_memory_search", letta: true, desc: "Search archival memory using semantic similarity to find relevant information.", params: []param{
		{name: "query", typ: "string", desc: "What you are looking for, in natural language.", required: true},
		{name: "tags", typ: "array", desc: "Optional list of tags to filter by.", items: "string"},
		{name: "top_k", typ: "integer", desc: "Maximum number of results to return."}}},
	{name: "archival_memory_insert", letta: true, desc: "Add information to long-term archival memory for later retrieval.", params: []param{
		{name: "content", typ: "string", desc: "The information to store. Should be clear and self-contained.", required: true},
		{name: "tags", typ: "array", desc: "Optional list of category tags.", items: "string"}}},
	{name: "memory_insert", letta: true, desc: "The memory_insert command allows you to insert text at a specific location in a memory block.", params: []param{
		{name: "label", typ: "string", desc: "Section of the memory to be edited, identified by its label.", required: true},
		{name: "new_str", typ: "string", desc: "The text to insert.", required: true},
		{name: "insert_line", typ: "integer", desc: "The line number after which to insert the text (0 for the beginning)."}}},
	{name: "memory_replace", letta: true, desc: "The memory_replace command allows you to replace a specific string in a memory block with a new string.", params: []param{
		{name: "label", typ: "string", desc: "Section of the memory to be edited, identified by its label.", required: true},
		{name: "old_str", typ: "string", desc: "The text to replace (must match exactly).", required: true},
		{name: "new_str", typ: "string", desc: "The new text to insert in place of the old text.", required: true}}},
}

// schema is a tool's JSON schema object in the OpenAI / Letta shape.
func (t toolSpec) schema(heartbeat bool) *obj {
	props := &obj{}
	var req []any
	for _, p := range t.params {
		d := o("type", p.typ, "description", p.desc)
		if len(p.enum) > 0 {
			e := make([]any, len(p.enum))
			for i, s := range p.enum {
				e[i] = s
			}
			d.set("enum", e)
		}
		if p.items != "" {
			d.set("items", o("type", p.items))
		}
		props.set(p.name, d)
		if p.required {
			req = append(req, p.name)
		}
	}
	if heartbeat {
		props.set("request_heartbeat", o("type", "boolean", "description", "Request an immediate heartbeat after function execution. Set to `True` if you want to send a follow-up message or run a follow-up function."))
		req = append(req, "request_heartbeat")
	}
	if req == nil {
		req = []any{}
	}
	return o("name", t.name, "description", t.desc, "parameters", o("type", "object", "properties", props, "required", req))
}

// Identifiers.

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (g *gen) alnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[g.r.IntN(len(alnum))]
	}
	return string(b)
}

func (g *gen) hex(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hexDigits[g.r.IntN(16)]
	}
	return string(b)
}

func (g *gen) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-" + string("89ab"[g.r.IntN(4)]) + h[17:20] + "-" + h[20:]
}

// Base64.

var magic = [][]byte{
	{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R'},
	[]byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"),
	{0x1f, 0x8b, 0x08, 0x00},
	{'P', 'K', 0x03, 0x04, 0x14, 0x00, 0x06, 0x00},
	{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F'},
}

var magicMedia = []string{"image/png", "application/pdf", "application/gzip", "application/zip", "image/jpeg"}
var magicExt = []string{".png", ".pdf", ".gz", ".zip", ".jpg"}

func (g *gen) bytesOf(n int, kind int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := g.r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	if kind >= 0 {
		copy(b, magic[kind])
	}
	return b
}

// blobBytes draws a payload size so that encoded blobs run from a few
// hundred bytes to tens of kilobytes, most of them small.
func (g *gen) blobBytes() int {
	lo, hi := math.Log(300), math.Log(44000)
	enc := math.Exp(lo + (hi-lo)*math.Pow(g.r.Float64(), 1.6))
	return int(enc * 3 / 4)
}

// b64 encodes n random bytes; the standard alphabet keeps its padding, the
// URL-safe one is written the way Python's urlsafe_b64encode writes it
// (padded), so both qualify for the M10 census when long enough.
func (g *gen) b64(n int, kind int, url bool) string {
	// Odd lengths exercise one and two padding characters.
	b := g.bytesOf(n, kind)
	if url {
		return base64.URLEncoding.EncodeToString(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (g *gen) jwt() string {
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT","kid":"` + g.hex(16) + `"}`))
	p := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"sub":"%s","iss":"https://auth.example.com/","aud":"%s","exp":%d,"scope":"%s"}`,
		g.uuid(), g.kebab(1), g.now.Unix()+3600, strings.ToLower(g.p.pick(vocab.nouns))+":read")))
	return h + "." + p + "." + base64.RawURLEncoding.EncodeToString(g.bytesOf(256, -1))
}

// cursor is a pagination token: URL-safe base64 of a small JSON document,
// as many APIs return.
func (g *gen) cursor() string {
	j := fmt.Sprintf(`{"after_id":%d,"sort":"%s","ts":%d,"shard":"%s"}`, g.r.IntN(1e9), g.snake(1), g.now.UnixMilli(), g.hex(12))
	return base64.URLEncoding.EncodeToString([]byte(j))
}

// Time formats.

func isoMs(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
func iso(t time.Time) string   { return t.UTC().Format(time.RFC3339) }

// Tool outputs.

func (g *gen) lineNumbered(text string) string {
	ls := strings.Split(text, "\n")
	for i, l := range ls {
		ls[i] = fmt.Sprintf("%6d\t%s", i+1, l)
	}
	return strings.Join(ls, "\n")
}

func (g *gen) logLines(n int, svc string) string {
	var b strings.Builder
	t := g.now.Add(-time.Duration(n*2) * time.Second)
	lv := []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	for i := 0; i < n; i++ {
		t = t.Add(time.Duration(g.r.IntN(2500)) * time.Millisecond)
		l := lv[g.r.IntN(len(lv))]
		fmt.Fprintf(&b, "%s %-5s [%s] %s %s=%d %s=%s\n", isoMs(t), l, svc, strings.ToLower(g.lowerWords(3)), g.snake(1), g.r.IntN(5000), g.snake(1), g.kebab(1))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) testOutput(n int) string {
	var b strings.Builder
	pkg := "github.com/" + g.kebab(1) + "/" + g.kebab(1) + "/internal/" + g.snake(1)
	failed := 0
	for i := 0; i < n; i++ {
		name := "Test" + g.pascal(2)
		fmt.Fprintf(&b, "=== RUN   %s\n", name)
		if g.r.IntN(9) == 0 {
			failed++
			fmt.Fprintf(&b, "    %s_test.go:%d: %s: got %d, want %d\n--- FAIL: %s (%.2fs)\n", g.snake(1), 10+g.r.IntN(400), g.lowerWords(2), g.r.IntN(100), g.r.IntN(100), name, g.r.Float64())
		} else {
			fmt.Fprintf(&b, "--- PASS: %s (%.2fs)\n", name, g.r.Float64()/3)
		}
	}
	if failed > 0 {
		fmt.Fprintf(&b, "FAIL\nFAIL\t%s\t%.3fs\nexit status 1", pkg, 1+g.r.Float64()*20)
	} else {
		fmt.Fprintf(&b, "PASS\nok  \t%s\t%.3fs", pkg, 1+g.r.Float64()*20)
	}
	return b.String()
}

func (g *gen) gitLog(n int) string {
	var b strings.Builder
	t := g.now
	for i := 0; i < n; i++ {
		t = t.Add(-time.Duration(1+g.r.IntN(4000)) * time.Minute)
		fn, ln := g.p.pick(vocab.first), g.p.pick(vocab.last)
		fmt.Fprintf(&b, "commit %s\nAuthor: %s %s <%s.%s@example.com>\nDate:   %s\n\n    %s\n\n", g.hex(40), fn, ln, strings.ToLower(fn), strings.ToLower(ln), t.Format("Mon Jan 2 15:04:05 2006 -0700"), g.p.sentence())
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) grepOutput(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		l := strings.Split(g.code(g.lang(), 6), "\n")
		fmt.Fprintf(&b, "%s:%d:%s\n", g.path(langExt[g.p.pick(codeLangs)]), 1+g.r.IntN(900), strings.TrimSpace(l[g.r.IntN(len(l))]))
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) listing(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "total %d\n", n*8)
	for i := 0; i < n; i++ {
		t := g.now.Add(-time.Duration(g.r.IntN(90*24)) * time.Hour)
		if g.r.IntN(4) == 0 {
			fmt.Fprintf(&b, "drwxr-xr-x  %2d %s  staff  %6d %s %s/\n", 2+g.r.IntN(12), strings.ToLower(g.p.pick(vocab.first)), 64*(1+g.r.IntN(10)), t.Format("Jan _2 15:04"), g.snake(1))
		} else {
			fmt.Fprintf(&b, "-rw-r--r--   1 %s  staff  %6d %s %s%s\n", strings.ToLower(g.p.pick(vocab.first)), g.r.IntN(90000), t.Format("Jan _2 15:04"), g.snake(1+g.r.IntN(2)), langExt[g.p.pick(codeLangs)])
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) person() *obj {
	fn := g.p.pick(vocab.first)
	return o("login", strings.ToLower(fn)+"-"+strings.ToLower(g.p.pick(vocab.last)), "id", 1000+g.r.IntN(9000000), "type", "User", "site_admin", false)
}

func (g *gen) issues(n int) *obj {
	var items []any
	for i := 0; i < n; i++ {
		var labels []any
		for j := 0; j < g.r.IntN(4); j++ {
			labels = append(labels, o("name", g.kebab(1), "color", g.hex(6), "default", false))
		}
		if labels == nil {
			labels = []any{}
		}
		c := g.now.Add(-time.Duration(g.r.IntN(4000)) * time.Hour)
		items = append(items, o(
			"number", 100+g.r.IntN(9000),
			"title", g.p.sentence(),
			"state", []string{"open", "closed"}[g.r.IntN(2)],
			"user", g.person(),
			"labels", labels,
			"assignees", []any{g.person()},
			"comments", g.r.IntN(40),
			"created_at", iso(c),
			"updated_at", iso(c.Add(time.Duration(g.r.IntN(400))*time.Hour)),
			"reactions", o("total_count", g.r.IntN(30), "+1", g.r.IntN(20), "heart", g.r.IntN(5)),
			"body", g.p.paragraph(g.n(2, 6)),
		))
	}
	return o("total_count", n+g.r.IntN(200), "incomplete_results", false, "items", items)
}

func (g *gen) rows(n int) *obj {
	cols := []any{"id", g.snake(1), g.snake(1), "created_at", g.snake(2)}
	var rows []any
	for i := 0; i < n; i++ {
		rows = append(rows, []any{g.r.IntN(1e7), g.kebab(2), g.r.IntN(10000), iso(g.now.Add(-time.Duration(g.r.IntN(9000)) * time.Minute)), float64(g.r.IntN(100000)) / 100})
	}
	return o("columns", cols, "rows", rows, "row_count", n, "truncated", false, "elapsed_ms", 3+g.r.IntN(900))
}

func (g *gen) searchResults(q string, n int) *obj {
	var rs []any
	for i := 0; i < n; i++ {
		rs = append(rs, o(
			"title", g.p.title(),
			"url", "https://"+g.kebab(1)+".example.org/"+g.kebab(2)+"/"+g.kebab(3),
			"snippet", g.p.paragraph(g.n(1, 3)),
			"published_date", g.now.Add(-time.Duration(g.r.IntN(20000))*time.Hour).Format("2006-01-02"),
			"score", float64(500+g.r.IntN(500))/1000,
			"author", g.p.pick(vocab.first)+" "+g.p.pick(vocab.last),
		))
	}
	return o("query", q, "results", rs, "search_time_ms", 50+g.r.IntN(900))
}

func (g *gen) page(title string, paras int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	for i := 0; i < paras; i++ {
		if i > 0 && g.r.IntN(3) == 0 {
			fmt.Fprintf(&b, "## %s\n\n", g.p.title())
		}
		b.WriteString(g.p.paragraph(g.n(2, 6)))
		b.WriteString("\n\n")
		if g.r.IntN(5) == 0 {
			fmt.Fprintf(&b, "- [%s](https://%s.example.org/%s)\n- [%s](https://%s.example.org/%s)\n\n", g.p.title(), g.kebab(1), g.kebab(2), g.p.title(), g.kebab(1), g.kebab(2))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (g *gen) httpResponse() *obj {
	data := []any{}
	for i := 0; i < g.n(2, 8); i++ {
		data = append(data, o(
			"id", g.uuid(),
			"type", g.snake(1),
			"attributes", o("name", g.p.title(), "status", []string{"active", "pending", "archived", "failed"}[g.r.IntN(4)],
				"count", g.r.IntN(5000), "tags", []string{g.kebab(1), g.kebab(1)}, "updated_at", iso(g.now.Add(-time.Duration(g.r.IntN(500))*time.Minute))),
			"relationships", o("owner", o("data", o("type", "user", "id", strconv.Itoa(g.r.IntN(99999))))),
		))
	}
	body := o("data", data, "meta", o("page_size", len(data), "total", len(data)+g.r.IntN(900)))
	if g.r.IntN(2) == 0 {
		body.set("links", o("next", "/api/v2/"+g.kebab(1)+"?page[cursor]="+g.cursor()))
		body.set("next_cursor", g.cursor())
	}
	headers := o("content-type", "application/json; charset=utf-8", "x-request-id", g.uuid(), "x-ratelimit-remaining", strconv.Itoa(g.r.IntN(5000)), "date", g.now.Format(time.RFC1123))
	if g.r.IntN(4) == 0 {
		headers.set("set-cookie", "session="+g.jwt()+"; Path=/; HttpOnly; Secure")
	}
	return o("status", 200, "headers", headers, "body", body)
}

func (g *gen) attachmentJSON(url bool) *obj {
	k := g.r.IntN(len(magic))
	n := g.blobBytes()
	enc := "base64"
	if url {
		enc = "base64url"
	}
	return o("id", "att_"+g.alnum(20), "filename", g.snake(2)+magicExt[k], "content_type", magicMedia[k], "size_bytes", n,
		"sha256", g.hex(64), "encoding", enc, "data", g.b64(n, k, url))
}

func (g *gen) notes(n int) []any {
	var out []any
	for i := 0; i < n; i++ {
		out = append(out, o("id", "passage-"+g.uuid(), "timestamp", g.now.Add(-time.Duration(g.r.IntN(9000))*time.Hour).Format("2006-01-02 03:04:05 PM MST-0700"),
			"content", g.p.paragraph(g.n(1, 4)), "tags", []string{g.kebab(1), g.kebab(1)}))
	}
	return out
}

// deployState is one rollout polled repeatedly: every poll differs only in
// its timestamps and elapsed time, which makes a near-duplicate cluster.
type deployState struct {
	id, service, env, ref, commit string
	started                       time.Time
	conds                         *obj
	events                        []any
	logTail                       string
	desired                       int
}

func (g *gen) newDeploy() *deployState {
	d := &deployState{id: "dep-" + g.alnum(12), service: g.kebab(2), env: []string{"staging", "production", "canary"}[g.r.IntN(3)],
		ref: "release/" + strconv.Itoa(g.r.IntN(30)) + "." + strconv.Itoa(g.r.IntN(20)), commit: g.hex(12), started: g.now, desired: 2 + g.r.IntN(10)}
	// Fixed sizes, not scaled: the cluster's similarity depends on the
	// stamped fields being a small part of the output.
	for i := 0; i < 6+g.r.IntN(4); i++ {
		d.events = append(d.events, o("type", []string{"Normal", "Normal", "Warning"}[g.r.IntN(3)], "reason", g.pascal(1), "message", g.p.sentence()))
	}
	d.logTail = g.logLines(8+g.r.IntN(6), d.service)
	return d
}

func (g *gen) deployStatus(d *deployState) string {
	el := int(g.now.Sub(d.started).Seconds())
	return enc(o(
		"deployment_id", d.id,
		"service", d.service,
		"environment", d.env,
		"ref", d.ref,
		"commit", d.commit,
		"status", "in_progress",
		"phase", "rolling_update",
		"created_at", iso(d.started),
		"checked_at", isoMs(g.now),
		"elapsed_seconds", el,
		"replicas", o("desired", d.desired, "updated", d.desired/2, "ready", d.desired/2, "available", d.desired-1),
		"events", d.events,
		"log_tail", d.logTail,
	), stPretty)
}

// reminderText is one of the record's fixed system reminders; harnesses
// re-send them verbatim, which makes exact-duplicate groups.
func (g *gen) reminderText(i int) string {
	switch i {
	case 0:
		return "<system-reminder>\nThe task list is currently empty. If you are working on a task that would benefit from a task list, create one now. " + g.p.paragraph(2) + " Do not mention this reminder to the user.\n</system-reminder>"
	case 1:
		return "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# projectInstructions\n" + g.p.paragraph(4) + "\n\nIMPORTANT: this context may or may not be relevant to your tasks.\n</system-reminder>"
	}
	return "<system-reminder>\nThe user opened the file " + g.path(".go") + " in the IDE. This may or may not be related to the current task. " + g.p.sentence() + "\n</system-reminder>"
}
