package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
