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
// accepts example-lines, the example adapter's format (a JSON array of
// strings, one user message per string, L0). Its criteria owner
//
//  1. adds the format to the criteria (accepted_formats, format_levels,
//     its assessability_matrix row, the input contract) and bumps the
//     revision;
//  2. writes the format's adaptation rules into the corpus generator
//     (ADAPTERS in corpus/gen/context-composition.mjs) and cases for it;
//  3. re-pins: node corpus/gen-corpus.mjs rewrites the corpus and the
//     served criteria's corpus.sha256;
//  4. builds the family, whose binary embeds the revised criteria.
//
// A host loading that family, the three adapters and the example adapter
// passes the revised corpus at launch, serves revision 1.1.0, and
// measures an example-lines record. The example adapter itself is
// unchanged: an adapter author ships alone; the criteria's owner accepts
// the format.
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

	// 2. the generator: the format's adaptation rules, and its cases
	gen := filepath.Join(work, "corpus/gen/context-composition.mjs")
	src, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for anchor, add := range map[string]string{
		"const ADAPTERS = {\n": exampleLinesAdapter,
		"  const env = (fmt, record, extra = {}) => ({ envelope_version: ENVELOPE, declared_format_id: fmt, record, ...extra });\n": exampleLinesCases,
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

	h := plugintest.StartHost(t, plugintest.HostOptions{Assay: testhost.Binary(t, "host/cmd/assay", "assay"),
		Plugins: []string{filepath.Join(bin, "assay-context-audit"), filepath.Join(bin, "assay-adapter-example-lines")}})
	status, raw := h.Get("/context-audit/criteria")
	var served struct {
		Revision string   `json:"criteria_revision"`
		Formats  []string `json:"accepted_formats"`
	}
	if err := json.Unmarshal(raw, &served); status != 200 || err != nil || served.Revision != "1.1.0" || !strings.Contains(strings.Join(served.Formats, ","), "example-lines") {
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
}

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
c.accepted_formats.push('example-lines');
c.format_levels['example-lines'] = 'L0';
c.assessability_matrix['example-lines'] = { ...c.assessability_matrix['anthropic-messages'] };
c.input_contract_text = c.input_contract_text.replace('Format is declared, never sniffed;',
  'example-lines (a JSON array of strings: each string one user message with one text block; null is a line without text, a C-UNK block). Format is declared, never sniffed;');
fs.writeFileSync(path, JSON.stringify(c));
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
