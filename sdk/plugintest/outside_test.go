package plugintest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What a third party does, from an empty folder outside the repository: a
// module of its own requiring only the sdk module (replace'd to this
// checkout, as the docs say for a clone), the example adapter's and the
// example family's sources, and tests that build both binaries, run the
// adapter's conformance kit against the real subprocess, check the
// family's description as a host does, then stand up a real host with
// both and reach a signed report. Its tests pass, and its module graph
// holds nothing of the host's (no store, config or metrics libraries).
func TestPluginsInAModuleOfTheirOwn(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("needs the go command")
	}
	sdkDir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	assay := assayBinary(t, filepath.Dir(sdkDir))
	mod := writeModule(t, sdkDir, map[string]string{
		"e2e/e2e_test.go":                  endToEnd,
		"adapter/adapter.go":               "examples/adapter/adapter.go",
		"adapter/lines/lines.go":           "examples/adapter/lines/lines.go",
		"adapter/lines/lines_test.go":      "examples/adapter/lines/lines_test.go",
		"adapter/lines/record.schema.json": "examples/adapter/lines/record.schema.json",
		"family/count/corpus_test.go":      "examples/family/count/corpus_test.go",
		"family/main.go":                   "examples/family/main.go",
		"family/count/count.go":            "examples/family/count/count.go",
		"family/count/count_test.go":       "examples/family/count/count_test.go",
		"family/count/criteria.json":       "examples/family/count/criteria.json",
		"family/count/corpus.json":         "examples/family/count/corpus.json",
	}, nil)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "ASSAY="+assay)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in a module of its own: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("test", "-count=1", "-v", "./...")
	for _, pass := range []string{"--- PASS: TestTheAdapterBinary", "--- PASS: TestTheFamilyBinary", "--- PASS: TestASignedReport", "--- PASS: TestCountsTheAdaptedRecord", "--- PASS: TestTheCorpusInProcess", "--- PASS: TestConformance"} {
		if !strings.Contains(out, pass) {
			t.Errorf("the outside module's tests did not all pass (%s missing):\n%s", pass, out)
		}
	}
	graph := run("list", "-m", "all")
	for _, host := range []string{"github.com/jackc/pgx", "modernc.org/sqlite", "github.com/hashicorp/hcl", "github.com/prometheus/client_golang"} {
		if strings.Contains(graph, host) {
			t.Errorf("a plugin's module graph holds %s, a host library:\n%s", host, graph)
		}
	}
}

// writeModule writes a module of its own in a temp dir, as a third party
// starts one: a go.mod requiring only the sdk module (replace'd to this
// checkout, as the docs say for a clone) and its go.sum, then files, each
// either its text or "examples/…", a file of the SDK's examples with its
// import paths moved into the module; edit, when set, may change each
// example file's text (name is its path in the module).
func writeModule(t *testing.T, sdkDir string, files map[string]string, edit func(name, body string) string) string {
	t.Helper()
	mod := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(sdkDir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.mod"] = "module example.com/plugins\n\ngo 1.26.8\n\nrequire github.com/assay-audit/assay/sdk v0.0.0\n\n" +
		"replace github.com/assay-audit/assay/sdk => " + sdkDir + "\n"
	files["go.sum"] = string(sum)
	for name, body := range files {
		if strings.HasPrefix(body, "examples/") {
			src, err := os.ReadFile(filepath.Join(sdkDir, body))
			if err != nil {
				t.Fatal(err)
			}
			body = strings.ReplaceAll(string(src), "github.com/assay-audit/assay/sdk/examples/", "example.com/plugins/")
			if edit != nil {
				body = edit(name, body)
			}
		}
		path := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return mod
}

// assayBinary is the host binary make build left in ASSAY_BIN, or one
// built from the checkout around the sdk.
func assayBinary(t *testing.T, root string) string {
	if dir := os.Getenv("ASSAY_BIN"); dir != "" {
		if p := filepath.Join(dir, "assay"); fileExists(p) {
			return p
		}
	}
	out := filepath.Join(t.TempDir(), "assay")
	cmd := exec.Command("go", "build", "-o", out, "./host/cmd/assay")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the host: %v\n%s", err, msg)
	}
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// endToEnd is the outside module's test: what docs/plugin-authors.md shows.
const endToEnd = `package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk/adaptertest"
	"github.com/assay-audit/assay/sdk/plugintest"
)

func build(t *testing.T, name, pkg string) string {
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func TestTheAdapterBinary(t *testing.T) {
	a := plugintest.StartAdapter(t, build(t, "assay-adapter-example-lines", "../adapter"))
	if a.Describe().GetFormatId() != "example-lines" {
		t.Fatalf("format id %q", a.Describe().GetFormatId())
	}
	adaptertest.Run(t, a, adaptertest.Cases{
		Valid:   [][]byte{[]byte(` + "`" + `["hello","world"]` + "`" + `), []byte(` + "`" + `[]` + "`" + `)},
		Invalid: [][]byte{[]byte(` + "`" + `{"lines":["secret"]}` + "`" + `), []byte(` + "`" + `not json` + "`" + `)},
	})
}

func TestTheFamilyBinary(t *testing.T) {
	d := plugintest.StartFamily(t, build(t, "assay-example-count", "../family"))
	if d.GetService() != "example-count" {
		t.Fatalf("service %q", d.GetService())
	}
}

func TestASignedReport(t *testing.T) {
	h := plugintest.StartHost(t, plugintest.HostOptions{Plugins: []string{
		build(t, "assay-example-count", "../family"),
		build(t, "assay-adapter-example-lines", "../adapter"),
	}})
	body := []byte(` + "`" + `{"declared_format_id":"example-lines","record":["hello","wörld"]}` + "`" + `)
	if status, raw := h.Post("/example-count/precheck", body); status != 200 {
		t.Fatalf("pre-check: %d %s", status, raw)
	}
	status, raw := h.Post("/example-count/count", body)
	if status != 200 {
		t.Fatalf("count: %d %s", status, raw)
	}
	if kid := h.Verify(raw); kid == "" {
		t.Fatal("no key id")
	}
	var report map[string]any
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	// two lines, one text block each, 5 + 6 UTF-8 bytes (ö is two)
	if report["kind"] != "report" || report["message_count"] != 2.0 || report["block_count"] != 2.0 || report["text_bytes"] != 11.0 {
		t.Errorf("report: %s", raw)
	}
	if status, raw := h.Post("/example-count/count", []byte(` + "`" + `{"declared_format_id":"example-lines","record":{"x":1}}` + "`" + `)); status != 400 ||
		!strings.Contains(string(raw), "record_does_not_parse_as_declared_format") {
		t.Errorf("a record the adapter refuses: %d %s", status, raw)
	}
}
`
