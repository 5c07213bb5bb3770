package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
)

// A plugin that cannot start (here one whose main exits at once, one of
// a future protocol, one of the wrong kind) takes out that plugin, not
// the host: the host logs which and why and serves the rest; with
// --strict-plugins it refuses to start. (Two plugins for one format or
// service are refused whatever the flag: ambiguous_test.go.)
func TestAPluginThatCannotStartIsLeftOut(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	good := testhost.Plugin(t, "plugins/stream-divergence")
	dir := t.TempDir()
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "assay-stream-divergence"), raw, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "assay-broken"), []byte("#!/bin/sh\nexit 3\n"), 0o755)
	// go-plugin's handshake line naming a protocol version this host does
	// not speak (what a plugin built on a future sdk would say), from a
	// script whose child (the sleep) holds the plugin's output: the host
	// kills the plugin's whole process group, the child too (go-plugin
	// would otherwise wait for the output to close, holding the start)
	childPid := filepath.Join(t.TempDir(), "child.pid")
	_ = os.WriteFile(filepath.Join(dir, "assay-future"), []byte("#!/bin/sh\nsleep 600 &\necho $! > "+childPid+"\necho '1|99|tcp|127.0.0.1:9|grpc'\nwait\n"), 0o755)
	adapter, err := os.ReadFile(testhost.Plugin(t, "plugins/adapter-anthropic-messages"))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "assay-adapter-anthropic-messages"), adapter, 0o755)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "plugin_dir = %q\n", dir)
	for _, p := range []struct{ name, kind, file string }{{"broken", "adapter", "assay-broken"}, {"stream-divergence", "family", "assay-stream-divergence"},
		{"future", "family", "assay-future"},
		// a family's binary configured as an adapter: named as the wrong kind
		{"wrong-kind", "adapter", "assay-stream-divergence"},
		// an adapter whose criteria (context-composition) are not loaded here
		{"anthropic-messages", "adapter", "assay-adapter-anthropic-messages"}} {
		sum, err := pluginhost.PinOf(filepath.Join(dir, p.file))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&cfg, "plugin %q {\n  kind = %q\n  path = %q\n  sha256 = %q\n}\n", p.name, p.kind, p.file, sum)
	}
	cfgPath := filepath.Join(dir, "assay.hcl")
	_ = os.WriteFile(cfgPath, []byte(cfg.String()), 0o600)

	h := launch(t, bin, nil, "--config", cfgPath, "--data-dir", t.TempDir(), "--payments", "off")
	if !h.up() {
		t.Fatalf("the host did not come up with one plugin broken:\n%s", h.log())
	}
	// the refused plugin's child is gone with it
	raw, err = os.ReadFile(childPid)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || perr != nil {
		t.Fatalf("the stub wrote no child pid: %v %v", err, perr)
	}
	for i := 0; syscall.Kill(pid, 0) == nil; i++ {
		if i == 200 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the refused plugin's child outlived it: its process group was not killed")
		}
		time.Sleep(25 * time.Millisecond)
	}
	if l := h.log(); !strings.Contains(l, "plugin could not start and is left out of this host") || !strings.Contains(l, "plugin=broken") {
		t.Errorf("the log does not name the plugin left out:\n%s", l)
	}
	if l := h.log(); !strings.Contains(l, "plugin=future") || !strings.Contains(l, "incompatible API version with plugin. Plugin version: 99") {
		t.Errorf("the log does not name the plugin of another protocol version:\n%s", l)
	}
	if l := h.log(); !strings.Contains(l, "plugin=wrong-kind") || !strings.Contains(l, "plugin is not of the kind its config names: it does not serve the adapter service") {
		t.Errorf("the log does not name the plugin of the wrong kind:\n%s", l)
	}
	if l := h.log(); !strings.Contains(l, "adapter names a family whose criteria are not loaded; no request will reach it: format=anthropic-messages") {
		t.Errorf("the log does not name the idle adapter:\n%s", l)
	}
	var cat struct {
		Adapters []struct {
			Format   string `json:"format"`
			Accepted bool   `json:"accepted_by_loaded_criteria"`
		} `json:"adapters"`
	}
	if getJSON(t, h.url()+"/", &cat); len(cat.Adapters) != 1 || cat.Adapters[0].Format != "anthropic-messages" || cat.Adapters[0].Accepted {
		t.Errorf("the catalog's adapters: %+v", cat.Adapters)
	}
	// /readyz says the same of it
	if getJSON(t, h.url()+"/readyz", &cat); len(cat.Adapters) != 1 || cat.Adapters[0].Format != "anthropic-messages" || cat.Adapters[0].Accepted {
		t.Errorf("/readyz's adapters: %+v", cat.Adapters)
	}
	if status, code, raw := postCode(t, h.url()+"/stream-divergence/compare",
		[]byte(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`), nil); status != 200 {
		t.Errorf("the good family beside it: %d %s %s", status, code, raw)
	}

	strict := launch(t, bin, nil, "--config", cfgPath, "--data-dir", t.TempDir(), "--payments", "off", "--strict-plugins")
	select {
	case <-strict.done:
	case <-time.After(time.Minute):
		t.Fatal("--strict-plugins: the host started with a plugin that cannot")
	}
	if strict.cmd.ProcessState.ExitCode() == 0 || strings.Contains(strict.log(), "left out") {
		t.Errorf("--strict-plugins: exit %d\n%s", strict.cmd.ProcessState.ExitCode(), strict.log())
	}
}
