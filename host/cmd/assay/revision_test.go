package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/sdk/plugintest"
)

// The revision docs/plugin-authors.md (section 5) walks through, performed
// on a copy of the repository: context-composition/v1 revision 1.1.0
// accepts two formats the shipped criteria do not: example-lines, the
// example adapter's format (a JSON array of strings, one user message per
// string, L0), and gemini-generate-content, a format the repository has
// never seen, served by an adapter written here in a module of its own,
// whose records say "model" where Anthropic's say "assistant". Its
// criteria owner
//
//  1. adds the formats to the criteria (accepted_formats, format_levels,
//     assessability_matrix rows, the input contract) and bumps the
//     revision, and maps gemini's "model" to P-ASST by an edit of the
//     class lists (class-lists.json, ANNEX C-9a), not of engine code;
//  2. writes the formats' adaptation rules into the corpus generator
//     (ADAPTERS in corpus/gen/context-composition.mjs) and cases for them;
//  3. re-pins: node corpus/gen-corpus.mjs rewrites the corpus and the
//     served criteria's corpus.sha256;
//  4. builds the family, whose binary embeds the revised criteria.
//
// A host loading that family, the three adapters, the example adapter and
// the outside gemini adapter passes the revised corpus at launch, serves
// revision 1.1.0, and measures both formats' records, a "model" block as
// P-ASST. No file of the engine (plugins/) is edited, and the served
// criteria of this checkout stay revision 1.0.0. The adapters themselves
// are unchanged: an adapter author ships alone; the criteria's owner
// accepts the format.
func TestACriteriaRevisionAddsAFormat(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("needs node (.ci/run installs it)")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, part := range []string{"go.mod", "go.sum", "criteria", "corpus", "plugins", "sdk"} {
		copyTree(t, filepath.Join(root, part), filepath.Join(work, part))
	}
	run := func(dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// 1. the criteria: the format, its level and assessability, the revision
	criteria := filepath.Join(work, "criteria/context-composition/criteria.json")
	run(work, node, "-e", reviseCriteria, criteria)

	lists := filepath.Join(work, "criteria/context-composition/class-lists.json")
	run(work, node, "-e", reviseClassLists, lists)

	// 2. the generator: the formats' adaptation rules, and their cases
	gen := filepath.Join(work, "corpus/gen/context-composition.mjs")
	src, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for anchor, add := range map[string]string{
		"const ADAPTERS = {\n": exampleLinesAdapter + geminiAdapter,
		"  const env = (fmt, record, extra = {}) => ({ envelope_version: ENVELOPE, declared_format_id: fmt, record, ...extra });\n": exampleLinesCases + geminiCases,
	} {
		if strings.Count(text, anchor) != 1 {
			t.Fatalf("the generator no longer holds %q once: update this walkthrough and docs/plugin-authors.md section 5", anchor)
		}
		text = strings.Replace(text, anchor, anchor+add, 1)
	}
	if err := os.WriteFile(gen, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	// 3. the re-pin
	before := corpusPin(t, criteria)
	run(work, node, "corpus/gen-corpus.mjs")
	run(work, node, "corpus/gen-corpus.mjs", "--check")
	if after := corpusPin(t, criteria); after == before {
		t.Fatal("the revised corpus left the criteria's corpus.sha256 as it was")
	}

	// 4. the family, and the plugins beside it
	bin := filepath.Join(work, "bin")
	run(work, "go", "build", "-o", filepath.Join(bin, "assay-context-audit"), "./plugins/context-audit")
	for _, a := range []string{"letta-af", "anthropic-messages", "generic-message-list"} {
		run(work, "go", "build", "-o", filepath.Join(bin, "assay-adapter-"+a), "./plugins/adapter-"+a)
	}
	run(filepath.Join(work, "sdk"), "go", "build", "-o", filepath.Join(bin, "assay-adapter-example-lines"), "./examples/adapter")
	gemini := outsideGeminiAdapter(t, filepath.Join(work, "sdk"), filepath.Join(bin, "assay-adapter-gemini"))
	for _, part := range []string{"plugins", "criteria/context-composition/document.go"} {
		if !sameTree(t, filepath.Join(root, part), filepath.Join(work, part)) {
			t.Fatalf("the revision edited %s: a format's words are data, not engine code", part)
		}
	}

	h := plugintest.StartHost(t, plugintest.HostOptions{Assay: testhost.Binary(t, "host/cmd/assay", "assay"),
		Plugins: []string{filepath.Join(bin, "assay-context-audit"), filepath.Join(bin, "assay-adapter-example-lines"), gemini}})
	status, raw := h.Get("/context-audit/criteria")
	var served struct {
		Revision string   `json:"criteria_revision"`
		Formats  []string `json:"accepted_formats"`
	}
	if err := json.Unmarshal(raw, &served); status != 200 || err != nil || served.Revision != "1.1.0" || !strings.Contains(strings.Join(served.Formats, ","), "example-lines") ||
		!strings.Contains(strings.Join(served.Formats, ","), "gemini-generate-content") {
		t.Fatalf("the served criteria: %d %.300s", status, raw)
	}
	// payments off (plugintest's host): the paid route answers the report
	status, raw = h.Post("/context-audit/audit", []byte(`{"envelope_version":"context-composition-envelope/1","declared_format_id":"example-lines","record":["hello",null,"world"]}`))
	var rep struct {
		Kind     string                     `json:"kind"`
		Declared struct{ ID, Level string } `json:"declared_format"`
	}
	if err := json.Unmarshal(raw, &rep); status != 200 || err != nil || rep.Kind != "report" || rep.Declared.ID != "example-lines" || rep.Declared.Level != "L0" {
		t.Errorf("an example-lines record measured: %d %.300s", status, raw)
	}
	h.Verify(raw)
	status, raw = h.Post("/context-audit/precheck", []byte(`{"envelope_version":"context-composition-envelope/1","declared_format_id":"example-lines","record":["hello","world"],"caller":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"}`))
	var pre struct {
		Kind     string `json:"kind"`
		Entries  int    `json:"entry_count"`
		Declared struct {
			ID, Level string
			Accepted  bool
		} `json:"declared_format"`
	}
	if err := json.Unmarshal(raw, &pre); status != 200 || err != nil || pre.Kind != "precheck" || pre.Entries != 2 || pre.Declared.Level != "L0" || !pre.Declared.Accepted {
		t.Errorf("an example-lines pre-check: %d %.500s", status, raw)
	}
	h.Verify(raw)

	// the outside format: "model" is P-ASST by the revised class lists
	status, raw = h.Post("/context-audit/audit", []byte(`{"envelope_version":"context-composition-envelope/1","declared_format_id":"gemini-generate-content",`+
		`"record":{"systemInstruction":{"parts":[{"text":"Answer briefly."}]},"contents":[{"role":"user","parts":[{"text":"What is two and two?"}]},{"role":"model","parts":[{"text":"Four."},{"text":"Anything else?"}]}]}}`))
	if status != 200 {
		t.Fatalf("a gemini record measured: %d %.500s", status, raw)
	}
	h.Verify(raw)
	if got := axisPCounts(t, raw); got["P-ASST"] != 2 || got["P-USER"] != 1 || got["P-SYS"] != 1 || got["P-OTHER"] != 0 {
		t.Errorf("a gemini record's axis P (want P-ASST 2, P-USER 1, P-SYS 1, no P-OTHER): %v\n%.1500s", got, raw)
	}

	// this checkout still serves revision 1.0.0, byte for byte as shipped
	if a, b := readFile(t, filepath.Join(root, "criteria/context-composition/criteria.json")), readFile(t, criteria); a == b {
		t.Error("the revision left the copy's criteria as shipped")
	}
}

// axisPCounts reads F-1's rows of a report: the block count per axis-P
// class.
func axisPCounts(t *testing.T, raw []byte) map[string]int {
	t.Helper()
	var rep struct {
		Factors []struct {
			ID   string `json:"id"`
			Rows []struct {
				Class  string `json:"class"`
				Blocks *int   `json:"block_count"`
			} `json:"rows"`
		} `json:"factors"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range rep.Factors {
		if f.ID != "F-1" {
			continue
		}
		for _, r := range f.Rows {
			if r.Blocks != nil {
				got[r.Class] = *r.Blocks
			}
		}
		return got
	}
	t.Fatalf("no F-1 in the report: %.500s", raw)
	return nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// sameTree: every file under a is in b with the same bytes, and b holds
// no other (node packages and built binaries left out, as copyTree does).
func sameTree(t *testing.T, a, b string) bool {
	t.Helper()
	files := func(root string) map[string]string {
		out := map[string]string{}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, path)
				out[rel] = readFile(t, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	fa, fb := files(a), files(b)
	if len(fa) != len(fb) {
		return false
	}
	for k, v := range fa {
		if fb[k] != v {
			return false
		}
	}
	return true
}

// outsideGeminiAdapter builds, in a module of its own that requires only
// the sdk (replace'd to sdkDir, as docs/plugin-authors.md says), an adapter
// for Gemini's generateContent request body: systemInstruction's parts are
// one system message, each of contents one message under its own role
// ("user" or "model", as Gemini writes it), one text block per part. It
// maps no role: that is the criteria's class lists' to do.
func outsideGeminiAdapter(t *testing.T, sdkDir, out string) string {
	t.Helper()
	mod := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(sdkDir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"go.mod":  "module example.com/gemini\n\ngo 1.26.8\n\nrequire github.com/assay-audit/assay/sdk v0.0.0\n\nreplace github.com/assay-audit/assay/sdk => " + sdkDir + "\n",
		"go.sum":  string(sum),
		"main.go": geminiAdapterSource,
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the outside gemini adapter: %v\n%s", err, b)
	}
	return out
}

const geminiAdapterSource = `// Command assay-adapter-gemini adapts Gemini generateContent request
// bodies for context-composition/v1 (from revision 1.1.0).
package main

import (
	"context"
	"encoding/json"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

type adapter struct{}

func (adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "context-composition/v1", FormatId: "gemini-generate-content",
		FormatVersions: []string{"v1beta"}, AdapterVersion: "0.1.0"}
}

type part struct {
	Text *string ` + "`json:\"text\"`" + `
}

type content struct {
	Role  *string ` + "`json:\"role\"`" + `
	Parts []part  ` + "`json:\"parts\"`" + `
}

func (adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	var body struct {
		System   *content  ` + "`json:\"systemInstruction\"`" + `
		Contents []content ` + "`json:\"contents\"`" + `
	}
	if err := json.Unmarshal(req.GetRecord(), &body); err != nil || body.Contents == nil {
		return sdk.Refuse(sdk.RecordDoesNotParse, "the record is not a generateContent body with contents")
	}
	rec := sdk.Record(sdk.L0)
	message := func(role string, c content) *pb.AdaptResponse {
		m := sdk.Message(role)
		for _, p := range c.Parts {
			if p.Text == nil {
				return sdk.Refuse(sdk.RecordDoesNotParse, "a part without text")
			}
			m.Blocks = append(m.Blocks, sdk.TextBlock(sdk.KindText, *p.Text))
		}
		rec.Messages = append(rec.Messages, m)
		return nil
	}
	if body.System != nil {
		if r := message("system", *body.System); r != nil {
			return r
		}
	}
	for _, c := range body.Contents {
		if c.Role == nil {
			return sdk.Refuse(sdk.RecordDoesNotParse, "a content without a role")
		}
		if r := message(*c.Role, c); r != nil {
			return r
		}
	}
	return sdk.Adapted(rec)
}

func main() { sdk.ServeAdapter(adapter{}) }
`

func corpusPin(t *testing.T, criteria string) string {
	t.Helper()
	raw, err := os.ReadFile(criteria)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Corpus struct{ SHA256 string } `json:"corpus"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Corpus.SHA256
}

// copyTree copies a file or a folder, leaving out node packages and
// built binaries.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, raw, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reviseCriteria is step 1, in node (whose JSON keeps the document's
// member order and compact form).
const reviseCriteria = `
const fs = require('fs');
const path = process.argv[1];
const c = JSON.parse(fs.readFileSync(path, 'utf8'));
c.criteria_revision = '1.1.0';
c.accepted_formats.push('example-lines', 'gemini-generate-content');
c.format_levels['example-lines'] = 'L0';
c.format_levels['gemini-generate-content'] = 'L0';
c.assessability_matrix['example-lines'] = { ...c.assessability_matrix['anthropic-messages'] };
c.assessability_matrix['gemini-generate-content'] = { ...c.assessability_matrix['anthropic-messages'] };
c.input_contract_text = c.input_contract_text.replace('Format is declared, never sniffed;',
  'example-lines (a JSON array of strings: each string one user message with one text block; null is a line without text, a C-UNK block), gemini-generate-content (a Gemini generateContent request body: { systemInstruction?: { parts }, contents: [{ role, parts: [{ text }] }] }; the system instruction is one system message, each content one message under its role, each part one text block). Format is declared, never sniffed;');
fs.writeFileSync(path, JSON.stringify(c));
`

// reviseClassLists is step 1's class-list edit (ANNEX C-9a): a column for
// gemini-generate-content, before the "*" column for L0/L1, whose
// assistant role is the word "model".
const reviseClassLists = `
const fs = require('fs');
const path = process.argv[1];
const l = JSON.parse(fs.readFileSync(path, 'utf8'));
l.columns.unshift({ formats: ['gemini-generate-content'], levels: ['L0'], reads: ['role_raw'],
  classes: { 'P-SYS': { role_raw: ['system'] }, 'P-USER': { role_raw: ['user'] }, 'P-ASST': { role_raw: ['model'] } } });
fs.writeFileSync(path, JSON.stringify(l, null, 2) + '\n');
`

// exampleLinesAdapter is step 2's adaptation rules: the record must be an
// array (else R-5); each string is a user message of one text block, each
// null one of a block without text; anything else is a rule the revision
// leaves undecided.
const exampleLinesAdapter = `  'example-lines': {
    level: 'L0',
    shape: (recordNode) => (recordNode.t === 'array' ? { ok: true } : { r5: true }),
    adapt: (shape, recordNode) => ({
      level: 'L0',
      messages: plain(recordNode).map((line) => {
        if (line !== null && typeof line !== 'string') undecided('an example-lines entry that is neither a string nor null');
        return { role_raw: 'user', schema: false, blocks: [mkBlock({ role_raw: 'user', kind_raw: 'text', text: line })] };
      }),
    }),
    axisP: null,
  },
`

// exampleLinesCases is step 2's cases for the format.
const exampleLinesCases = `  pre('precheck-example-lines', 'An example-lines record is accepted at L0 and pre-checked, one entry per line.',
    { body: env('example-lines', ['hello', 'world']), expectCode: 'precheck' });
  aud('audit-example-lines', 'An example-lines record with a null line is measured at L0, the null line a C-UNK block.',
    { body: env('example-lines', ['hello', null, 'world']), expectCode: 'report' });
  pre('precheck-example-lines-not-an-array', 'An example-lines record that is not an array is refused as not parsing as the declared format.',
    { body: env('example-lines', { lines: [] }), expectCode: 'record_does_not_parse_as_declared_format' });
`

// geminiAdapter is step 2's adaptation rules for gemini-generate-content,
// written from the revised input contract: the record must be an object
// whose contents is an array (else R-5); systemInstruction's parts make one
// system message; each content one message under its role, one text block
// per part; a content without a string role or a part without string text
// is R-5 as well.
const geminiAdapter = `  'gemini-generate-content': {
    level: 'L0',
    shape: (recordNode) => {
      const rec = plain(recordNode);
      if (rec === null || typeof rec !== 'object' || Array.isArray(rec) || !Array.isArray(rec.contents)) return { r5: true };
      const okParts = (c) => c !== null && typeof c === 'object' && Array.isArray(c.parts) && c.parts.every((p) => p !== null && typeof p === 'object' && typeof p.text === 'string');
      if (rec.systemInstruction !== undefined && !okParts(rec.systemInstruction)) return { r5: true };
      if (!rec.contents.every((c) => okParts(c) && typeof c.role === 'string')) return { r5: true };
      return { ok: true };
    },
    adapt: (shape, recordNode) => {
      const rec = plain(recordNode);
      const message = (role, c) => ({ role_raw: role, schema: false, blocks: c.parts.map((p) => mkBlock({ role_raw: role, kind_raw: 'text', text: p.text })) });
      const messages = [];
      if (rec.systemInstruction !== undefined) messages.push(message('system', rec.systemInstruction));
      for (const c of rec.contents) messages.push(message(c.role, c));
      return { level: 'L0', messages };
    },
    axisP: null,
  },
`

// geminiCases is step 2's cases for gemini-generate-content: its "model"
// blocks are P-ASST by the revised class lists.
const geminiCases = `  pre('precheck-gemini', 'A gemini-generate-content record is accepted at L0 and pre-checked, one entry per part.',
    { body: env('gemini-generate-content', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }, { role: 'model', parts: [{ text: 'hello' }] }] }), expectCode: 'precheck' });
  aud('audit-gemini-model-is-assistant', 'A gemini-generate-content record whose model turns are P-ASST by the revised class lists.',
    { body: env('gemini-generate-content', { systemInstruction: { parts: [{ text: 'Answer briefly.' }] }, contents: [{ role: 'user', parts: [{ text: 'What is two and two?' }] }, { role: 'model', parts: [{ text: 'Four.' }, { text: 'Anything else?' }] }] }), expectCode: 'report' });
  pre('precheck-gemini-no-contents', 'A gemini-generate-content record without contents is refused as not parsing as the declared format.',
    { body: env('gemini-generate-content', { messages: [] }), expectCode: 'record_does_not_parse_as_declared_format' });
`
