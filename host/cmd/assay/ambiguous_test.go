package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
)

// copyPlugin puts pkg's binary into dir under name.
func copyPlugin(t *testing.T, pkg, dir, name string) {
	t.Helper()
	raw, err := os.ReadFile(testhost.Plugin(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), raw, 0o755); err != nil {
		t.Fatal(err)
	}
}

// waitExit waits for a host that must refuse to start and returns its
// exit code.
func waitExit(t *testing.T, h *proc) int {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(time.Minute):
		t.Fatal("the host started")
	}
	return h.cmd.ProcessState.ExitCode()
}

// Two adapters for one format in a plugin folder: `assay plugins pin`
// refuses it, naming both and how to choose, and --choose writes a config
// with the chosen one (the other named in a comment). A hand-written
// config with both is refused by `serve --check` and at start, naming
// both binaries, whatever their order; so is one with two families for
// one service. The host started from the chosen config names the binary
// and its digest serving each format in its catalog (JSON and page),
// /readyz and `service status`.
func TestTwoPluginsForOneFormatAreRefused(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	dir := t.TempDir()
	copyPlugin(t, "plugins/context-audit", dir, "assay-context-audit")
	copyPlugin(t, "plugins/adapter-letta-af", dir, "assay-adapter-letta-af")
	copyPlugin(t, "plugins/adapter-generic-message-list", dir, "assay-adapter-generic-message-list")
	copyPlugin(t, "plugins/adapter-anthropic-messages", dir, "assay-adapter-anthropic-messages")
	// an adapter named to sort first, serving the same format
	copyPlugin(t, "plugins/adapter-anthropic-messages", dir, "assay-adapter-aaa-messages")

	var out, said bytes.Buffer
	err := pin([]string{"--dir", dir}, &out, &said)
	if err == nil || !strings.Contains(err.Error(), "assay-adapter-aaa-messages and assay-adapter-anthropic-messages all adapt format \"anthropic-messages\"") ||
		!strings.Contains(err.Error(), "--choose anthropic-messages=") {
		t.Fatalf("pin with two adapters for one format: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := pin([]string{"--dir", dir, "--choose", "anthropic-messages=assay-adapter-anthropic-messages"}, &out, &said); err != nil {
		t.Fatalf("pin --choose: %v\n%s", err, said.String())
	}
	chosen := out.String()
	if strings.Contains(chosen, `path   = "assay-adapter-aaa-messages"`) || !strings.Contains(chosen, `path   = "assay-adapter-anthropic-messages"`) ||
		!strings.Contains(chosen, "# not pinned: assay-adapter-aaa-messages, which also serves anthropic-messages") {
		t.Fatalf("pin --choose wrote:\n%s", chosen)
	}
	if err := pin([]string{"--dir", dir, "--choose", "anthropic-messages=assay-adapter-letta-af"}, &out, &said); err == nil ||
		!strings.Contains(err.Error(), "does not serve anthropic-messages") {
		t.Errorf("--choose naming a binary of another format: %v", err)
	}

	// a hand-written config with both, the look-alike first
	both := "plugin_dir = " + jsonString(dir) + "\n" + chosen
	aaa, _ := pluginhost.PinOf(filepath.Join(dir, "assay-adapter-aaa-messages"))
	both += fmt.Sprintf("plugin \"aaa-messages\" {\n  kind = \"adapter\"\n  path = \"assay-adapter-aaa-messages\"\n  sha256 = %q\n}\n", aaa)
	bothFile := filepath.Join(dir, "both.hcl")
	_ = os.WriteFile(bothFile, []byte(both), 0o600)
	var check bytes.Buffer
	if err := run([]string{"serve", "--check", "--config", bothFile, "--data-dir", t.TempDir(), "--payments", "off"}, &check, &check); err == nil ||
		!strings.Contains(check.String(), "anthropic-messages (assay-adapter-anthropic-messages) and aaa-messages (assay-adapter-aaa-messages) both adapt format \"anthropic-messages\"") {
		t.Errorf("serve --check with two adapters for one format: %v\n%s", err, check.String())
	}
	h := launch(t, bin, nil, "--config", bothFile, "--data-dir", t.TempDir(), "--payments", "off")
	if code := waitExit(t, h); code == 0 || !strings.Contains(h.log(), "assay-adapter-aaa-messages") || !strings.Contains(h.log(), "assay-adapter-anthropic-messages") {
		t.Errorf("serve with two adapters for one format: exit %d\n%s", code, h.log())
	}
	// two families for one service
	fam, _ := pluginhost.PinOf(filepath.Join(dir, "assay-context-audit"))
	twice := "plugin_dir = " + jsonString(dir) + "\n" + chosen +
		fmt.Sprintf("plugin \"context-audit-again\" {\n  kind = \"family\"\n  path = \"assay-context-audit\"\n  sha256 = %q\n}\n", fam)
	twiceFile := filepath.Join(dir, "twice.hcl")
	_ = os.WriteFile(twiceFile, []byte(twice), 0o600)
	h = launch(t, bin, nil, "--config", twiceFile, "--data-dir", t.TempDir(), "--payments", "off")
	if code := waitExit(t, h); code == 0 || !strings.Contains(h.log(), `both serve "context-audit"`) {
		t.Errorf("serve with two families for one service: exit %d\n%s", code, h.log())
	}

	// the chosen config: every surface names the binary serving a format
	chosenFile := filepath.Join(dir, "chosen.hcl")
	_ = os.WriteFile(chosenFile, []byte("plugin_dir = "+jsonString(dir)+"\n"+chosen), 0o600)
	data := t.TempDir()
	h = launch(t, bin, nil, "--config", chosenFile, "--data-dir", data, "--payments", "off")
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	want, _ := pluginhost.PinOf(filepath.Join(dir, "assay-adapter-anthropic-messages"))
	var doc struct {
		Adapters []pluginhost.AdapterStatus `json:"adapters"`
	}
	for _, path := range []string{"/", "/readyz"} {
		getJSON(t, h.url()+path, &doc)
		found := false
		for _, a := range doc.Adapters {
			if a.Format == "anthropic-messages" {
				found = a.Binary == "assay-adapter-anthropic-messages" && a.SHA256Prefix == want[:12] && a.Accepted
			}
		}
		if !found {
			t.Errorf("%s names no binary for anthropic-messages: %+v", path, doc.Adapters)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, h.url()+"/", nil)
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "<code>assay-adapter-anthropic-messages</code>, SHA-256 <code>"+want[:12]+"</code>") {
		t.Errorf("the catalog page names no binary for anthropic-messages")
	}
	h.stop()
	var status bytes.Buffer
	if err := run([]string{"service", "status", "--config", chosenFile, "--data-dir", data}, &status, &status); err != nil {
		t.Fatalf("service status: %v\n%s", err, status.String())
	}
	if !strings.Contains(status.String(), "assay-adapter-anthropic-messages "+want[:12]) || !strings.Contains(status.String(), "assay-context-audit "+fam[:12]) {
		t.Errorf("service status names no binaries:\n%s", status.String())
	}
}
