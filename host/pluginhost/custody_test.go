package pluginhost

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

type sink struct{ strings.Builder }

func (s *sink) Write(p []byte) (int, error) { return s.Builder.Write(p) }

func TestStderrIsReducedBeforeTheHostLog(t *testing.T) {
	var out sink
	host := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace})
	l := clientLogger{host}.Named("plugin-x") // what go-plugin does for stderr
	secret := "SECRET-VALUE-123"
	l.Debug("printed " + secret)                  // a bare line
	l.Info("structured", "field", secret, "n", 3) // an hclog JSON entry
	l.Error("panic: " + secret)
	l.Error("")
	l.Error("goroutine 7 [running]:")
	l.Error("main.(*family).Check.func1({0xc000012345, 0x10})")
	l.Error("\t/src/main.go:42 +0x1d")
	l.Error("github.com/x/y.Run(...)")
	got := out.String()
	if strings.Contains(got, secret) {
		t.Fatalf("secret reached the log:\n%s", got)
	}
	for _, want := range []string{"plugin panicked", "main.(*family).Check.func1", "github.com/x/y.Run", "plugin wrote unstructured stderr", "n=3", "16 bytes"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "0xc000012345") || strings.Contains(got, "main.go:42") {
		t.Errorf("frame arguments or paths kept:\n%s", got)
	}
	// go-plugin's own lifecycle messages pass unchanged
	clientLogger{host}.Info("starting plugin", "path", "/bin/p")
	if !strings.Contains(out.String(), "path=/bin/p") {
		t.Error("lifecycle message altered")
	}
}

// A recovered panic's site passes as a bare trace's frames do: a Go
// function's name under panic_function, and nothing else shaped otherwise
// (a value there, or a function name under another key, is reduced).
func TestAPanicsFunctionNamePasses(t *testing.T) {
	var out sink
	l := clientLogger{hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace})}.Named("plugin-x")
	l.Error("adapter panicked", "panic_function", "github.com/x/y.(*adapter).Adapt.func1", "panic_line", 42)
	l.Error("adapter panicked", "panic_function", "SECRET value with spaces")
	l.Error("adapter panicked", "other", "main.Leak")
	got := out.String()
	if !strings.Contains(got, `panic_function="github.com/x/y.(*adapter).Adapt.func1"`) || !strings.Contains(got, "panic_line=42") {
		t.Errorf("the panic's site did not pass:\n%s", got)
	}
	if strings.Contains(got, "SECRET") || strings.Contains(got, "main.Leak") {
		t.Errorf("a value passed:\n%s", got)
	}
}

// go-plugin's lines name the binary under "plugin"; in a JSON log the
// plugin's name, which the host put under that key, must survive them.
func TestGoPluginsBinaryKeyLeavesThePluginsName(t *testing.T) {
	var out sink
	host := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace, JSONFormat: true}).With("plugin", "stream-divergence")
	l := clientLogger{host}
	l.Info("plugin process exited", "plugin", "/opt/assay/assay-stream-divergence", "id", 42)
	l.Debug("waiting for RPC address", "plugin", "/opt/assay/assay-stream-divergence")
	for i, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if rec["plugin"] != "stream-divergence" || rec["binary"] != "/opt/assay/assay-stream-divergence" {
			t.Errorf("line %d: plugin %v, binary %v", i, rec["plugin"], rec["binary"])
		}
	}
}
