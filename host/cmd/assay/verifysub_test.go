package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/wallet"
)

// verifyRig is a host serving context-audit with its adapters
// from one plugin folder (every adapter: its launch corpus has records
// of each format), in house mode, and a report it issued.
type verifyRig struct {
	dir, plugins string
	host         *proc
	body, report string
}

func newVerifyRig(t *testing.T) *verifyRig {
	t.Helper()
	r := &verifyRig{dir: t.TempDir()}
	r.plugins = filepath.Join(r.dir, "bin")
	_ = os.Mkdir(r.plugins, 0o755)
	for _, pkg := range []string{"plugins/context-audit", "plugins/adapter-anthropic-messages", "plugins/adapter-generic-message-list", "plugins/adapter-letta-af"} {
		copyPlugin(t, pkg, r.plugins, "assay-"+filepath.Base(pkg))
	}
	var cfg, errs bytes.Buffer
	if err := pin([]string{"--dir", r.plugins}, &cfg, &errs); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(r.dir, "assay.hcl")
	_ = os.WriteFile(cfgFile, append([]byte("plugin_dir = "+jsonString(r.plugins)+"\n"), cfg.Bytes()...), 0o600)
	r.host = launch(t, testhost.Binary(t, "host/cmd/assay", "assay"), nil, "--config", cfgFile, "--data-dir", filepath.Join(r.dir, "data"))
	if !r.host.up() {
		t.Fatalf("host:\n%s", r.host.log())
	}
	r.body = r.file(t, "body.json", `{"envelope_version":"context-composition-envelope/1","declared_format_id":"anthropic-messages",`+
		`"record":{"messages":[{"role":"user","content":"Please read the attached notes and list three risks."},`+
		`{"role":"assistant","content":[{"type":"text","text":"Here are three risks, each with a short reason."}]}]}}`)
	payer := filepath.Join(r.dir, "payer.json")
	if _, err := wallet.New(payer); err != nil {
		t.Fatal(err)
	}
	r.report = filepath.Join(r.dir, "report.json")
	var out bytes.Buffer
	if err := run([]string{"call", "--wallet", payer, "--out", r.report, r.host.url() + "/context-audit/audit", r.body}, &out, &out); err != nil {
		t.Fatalf("the paid call: %v\n%s\n%s", err, out.String(), r.host.log())
	}
	return r
}

func (r *verifyRig) file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// verify runs `assay verify --submission` and returns what it printed.
func (r *verifyRig) verify(body, report string, extra ...string) (string, error) {
	var out bytes.Buffer
	args := append([]string{"verify", "--submission", body, "--plugins", r.plugins}, extra...)
	err := run(append(args, report), &out, &out)
	return out.String(), err
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// A report checked against its submission with the binaries it names:
// every fact holds (and its signature, with the host's keys named); the
// report names those binaries by their pins. A report with one fact
// altered, and the same report beside another submission, are caught,
// naming the first fact that differs.
func TestVerifySubmissionRunsTheReportsPlugins(t *testing.T) {
	r := newVerifyRig(t)
	raw, err := os.ReadFile(r.report)
	if err != nil {
		t.Fatal(err)
	}
	var report map[string]any
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	familyPin, _ := pluginhost.PinOf(filepath.Join(r.plugins, "assay-context-audit"))
	adapterPin, _ := pluginhost.PinOf(filepath.Join(r.plugins, "assay-adapter-anthropic-messages"))
	build, _ := report["build"].(map[string]any)
	adapters, _ := build["adapters_sha256"].(map[string]any)
	if build["family_sha256"] != familyPin || adapters["anthropic-messages"] != adapterPin {
		t.Fatalf("the report's build member %v does not name the binaries served (family %s, adapter %s)", build, familyPin, adapterPin)
	}

	out, err := r.verify(r.body, r.report, "--keys", r.host.url()+"/keys")
	if err != nil || !strings.Contains(out, "signature valid") || !strings.Contains(out, "every fact holds") ||
		!strings.Contains(out, "run on the very binaries the report names") {
		t.Fatalf("the report against its own submission: %v\n%s", err, out)
	}
	r.host.stop() // offline from here: nothing but the files and the binaries
	out, err = r.verify(r.body, r.report)
	if err != nil || !strings.Contains(out, "signature not checked") || !strings.Contains(out, "every fact holds") {
		t.Fatalf("offline, without keys: %v\n%s", err, out)
	}

	// one fact altered: the record's byte count
	bytesNow, ok := report["record_bytes"].(float64)
	if !ok {
		t.Fatalf("the report has no record_bytes number: %v", report["record_bytes"])
	}
	report["record_bytes"] = bytesNow + 1
	tampered, _ := json.Marshal(report)
	tamperedFile := r.file(t, "tampered.json", string(tampered))
	out, err = r.verify(r.body, tamperedFile)
	if !errors.Is(err, ErrReportDiffers) || !strings.HasSuffix(err.Error(), "is $.record_bytes (the rerun answered 200)") {
		t.Errorf("a tampered report: %v\n%s", err, out)
	}

	// the report beside another submission of the same format
	other := r.file(t, "other.json", `{"envelope_version":"context-composition-envelope/1","declared_format_id":"anthropic-messages",`+
		`"record":{"messages":[{"role":"user","content":"Another question entirely, and a longer one than before."}]}}`)
	out, err = r.verify(other, r.report)
	if !errors.Is(err, ErrReportDiffers) || !strings.Contains(err.Error(), "first fact that differs is $.") {
		t.Errorf("a swapped submission: %v\n%s", err, out)
	}
	// custody: nothing of either submission is repeated in what verify says
	if strings.Contains(err.Error(), "Another question") || strings.Contains(out, "Another question") {
		t.Errorf("verify repeated the submission: %v %s", err, out)
	}
}

// Without the report's family binary in the folder, verify names the
// build it needs and runs nothing.
func TestVerifySubmissionNeedsTheBuild(t *testing.T) {
	r := newVerifyRig(t)
	empty := t.TempDir()
	var out bytes.Buffer
	err := run([]string{"verify", "--submission", r.body, "--plugins", empty, r.report}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "no plugin in "+empty+" serves context-audit") || !strings.Contains(err.Error(), "--plugins") {
		t.Errorf("an empty plugin folder: %v\n%s", err, out.String())
	}
}
