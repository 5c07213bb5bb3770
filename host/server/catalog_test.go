package server_test

import (
	"encoding/json"
	"html"
	"os"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
)

// The catalog page quotes each service's criteria (what it states, what
// it never does), its price, caps and free allowance, with copyable
// pre-check and paid requests; a service's own page adds the criteria's
// never-assessable list; both have a JSON form.
func TestCatalogPages(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: caAdapters}, sdPkg, caPkg)
	page := do(t, "GET", h.URL+"/", nil, map[string]string{"Accept": "text/html"})
	text := html.UnescapeString(string(page.raw))
	if !strings.Contains(text, `<a href="/view">report viewer</a>`) {
		t.Error("the catalog page does not link the report viewer")
	}
	for _, c := range []struct{ service, criteria, op, price string }{
		{"stream-divergence", "stream-divergence", "compare", "$0.05"},
		{"context-audit", "context-composition", "audit", "$0.05"},
	} {
		raw, err := os.ReadFile("../../criteria/" + c.criteria + "/criteria.json")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Honesty string `json:"honesty_line"`
			Scope   string `json:"scope_block"`
			Never   string `json:"never"`
		}
		_ = json.Unmarshal(raw, &doc)
		states := doc.Honesty
		if states == "" {
			states = doc.Scope
		}
		for _, want := range []string{states, doc.Never, "POST /" + c.service + "/precheck", "POST /" + c.service + "/" + c.op, c.price,
			"curl -s -X POST http://HOST/" + c.service + "/precheck", "100 per UTC day", "5000 ms"} {
			if !strings.Contains(text, want) {
				t.Errorf("the catalog page lacks %q for %s", want, c.service)
			}
		}
	}
	one := html.UnescapeString(string(do(t, "GET", h.URL+"/context-audit", nil, map[string]string{"Accept": "text/html"}).raw))
	raw, _ := os.ReadFile("../../criteria/context-composition/criteria.json")
	var cc struct {
		NeverAssessable []string `json:"never_assessable"`
	}
	_ = json.Unmarshal(raw, &cc)
	if len(cc.NeverAssessable) < 5 {
		t.Fatal("no never-assessable register read")
	}
	for _, item := range cc.NeverAssessable {
		if !strings.Contains(one, item) {
			t.Errorf("the context-audit page lacks %q", item)
		}
	}
	var entry struct {
		Service         string   `json:"service"`
		NeverAssessable []string `json:"never_assessable"`
		Ops             []struct{ Example string }
	}
	r := do(t, "GET", h.URL+"/context-audit", nil, nil)
	if err := json.Unmarshal(r.raw, &entry); err != nil || entry.Service != "context-audit" || len(entry.NeverAssessable) != len(cc.NeverAssessable) ||
		len(entry.Ops) != 1 || !strings.Contains(entry.Ops[0].Example, `"envelope_version":"context-composition-envelope/1"`) {
		t.Errorf("the JSON entry: %v %s", err, r.raw)
	}
	if strings.Contains(string(page.raw), "<script") {
		t.Error("the catalog page runs a script")
	}
}
