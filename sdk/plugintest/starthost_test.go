package plugintest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/assay-audit/assay/sdk/plugintest"
)

// contextAudit puts the context-audit family's binary and the named
// adapters' binaries in a folder of their own: make build's, copied, or
// built from the checkout around the sdk.
func contextAudit(t *testing.T, adapters ...string) (dir string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	for _, name := range append([]string{"context-audit"}, adapters...) {
		out := filepath.Join(dir, "assay-"+name)
		if bin := os.Getenv("ASSAY_BIN"); bin != "" && fileExists(filepath.Join(bin, "assay-"+name)) {
			raw, err := os.ReadFile(filepath.Join(bin, "assay-"+name))
			if err == nil {
				err = os.WriteFile(out, raw, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		cmd := exec.Command("go", "build", "-o", out, "./plugins/"+name)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, msg)
		}
	}
	return dir
}

// A family given with one of its adapters is served with the others its
// corpus needs, found beside it.
func TestStartHostLoadsTheAdaptersTheCorpusNeeds(t *testing.T) {
	root, _ := filepath.Abs("../..")
	assay := assayBinary(t, root)
	dir := contextAudit(t, "adapter-letta-af", "adapter-anthropic-messages", "adapter-generic-message-list")
	h := plugintest.StartHost(t, plugintest.HostOptions{Assay: assay,
		Plugins: []string{filepath.Join(dir, "assay-context-audit"), filepath.Join(dir, "assay-adapter-letta-af")}})
	status, raw := h.Get("/")
	var cat struct {
		Adapters []struct{ Format string } `json:"adapters"`
	}
	if err := json.Unmarshal(raw, &cat); status != 200 || err != nil || len(cat.Adapters) != 3 {
		t.Fatalf("catalog: %d %s", status, raw)
	}
}

// fatalTB records StartHost's failure instead of ending the test.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// A family whose corpus needs adapters found nowhere fails as soon as
// the host stops it (not after a minute's wait for a readiness that
// cannot come), with the launch message and the formats missing.
func TestStartHostNamesTheMissingAdapters(t *testing.T) {
	root, _ := filepath.Abs("../..")
	assay := assayBinary(t, root)
	dir := contextAudit(t, "adapter-letta-af")
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		plugintest.StartHost(f, plugintest.HostOptions{Assay: assay,
			Plugins: []string{filepath.Join(dir, "assay-context-audit"), filepath.Join(dir, "assay-adapter-letta-af")}})
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, want := range []string{"the host stopped service context-audit: corpus failed at launch",
		"format anthropic-messages (accepted by context-audit)", "format generic-message-list (accepted by context-audit)"} {
		if !strings.Contains(f.msg, want) {
			t.Errorf("StartHost's failure lacks %q:\n%.2000s", want, f.msg)
		}
	}
	if strings.Contains(f.msg, "not ready within 60 s") {
		t.Error("StartHost waited out its minute")
	}
}
