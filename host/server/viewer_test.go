package server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	ccorpus "github.com/assay-audit/assay/corpus/context-composition"
	mcorpus "github.com/assay-audit/assay/corpus/memory-scope-hygiene"
	"github.com/assay-audit/assay/corpus/realistic"
	scorpus "github.com/assay-audit/assay/corpus/settlement-evidence"
	dcorpus "github.com/assay-audit/assay/corpus/stream-divergence"
	"github.com/assay-audit/assay/host/internal/testhost"
)

// chromiumPath finds Debian's Chromium (ASSAY_CHROMIUM overrides).
func chromiumPath() string {
	if p := os.Getenv("ASSAY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// corpusBody is the request body of the named corpus case.
func corpusBody(t *testing.T, corpus []byte, name string) []byte {
	t.Helper()
	var doc struct {
		Cases []struct {
			Name    string `json:"name"`
			Request struct {
				Body json.RawMessage `json:"body"`
			} `json:"request"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(corpus, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		if c.Name == name {
			return c.Request.Body
		}
	}
	t.Fatalf("no corpus case %q", name)
	return nil
}

// The report viewer in a real browser (Debian's headless Chromium through
// playwright-core): for a signed report of each service made by a running
// host, the page says VALID with the signing key's id, draws every member
// of the answer with the figure the answer holds, says INVALID for a
// changed answer, checks against a pasted key set without any request,
// makes no request but GET /keys, logs no error (a CSP violation is one)
// and keeps the criteria's fences in its own words. ASSAY_SCREENSHOTS=dir
// keeps a PNG of each view (make screenshots).
func TestViewerInBrowser(t *testing.T) {
	browser := chromiumPath()
	if browser == "" {
		if os.Getenv("ASSAY_REQUIRE_BROWSER") != "" {
			t.Fatal("ASSAY_REQUIRE_BROWSER is set and no chromium is on PATH (apt-get install chromium)")
		}
		t.Skip("no chromium on PATH: the viewer's browser test needs Debian's chromium (apt-get install chromium; .ci/run installs it)")
	}
	dir := nodeDir(t, "testdata/browsercheck", "playwright-core")

	h := testhost.Start(t, testhost.Options{Adapters: caAdapters}, sdPkg, lcPkg, shPkg, caPkg)
	// a context record as a harness writes it (corpus/realistic: prose,
	// code, tool payloads, blobs, near-duplicates, stated counts), and
	// one case of each family's corpus whose report prints the criteria's
	// absent tokens with their reasons
	letta, err := realistic.Record("letta-af", 160<<10, 3)
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name, path string
		body       []byte
		shot       bool
	}{
		{"context-audit letta-af", "/context-audit/audit", letta, true},
		{"context-audit generic", "/context-audit/audit", corpusBody(t, ccorpus.JSON, "audit-m12-agreement-edges"), false},
		{"scope-hygiene", "/scope-hygiene/audit", corpusBody(t, mcorpus.JSON, "audit-n4-malformed-marker-forms"), true},
		{"lifecycle-analytics", "/lifecycle-analytics/analyse", corpusBody(t, scorpus.JSON, "analyse-used-at-absent-with-rails-groups-not-computable"), true},
		{"stream-divergence", "/stream-divergence/compare", corpusBody(t, dcorpus.JSON, "compare-many-alternating-spans"), true},
	}
	type report struct {
		Name string `json:"name"`
		Text string `json:"text"`
		Shot bool   `json:"shot"`
	}
	var reports []report
	for _, c := range calls {
		r := post(t, h.URL+c.path, c.body)
		if r.status != 200 || r.json["kind"] != "report" {
			t.Fatalf("%s: %d %.300s", c.name, r.status, r.raw)
		}
		verified(t, h, r)
		reports = append(reports, report{c.name, string(r.raw), c.shot})
	}
	keys := do(t, "GET", h.URL+"/keys", nil, nil)
	in, _ := json.Marshal(map[string]any{"base": h.URL, "chromium": browser, "reports": reports,
		"jwks": string(keys.raw), "screenshots": os.Getenv("ASSAY_SCREENSHOTS")})
	cmd := exec.Command("node", "view.mjs")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the viewer check: %v", err)
	}
}
