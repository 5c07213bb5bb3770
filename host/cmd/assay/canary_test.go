package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/canaryproof"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/launchproof"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
)

// `assay serve --canary-proof` on the real binaries and every family:
// nearly two thousand planted requests, over HTTP and as MCP tool calls on
// /mcp, no trace on any surface, and then the host serves.
func TestServeWithCanaryProof(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	// a folder of its own: the one tests build into holds other test
	// plugins too
	dir := t.TempDir()
	for _, p := range []string{"plugins/stream-divergence", "plugins/lifecycle-analytics", "plugins/scope-hygiene", "plugins/context-audit",
		"plugins/adapter-letta-af", "plugins/adapter-anthropic-messages", "plugins/adapter-generic-message-list"} {
		copyPlugin(t, p, dir, "assay-"+filepath.Base(p))
	}
	var pins bytes.Buffer
	if err := run([]string{"plugins", "pin", "--dir", dir}, &pins, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "assay.hcl")
	_ = os.WriteFile(cfg, []byte(`plugin_dir = "`+dir+`"`+"\n"+pins.String()), 0o600)
	addr := freePort(t)
	cmd := exec.Command(bin, "serve", "--config", cfg, "--listen", addr, "--data-dir", t.TempDir(), "--canary-proof", "--payments", "house")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var log strings.Builder
	buf := make([]byte, 4096)
	// the host listens at once and serves each service once its proofs
	// passed: the start is over when it says so
	for !strings.Contains(log.String(), "start over") {
		n, err := stderr.Read(buf)
		log.Write(buf[:n])
		if err != nil {
			t.Fatalf("the host ended before its start was over:\n%s", log.String())
		}
	}
	if strings.Count(log.String(), "canary proof passed: no trace on any surface") != 4 || strings.Count(log.String(), "corpus passed at launch") != 4 ||
		!strings.Contains(log.String(), "start over: ready=true") {
		t.Fatalf("launch log:\n%s", log.String())
	}
	// the routes went through /mcp as tool calls too
	if m := regexp.MustCompile(`mcp_tool_calls=(\d+)`).FindStringSubmatch(log.String()); m == nil || m[1] == "0" || len(m[1]) < 3 {
		t.Errorf("the proof sent no MCP tool calls (at least a hundred expected):\n%s", log.String())
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ready after the proof: %v %v", resp, err)
	}
	resp.Body.Close()
}

// A host that keeps what it is sent (here a handler that logs request
// bodies) fails the proof, which names the surface and refuses to serve.
func TestCanaryProofRefusesALeak(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	capture := launchproof.NewTap(&out)
	log := hclog.New(&hclog.LoggerOptions{Output: capture, Level: hclog.Info})
	path := testhost.Plugin(t, "plugins/stream-divergence")
	sum, _ := pluginhost.PinOf(path)
	f, err := pluginhost.StartFamily(ctx, pluginhost.Spec{Name: "stream-divergence", Path: path, SHA256: sum},
		pluginhost.Options{Logger: log, Env: []string{"PATH=" + os.Getenv("PATH")}}, pluginhost.NewRouter())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dataDir := t.TempDir()
	keys, _ := signing.Open(dataDir)
	st, err := store.Open(ctx, "sqlite", dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	services := []server.Service{{Desc: f.Description(), Backend: server.FamilyBackend{Family: f}}}
	honest := server.New(server.Config{Services: services, Keys: keys, Logger: log})
	leaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		log.Info("request", "body", string(body)) // the defect the proof exists to catch
		r.Body = io.NopCloser(bytes.NewReader(body))
		honest.ServeHTTP(w, r)
	})
	found, _, err := canaryProof(ctx, services, leaky, keys, st, dataDir, capture, log)
	if err != nil || !hasSurface(found, "the host log") {
		t.Fatalf("a leaking host: %v %v\n%.2000s", found, err, out.String())
	}
	// a family that copies what it was sent into its answer (here the
	// whole body, as a "sample" member) fails it too, naming the answer
	echoing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		honest.ServeHTTP(rec, r)
		var answer map[string]any
		if json.Unmarshal(rec.Body.Bytes(), &answer) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		answer["sample"] = string(body)
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(answer)
	})
	found, _, err = canaryProof(ctx, services, echoing, keys, st, dataDir, capture, log)
	if err != nil || !hasSurface(found, "the answer to POST /stream-divergence/compare") {
		t.Fatalf("an echoing family: %v %v\n%.2000s", found, err, out.String())
	}
	if found, sent, err := canaryProof(ctx, services, honest, keys, st, dataDir, capture, log); err != nil || len(found) > 0 || sent < 100 {
		t.Errorf("the same host without the leak: %d requests, %v %v", sent, found, err)
	}

	// as a start runs it (--canary-proof): a service held back while its
	// proof runs is stopped on this host when the proof finds a trace, and
	// served, its proof recorded, when it finds none
	target := launchproof.Target{Service: services[0], Key: "canary-proof-key"}
	k := keyOf(services[0])
	for _, c := range []struct {
		what    string
		served  http.Handler
		stopped bool
	}{{"a leaking host", leaky, true}, {"the host without the leak", honest, false}} {
		board := servicestate.New(nil, nil, nil)
		board.StartLocal(k, "its canary proof runs")
		run := &canaryRun{todo: []launchproof.Target{target}, store: st, board: board, hostID: "h1", build: "b1"}
		if !run.holds(target) {
			t.Fatalf("%s: the canary proof does not hold its service back", c.what)
		}
		run.run(ctx, c.served, keys, st, dataDir, capture, log)
		state := board.State(k)
		_, recorded, err := st.ProofOf(ctx, target.Key)
		switch {
		case err != nil:
			t.Fatal(err)
		case c.stopped && (!state.Stopped || state.Starting || !strings.HasPrefix(state.Reason, "canary proof failed: the canary was found on ") || recorded):
			t.Errorf("%s: state %+v, recorded %v", c.what, state, recorded)
		case !c.stopped && (state.Stopped || !recorded):
			t.Errorf("%s: state %+v, recorded %v", c.what, state, recorded)
		}
		if len(run.running()) != 0 {
			t.Errorf("%s: still running %v", c.what, run.running())
		}
	}
}

// hasSurface says whether a finding names a surface beginning with prefix.
func hasSurface(found []canaryproof.Finding, prefix string) bool {
	for _, f := range found {
		if strings.HasPrefix(f.Surface, prefix) {
			return true
		}
	}
	return false
}
