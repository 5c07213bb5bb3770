package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
)

// jsonLines parses every line of a log as one JSON object.
func jsonLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(log, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("a log line is not a JSON object: %v\n%s", err, line)
			continue
		}
		out = append(out, m)
	}
	return out
}

// The host's logger and every logger made from it (the plugins' are named
// and scoped children, the HTTP server's error log a standard logger over
// it) write JSON objects with --log-format json, at the level asked.
func TestHostLoggerFollowsTheFormat(t *testing.T) {
	var buf bytes.Buffer
	log, err := hostLogger(config.Config{LogFormat: "JSON", LogLevel: "debug"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("root", "n", 1)
	log.Trace("below the level")
	log.Named("plugin").With("plugin", "x").Info("child", "grace", 90*time.Second)
	log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Printf("[ERR] http: a server error")
	lines := jsonLines(t, buf.String())
	// a duration is its seconds: 90, never Go's 90000000000 nanoseconds
	if len(lines) != 3 || lines[0]["@message"] != "root" || lines[0]["@level"] != "debug" ||
		lines[1]["@module"] != "assay.plugin" || lines[1]["plugin"] != "x" || lines[1]["grace"] != 90.0 || lines[2]["@level"] != "error" {
		t.Errorf("lines: %v", lines)
	}
	buf.Reset()
	log, err = hostLogger(config.Defaults(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("below the default")
	log.Info("text")
	if got := buf.String(); strings.HasPrefix(got, "{") || !strings.Contains(got, "[INFO]  assay: text") || strings.Contains(got, "below") {
		t.Errorf("the default format and level: %q", got)
	}
}

// An unknown format or level is refused before the host starts, naming the
// values allowed; a flag overrides the config.
func TestServeRefusesAnUnknownLogValue(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "assay.hcl")
	for _, c := range []struct {
		config string
		args   []string
		says   string
	}{
		{"", []string{"--log-format", "yaml"}, "log_format (--log-format): must be text or json"},
		{`log_format = "jsn"` + "\n", nil, "log_format (--log-format): must be text or json"},
		{`log_level = "verbose"` + "\n", nil, "log_level (--log-level): must be trace, debug, info, warn or error"},
		{"", []string{"--log-level", "off"}, "log_level (--log-level): must be trace, debug, info, warn or error"},
		// every mistake at once: the config's and the flags'
		{`log_format = "jsn"` + "\n", []string{"--payments", "cash", "--pay-to", "notabase58"}, "3 problems in the config and flags:\n  log_format"},
		// the flags win over a bad config: serve gets as far as the payment mode
		{`log_format = "jsn"` + "\n" + `log_level = "verbose"` + "\n", []string{"--log-format", "json", "--log-level", "warn", "--payments", "cash"},
			"expected off, house, local or a facilitator URL"},
	} {
		if err := os.WriteFile(cfg, []byte(c.config), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := run(append([]string{"serve", "--config", cfg, "--data-dir", t.TempDir()}, c.args...), &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("config %q, flags %v: %v, want %q", c.config, c.args, err, c.says)
		}
		jsonLines(t, out.String()) // with --log-format json, what it logged first
	}
}

// `assay serve --log-format json` writes nothing but JSON objects on its
// standard error, the plugins' lines and the request lines included: a
// paid call's at info, a probe's at debug.
func TestServeLogsJSON(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	plugin := testhost.Plugin(t, "plugins/stream-divergence")
	sum, err := pluginhost.PinOf(plugin)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "assay.hcl")
	hcl := fmt.Sprintf("log_format = \"text\"\nplugin_dir = %q\nplugin \"stream-divergence\" {\n  path = %q\n  sha256 = %q\n}\n",
		filepath.Dir(plugin), filepath.Base(plugin), sum)
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	h := launch(t, bin, nil, "--config", cfg, "--data-dir", t.TempDir(), "--payments", "off", "--log-format", "json", "--log-level", "debug")
	if !h.up() {
		t.Fatalf("the host did not come up:\n%s", h.log())
	}
	if status, code, raw := postCode(t, h.url()+"/stream-divergence/compare?q=1",
		[]byte(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`), nil); status != 200 {
		t.Fatalf("compare: %d %s %s", status, code, raw)
	}
	if _, status := get(t, h.url()+"/healthz"); status != 200 {
		t.Fatalf("healthz: %d", status)
	}
	h.stop()
	var compare, probe, plugins int
	for _, l := range jsonLines(t, h.log()) {
		if mod, _ := l["@module"].(string); strings.HasPrefix(mod, "assay.plugin") {
			plugins++
		}
		if l["@message"] != "request" {
			continue
		}
		switch l["route"] {
		case "POST /stream-divergence/compare":
			compare++
			if l["@level"] != "info" || l["status"] != float64(200) || l["payment"] != "off" || l["method"] != "POST" || l["service"] != "stream-divergence" {
				t.Errorf("the compare's line: %v", l)
			}
		case "GET /healthz":
			if l["@level"] == "debug" {
				probe++
			}
		}
	}
	if compare != 1 || probe == 0 || plugins == 0 {
		t.Errorf("compare lines %d, probe lines at debug %d, plugin lines %d:\n%s", compare, probe, plugins, h.log())
	}
}

// With --log-format json the error serve stops on is a JSON line of the
// log too, not plain text after it (main prints nothing more for it).
func TestServeStopsWithAJSONLine(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"serve", "--data-dir", t.TempDir(), "--log-format", "json", "--payments", "cash"}, &out, &out)
	var logged loggedError
	if !errors.As(err, &logged) || !strings.Contains(err.Error(), "expected off, house, local or a facilitator URL") {
		t.Fatalf("serve: %v, want the payment mode's error, logged", err)
	}
	lines := jsonLines(t, out.String())
	if len(lines) == 0 {
		t.Fatal("nothing logged")
	}
	last := lines[len(lines)-1]
	if last["@level"] != "error" || last["@message"] != "assay serve stopped" || !strings.Contains(fmt.Sprint(last["error"]), "expected off, house, local") {
		t.Errorf("last line %v", last)
	}
	// in text the error stays main's own line
	out.Reset()
	err = run([]string{"serve", "--data-dir", t.TempDir(), "--payments", "cash"}, &out, &out)
	if err == nil || errors.As(err, &logged) || strings.Contains(out.String(), "assay serve stopped") {
		t.Errorf("text: %v, logged %q", err, out.String())
	}
}
