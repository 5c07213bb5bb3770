package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/assay-audit/assay/host/internal/nodedeps"
	"github.com/assay-audit/assay/host/internal/testhost"
)

// MCP Inspector's CLI (@modelcontextprotocol/inspector, pinned by the
// interop lockfile), headless against /mcp: it lists the tools with their
// schemas, calls a pre-check (a signed answer stating the free allowance
// left), and calls the paid tool unpaid (x402's payment-required result,
// the PaymentRequired as structuredContent).
func TestMCPInspectorCLI(t *testing.T) {
	dir := interopDir(t)
	nodedeps.Install(t, dir, "@modelcontextprotocol/inspector")
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	h := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", t.TempDir())
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	home := t.TempDir() // the inspector keeps a catalog under $HOME
	inspect := func(args ...string) (map[string]any, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "node", append([]string{filepath.Join("node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"),
			"--cli", h.url() + "/mcp"}, args...)...)
		cmd.Dir, cmd.Env = dir, append(cmd.Environ(), "HOME="+home, "NO_COLOR=1")
		out, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if json.Unmarshal(out, &v) != nil {
			t.Fatalf("inspector %v: exit %d, not JSON:\n%.2000s", args, code, out)
		}
		return v, code
	}
	listed, code := inspect("--method", "tools/list")
	tools := map[string]map[string]any{}
	for _, tool := range listed["tools"].([]any) {
		m := tool.(map[string]any)
		tools[m["name"].(string)] = m
	}
	paid := tools["stream_divergence_compare"]
	if code != 0 || tools["stream_divergence_precheck"] == nil || paid == nil {
		t.Fatalf("tools/list: exit %d, tools %v", code, listed)
	}
	if in, _ := paid["inputSchema"].(map[string]any); in["properties"].(map[string]any)["streamed_capture"] == nil || paid["outputSchema"] == nil {
		t.Errorf("the paid tool's schemas: %v", paid)
	}
	body := []string{"--tool-arg", `streamed_capture={"chunks":["YWI="]}`, `reference_output={"chunks":["YWI="]}`}
	pre, code := inspect(append([]string{"--method", "tools/call", "--tool-name", "stream_divergence_precheck"}, body...)...)
	sc, _ := pre["structuredContent"].(map[string]any)
	if free, _ := sc["free_tier"].(map[string]any); code != 0 || sc["kind"] != "precheck" || sc["signature"] == nil || free["remaining"] != float64(99) {
		t.Fatalf("the pre-check: exit %d, %v", code, pre)
	}
	unpaid, _ := inspect(append([]string{"--method", "tools/call", "--tool-name", "stream_divergence_compare"}, body...)...)
	sc, _ = unpaid["structuredContent"].(map[string]any)
	if accepts, _ := sc["accepts"].([]any); unpaid["isError"] != true || sc["x402Version"] != float64(2) || len(accepts) != 1 {
		t.Fatalf("the paid tool unpaid: %v", unpaid)
	}
}
