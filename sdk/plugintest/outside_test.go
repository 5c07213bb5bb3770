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
// checkout, as the docs say for a clone), the example adapter's source,
// and a test that builds the binary and runs the conformance kit against
// the real subprocess through plugintest. Its tests pass, and its module
// graph holds nothing of the host's (no store, config or metrics
// libraries).
func TestAnAdapterInAModuleOfItsOwn(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	sdkDir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	src, err := os.ReadFile(filepath.Join(sdkDir, "examples", "adapter", "adapter.go"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(sdkDir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.com/lines-adapter\n\ngo 1.26.8\n\nrequire github.com/assay-audit/assay/sdk v0.0.0\n\n" +
			"replace github.com/assay-audit/assay/sdk => " + sdkDir + "\n",
		"go.sum":     string(sum),
		"adapter.go": string(src),
		"binary_test.go": `package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/assay-audit/assay/sdk/adaptertest"
	"github.com/assay-audit/assay/sdk/plugintest"
)

func TestTheBuiltBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "assay-adapter-lines")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	a := plugintest.StartAdapter(t, bin)
	if a.Describe().GetFormatId() == "" {
		t.Fatal("no format id")
	}
	adaptertest.Run(t, a, adaptertest.Cases{
		Valid:   [][]byte{[]byte(` + "`" + `["hello","world"]` + "`" + `), []byte(` + "`" + `[]` + "`" + `)},
		Invalid: [][]byte{[]byte(` + "`" + `{"lines":["secret"]}` + "`" + `), []byte(` + "`" + `not json` + "`" + `)},
	})
}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in a module of its own: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("test", "-count=1", "-v", "./..."); !strings.Contains(out, "--- PASS: TestTheBuiltBinary") {
		t.Errorf("the outside module's test did not pass:\n%s", out)
	}
	graph := run("list", "-m", "all")
	for _, host := range []string{"github.com/jackc/pgx", "modernc.org/sqlite", "github.com/hashicorp/hcl", "github.com/prometheus/client_golang"} {
		if strings.Contains(graph, host) {
			t.Errorf("a plugin's module graph holds %s, a host library:\n%s", host, graph)
		}
	}
}
