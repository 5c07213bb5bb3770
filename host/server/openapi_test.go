package server_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/nodedeps"
	"github.com/assay-audit/assay/host/internal/testhost"
)

// nodeDir installs a node helper's locked packages once (npm ci, when
// node_modules lacks module) and returns its absolute folder.
func nodeDir(t *testing.T, rel, module string) string {
	dir, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	nodedeps.Install(t, dir, module)
	return dir
}

// GET /openapi.json is a valid OpenAPI 3.1 document (checked by
// @readme/openapi-parser) that describes every route the server mounts
// and nothing else, with every family's request schema; a host with one
// service describes its root routes too.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	dir := nodeDir(t, "testdata/apicheck", "@readme/openapi-parser")
	for _, c := range []struct {
		name string
		pkgs []string
		opts testhost.Options
	}{
		{"every family", []string{sdPkg, lcPkg, shPkg, caPkg}, testhost.Options{Adapters: caAdapters}},
		{"one family", []string{sdPkg}, testhost.Options{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := testhost.Start(t, c.opts, c.pkgs...)
			r := do(t, "GET", h.URL+"/openapi.json", nil, nil)
			if r.status != 200 {
				t.Fatalf("GET /openapi.json: %d", r.status)
			}
			var doc struct {
				OpenAPI    string                                `json:"openapi"`
				Paths      map[string]map[string]json.RawMessage `json:"paths"`
				Components struct {
					Schemas map[string]json.RawMessage `json:"schemas"`
				} `json:"components"`
			}
			if err := json.Unmarshal(r.raw, &doc); err != nil || doc.OpenAPI != "3.1.0" {
				t.Fatalf("document: %v %q", err, doc.OpenAPI)
			}
			var described []string
			for path, item := range doc.Paths {
				for method := range item {
					described = append(described, strings.ToUpper(method)+" "+path)
				}
			}
			sort.Strings(described)
			var mounted []string
			for _, p := range h.Server.Routes() {
				mounted = append(mounted, strings.Replace(p, "/{$}", "/", 1))
			}
			sort.Strings(mounted)
			if strings.Join(described, "\n") != strings.Join(mounted, "\n") {
				t.Errorf("described:\n%s\nmounted:\n%s", strings.Join(described, "\n"), strings.Join(mounted, "\n"))
			}
			for _, name := range []string{"StreamDivergenceRequest", "SignedAnswer", "Refusal", "PaymentRequired"} {
				if len(doc.Components.Schemas[name]) == 0 {
					t.Errorf("no component schema %s", name)
				}
			}
			file := filepath.Join(t.TempDir(), "openapi.json")
			_ = os.WriteFile(file, r.raw, 0o600)
			cmd := exec.Command("node", "validate.mjs", file)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "valid") {
				t.Fatalf("the validator: %v\n%s", err, out)
			}
		})
	}
}
