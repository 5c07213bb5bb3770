package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/version"
)

// `assay version` names the build, the Go it was built with and the
// platform, on one line or as one JSON object; it needs no config or store.
func TestVersionCmd(t *testing.T) {
	var out bytes.Buffer
	if err := versionCmd(nil, &out); err != nil {
		t.Fatal(err)
	}
	want := "assay " + version.String() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if out.String() != want {
		t.Errorf("assay version printed %q, want %q", out.String(), want)
	}

	out.Reset()
	if err := versionCmd([]string{"--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var got versionInfo
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("assay version --json: %v", err)
	}
	if w := (versionInfo{Version: version.String(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}); got != w {
		t.Errorf("assay version --json = %+v, want %+v", got, w)
	}

	if err := versionCmd([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("assay version --help: %v, want flag.ErrHelp (main exits 0 on it)", err)
	}
	if err := versionCmd([]string{"extra"}, &out); err == nil {
		t.Error("assay version took an argument")
	}
}

// The host binary as `make build` links it names the version it was
// stamped with, not the build info's "unknown" (GOFLAGS -buildvcs=false,
// no .git in the image's build context). The Makefile's own host build
// line is run, with the output into a temporary dir, so the test follows
// the Makefile rather than a copy of its flags.
func TestVersionStampedByMakeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the host binary")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine: the Makefile's stamp is not tested")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	const stamp = "v9.9.9-test"
	bin := t.TempDir()
	plan := exec.Command("make", "--no-print-directory", "-n", "build", "BIN="+bin, "ASSAY_VERSION="+stamp)
	plan.Dir = root
	planned, err := plan.Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	var line string
	for _, l := range strings.Split(string(planned), "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), " ./host/cmd/assay") {
			line = l
		}
	}
	if !strings.Contains(line, "version.stamped="+stamp) {
		t.Fatalf("make build's host line does not stamp %s: %q", stamp, line)
	}
	build := exec.Command("sh", "-c", line)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}

	assay := filepath.Join(bin, "assay")
	out, err := exec.Command(assay, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("assay version: %v\n%s", err, out)
	}
	if want := "assay " + stamp + " (" + runtime.Version(); !strings.HasPrefix(string(out), want) {
		t.Errorf("assay version printed %q, want it to begin %q", out, want)
	}
	out, err = exec.Command(assay, "version", "--json").Output()
	if err != nil {
		t.Fatalf("assay version --json: %v", err)
	}
	var got versionInfo
	if err := json.Unmarshal(out, &got); err != nil || got.Version != stamp {
		t.Errorf("assay version --json printed %s (%v), want version %s", out, err, stamp)
	}
}
