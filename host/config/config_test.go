package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/admission"
)

func TestLoadOverDefaults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "assay.hcl")
	_ = os.WriteFile(path, []byte(`
listen = "127.0.0.1:9000"
plugin_dir = "plugins"
plugin "stream-divergence" {
  path   = "assay-stream-divergence"
  sha256 = "00"
}
plugin "letta-af" {
  kind   = "adapter"
  path   = "assay-adapter-letta-af"
  sha256 = "11"
}
`), 0o600)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9000" || c.DataDir != "./var" || c.Payments != "local" || c.CallTimeout != "30s" {
		t.Errorf("merged: %+v", c)
	}
	if c.PluginDir != filepath.Join(dir, "plugins") {
		t.Errorf("plugin dir %s", c.PluginDir)
	}
	if len(c.Plugins) != 2 || c.Plugins[0].Kind != "family" || c.Plugins[1].Kind != "adapter" {
		t.Errorf("plugins %+v", c.Plugins)
	}
	if d, err := c.Timeout(); err != nil || d.Seconds() != 30 {
		t.Errorf("timeout %v %v", d, err)
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	_ = os.WriteFile(bad, []byte(`plugin "x" {
  kind = "other"
  path = "p"
  sha256 = "00"
}`), 0o600)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "kind must be") {
		t.Errorf("bad kind: %v", err)
	}
	_ = os.WriteFile(bad, []byte(`listen = `), 0o600)
	if _, err := Load(bad); err == nil {
		t.Error("a syntax error was accepted")
	}
	if _, err := (Config{CallTimeout: "-1s"}).Timeout(); err == nil {
		t.Error("a negative timeout was accepted")
	}
}

// The admission block: defaults per core, a working bound that carries
// its queue, each value checked.
func TestAdmissionLimits(t *testing.T) {
	load := func(body string) (Config, error) {
		path := filepath.Join(t.TempDir(), "a.hcl")
		_ = os.WriteFile(path, []byte(body), 0o600)
		return Load(path)
	}
	const d = DefaultWaitingBytes
	for _, c := range []struct {
		body string
		want admission.Limits
	}{
		{``, admission.Limits{Working: 2, Waiting: 8, WaitingBytes: d, Wait: 5 * time.Second, SmallWorking: 16}},
		{"admission {\n working = 3\n}", admission.Limits{Working: 3, Waiting: 12, WaitingBytes: d, Wait: 5 * time.Second, SmallWorking: 16}},
		{"admission {\n working = 3\n waiting = 0\n wait = \"250ms\"\n}", admission.Limits{Working: 3, Wait: 250 * time.Millisecond, SmallWorking: 16}},
		{"admission {\n waiting = 7\n}", admission.Limits{Working: 2, Waiting: 7, Wait: 5 * time.Second, SmallWorking: 16}},
		{"admission {\n small_working = 0\n}", admission.Limits{Working: 2, Waiting: 8, WaitingBytes: d, Wait: 5 * time.Second}},
		{"admission {\n small_working = 5\n}", admission.Limits{Working: 2, Waiting: 8, WaitingBytes: d, Wait: 5 * time.Second, SmallWorking: 5}},
	} {
		cfg, err := load(c.body)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := cfg.AdmissionLimits(2); err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.body, got, err, c.want)
		}
	}
	for _, bad := range []string{"admission {\n working = 0\n}", "admission {\n waiting = -1\n}", "admission {\n small_working = -1\n}", "admission {\n wait = \"soon\"\n}"} {
		cfg, err := load(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.AdmissionLimits(2); err == nil || !strings.HasPrefix(err.Error(), "admission.") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	if l, _ := Defaults().AdmissionLimits(0); l.Working != 1 || l.Waiting != 4 {
		t.Errorf("no core count: %+v", l)
	}
}

// log_format and log_level: text at info unless set, either in any case,
// anything else refused with the values allowed.
func TestLoggerOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.hcl")
	_ = os.WriteFile(path, []byte("log_format = \"json\"\nlog_level = \"WARN\"\n"), 0o600)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := c.LoggerOptions(); err != nil || !o.JSONFormat || o.Level != hclog.Warn {
		t.Errorf("json at warn: %+v %v", o, err)
	}
	if o, err := Defaults().LoggerOptions(); err != nil || o.JSONFormat || o.Level != hclog.Info {
		t.Errorf("defaults: %+v %v", o, err)
	}
	for _, bad := range []Config{{LogFormat: "logfmt"}, {LogLevel: "verbose"}, {LogLevel: "off"}} {
		if _, err := bad.LoggerOptions(); err == nil || !strings.Contains(err.Error(), "must be") {
			t.Errorf("%+v accepted: %v", bad, err)
		}
	}
}

// A config with several mistakes names every one of them, not the first
// and a count of the rest.
func TestLoadNamesEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.hcl")
	_ = os.WriteFile(path, []byte("listn = \"x\"\ncall_timout = \"1s\"\n"), 0o600)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "2 problems") || !strings.Contains(err.Error(), "listn") || !strings.Contains(err.Error(), "call_timout") {
		t.Fatalf("two misspelled keys: %v", err)
	}
}

// Every mistake that can be told without the network is named at once,
// each with its setting; a config without mistakes has none.
func TestProblemsNamesEveryMistake(t *testing.T) {
	c := Defaults()
	// the default payments settle on a chain: without a node, that is
	// the one problem, with its fix
	if p := c.Problems(2); len(p) != 1 || !strings.Contains(p[0], "needs its node") || !strings.Contains(p[0], "--payments house") {
		t.Fatalf("the defaults: %q", p)
	}
	c.Payments = "house"
	if p := c.Problems(2); len(p) != 0 {
		t.Fatalf("the defaults in house mode: %q", p)
	}
	c.LogFormat, c.LogLevel, c.CallTimeout, c.ShutdownGrace = "jsn", "verbose", "soon", "-1s"
	c.Payments, c.PayTo, c.PublicURL, c.SolanaRPC = "cash", "notabase58", "example.com", "127.0.0.1:1"
	c.TrustedProxies = []string{"not-a-cidr"}
	p := c.Problems(2)
	for _, want := range []string{"log_format", "log_level", "call_timeout", "shutdown_grace", "payments (--payments) \"cash\"",
		"pay_to (--pay-to)", "public_url", "solana_rpc", "trusted"} {
		found := false
		for _, line := range p {
			found = found || strings.Contains(line, want)
		}
		if !found {
			t.Errorf("%s not named among %q", want, p)
		}
	}
	if len(p) != 9 {
		t.Errorf("%d problems, want 9: %q", len(p), p)
	}
}
