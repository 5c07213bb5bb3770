package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/signing"
)

// A host binds before it proves: /healthz answers while the launch proof
// runs, the service answers a signed 503 service_starting with
// Retry-After, and /readyz names what runs. Another host of the fleet on
// the same store, with the same set, serves without proving again (the
// proof is the store's); assay plugins reprove makes the next start prove
// again; a changed plugin binary is a new set, proven before it is served.
func TestAStartBindsFirstAndProvesEachSetOnce(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	cfg := sdConfig(t)
	spec, dataDir := storetest.Spec(t, "postgres")
	h := launch(t, bin, nil, "--config", cfg, "--data-dir", dataDir, "--store", spec)
	starting, answered := 0, 0
	var jwks []byte
	for !startOver(h.url(), 100*time.Millisecond, h.done) {
		select {
		case <-h.done:
			t.Fatalf("the host exited:\n%s", h.log())
		default:
		}
		status, code, body := tryPrecheck(h.url())
		if status == 0 {
			continue // not bound yet
		}
		answered++
		switch {
		case status == 503 && code == "service_starting":
			starting++
			if jwks == nil {
				jwks, _ = get(t, h.url()+"/keys")
			}
			if _, err := signing.Verify(body, jwks); err != nil {
				t.Errorf("a service_starting refusal is not signed: %v\n%s", err, body)
			}
			var r struct {
				Ready    bool     `json:"ready"`
				Starting []string `json:"starting"`
			}
			if code := getJSON(t, h.url()+"/readyz", &r); code != 503 && len(r.Starting) > 0 || code == 503 && r.Ready {
				t.Errorf("/readyz while proving: %d %+v", code, r)
			}
		case status == 503 && code == "host_starting", status == 200:
		default:
			t.Errorf("while starting: %d %s %s", status, code, body)
		}
	}
	if starting == 0 {
		t.Errorf("no request met the proof under way (%d answered):\n%s", answered, h.log())
	}
	if raw, code := get(t, h.url()+"/readyz"); code != 200 {
		t.Fatalf("after the start: /readyz %d %s\n%s", code, raw, h.log())
	}
	if status, code := precheckCode(t, h.url(), 1); status != 200 {
		t.Fatalf("a pre-check after the start: %d %s", status, code)
	}
	// the build, everywhere an operator looks: the log's first line,
	// /readyz and /metrics name what `assay version` says
	build := buildOf(t, bin)
	var ready struct {
		Version string `json:"version"`
	}
	getJSON(t, h.url()+"/readyz", &ready)
	metrics, _ := get(t, h.url()+"/metrics")
	firstLine, _, _ := strings.Cut(h.log(), "\n")
	if build == "unknown" || ready.Version != build || !strings.Contains(firstLine, "assay serve starting: version="+build) ||
		!strings.Contains(string(metrics), `assay_build_info{goversion="`) || !strings.Contains(string(metrics), `version="`+build+`"} 1`) {
		t.Errorf("the build %q: /readyz %q, first log line %q, /metrics has it: %v", build, ready.Version, firstLine,
			strings.Contains(string(metrics), build))
	}
	if l := h.log(); !strings.Contains(l, "corpus passed at launch: service=stream-divergence") || !strings.Contains(l, "custody check at launch: service=stream-divergence") ||
		!strings.Contains(l, "start over: ready=true services=1 proven_now=1") {
		t.Fatalf("the first start's log:\n%s", l)
	}
	h.stop()

	other := t.TempDir()
	again := launch(t, bin, nil, "--config", cfg, "--data-dir", other, "--store", spec)
	if !again.up() {
		t.Fatalf("another host:\n%s", again.log())
	}
	if raw, code := get(t, again.url()+"/readyz"); code != 200 {
		t.Fatalf("another host: /readyz %d %s", code, raw)
	}
	first, _ := os.ReadFile(filepath.Join(dataDir, "host-id"))
	if l := again.log(); strings.Contains(l, "corpus passed at launch") || !strings.Contains(l, "launch proof on record for this plugin set: served without proving again: service=stream-divergence") ||
		!strings.Contains(l, "by_host="+strings.TrimSpace(string(first))) || !strings.Contains(l, "proven_now=0") {
		t.Fatalf("another host of the fleet proved again:\n%s", l)
	}
	again.stop()

	var out strings.Builder
	if err := run([]string{"plugins", "reprove", "--data-dir", dataDir, "--store", spec}, &out, &out); err != nil || !strings.Contains(out.String(), "forgot 1 launch proofs") {
		t.Fatalf("plugins reprove: %v\n%s", err, out.String())
	}
	restarted := launch(t, bin, nil, "--config", cfg, "--data-dir", dataDir, "--store", spec)
	if !restarted.up() {
		t.Fatalf("the restart after reprove:\n%s", restarted.log())
	}
	if l := restarted.log(); strings.Contains(l, "launch proof on record") || !strings.Contains(l, "corpus passed at launch: service=stream-divergence") {
		t.Fatalf("the restart after reprove did not prove again:\n%s", l)
	}
	restarted.stop()

	// the same family, another binary (a byte appended: another pin)
	plugin := testhost.Plugin(t, "plugins/stream-divergence")
	raw, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	changed := filepath.Join(dir, "assay-stream-divergence")
	if err := os.WriteFile(changed, append(raw, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, _ := pluginhost.PinOf(changed)
	cfg2 := filepath.Join(dir, "assay.hcl")
	_ = os.WriteFile(cfg2, []byte(fmt.Sprintf("plugin_dir = %q\nplugin \"stream-divergence\" {\n  path = \"assay-stream-divergence\"\n  sha256 = %q\n}\n", dir, sum)), 0o600)
	third := launch(t, bin, nil, "--config", cfg2, "--data-dir", other, "--store", spec)
	if !third.up() {
		t.Fatalf("the changed set:\n%s", third.log())
	}
	if l := third.log(); strings.Contains(l, "launch proof on record") || !strings.Contains(l, "corpus passed at launch: service=stream-divergence") {
		t.Fatalf("a changed binary was not proven again:\n%s", l)
	}
}

// tryPrecheck posts a pre-check; status 0 when nothing answered.
func tryPrecheck(base string) (int, string, []byte) {
	body := `{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`
	resp, err := http.Post(base+"/stream-divergence/precheck", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", nil
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	var a struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(raw, &a)
	if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
		return resp.StatusCode, a.Error.Code + " (no Retry-After)", raw
	}
	return resp.StatusCode, a.Error.Code, raw
}

// /readyz and the catalog say the same of each adapter: with every family
// loaded, each shipped adapter's format is accepted by loaded criteria
// (a request reaches it) in both.
func TestReadyzAndTheCatalogAgreeOnAdapters(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	cfg, _ := everyPlugin(t, t.TempDir(), "")
	h := launch(t, bin, nil, "--config", cfg, "--data-dir", t.TempDir())
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	type adapters struct {
		Adapters []struct {
			Format   string `json:"format"`
			Accepted bool   `json:"accepted_by_loaded_criteria"`
		} `json:"adapters"`
	}
	var ready, cat adapters
	getJSON(t, h.url()+"/readyz", &ready)
	getJSON(t, h.url()+"/", &cat)
	if len(ready.Adapters) != 3 || len(cat.Adapters) != 3 {
		t.Fatalf("adapters: /readyz %+v, catalog %+v", ready.Adapters, cat.Adapters)
	}
	for i := range ready.Adapters {
		if r, c := ready.Adapters[i], cat.Adapters[i]; r.Format != c.Format || !r.Accepted || !c.Accepted {
			t.Errorf("adapter %d: /readyz %+v, catalog %+v", i, r, c)
		}
	}
}
