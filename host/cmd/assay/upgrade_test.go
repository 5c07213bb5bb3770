package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// previousVersion is the last commit before the store's newest migration
// (13: the sign-in nonces a fleet spent). The rolling upgrade test runs a host
// built from it beside this version's on one store. When you add a
// migration, move this to the last commit before it (docs/operators.md,
// "Upgrades").
const previousVersion = "059e35d6bca668bb0298eed50974cdcaf5352608"

// buildPrevious builds previousVersion's assay binary from the
// repository's history (git archive: the work tree is not touched). A
// clone without that history (shallow, or a source tarball) skips the
// test, saying so, unless ASSAY_REQUIRE_HISTORY is set (CI).
func buildPrevious(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	skip := func(why string) {
		if os.Getenv("ASSAY_REQUIRE_HISTORY") != "" {
			t.Fatal(why + " (ASSAY_REQUIRE_HISTORY is set)")
		}
		t.Skip(why + ": the rolling upgrade is not tested")
	}
	if _, err := exec.LookPath("git"); err != nil {
		skip("no git on this machine")
	}
	if err := exec.Command("git", "-C", root, "cat-file", "-e", previousVersion+"^{commit}").Run(); err != nil {
		skip("this clone's history does not hold the previous version " + previousVersion[:12])
	}
	dir := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", root, previousVersion, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", previousVersion[:12], err, out)
	}
	bin := filepath.Join(dir, "assay-previous")
	build := exec.Command("go", "build", "-o", bin, "./host/cmd/assay")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the previous version: %v\n%s", err, out)
	}
	return bin
}

// A rolling upgrade on one PostgreSQL store: a host of the previous
// version serves; a host of this version starts beside it and migrates
// the store (11: hosts.version) while it runs; both then take paid calls,
// and a host of the previous version started after the migration serves
// too (the promise: every migration is additive, one version back runs on
// it). `assay service status` tells the builds apart, each host's as its
// binary names it. The previous host upgraded in place (its data
// dir, this version) comes back, and the ledger holds one line per paid
// call throughout.
func TestARollingUpgradeOnOneStore(t *testing.T) {
	previous := buildPrevious(t)
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	pg := storetest.PostgresURL(t)
	cfg := sdConfig(t)
	secret := filepath.Join(t.TempDir(), "keys.secret")
	if err := signing.NewSecret(secret); err != nil {
		t.Fatal(err)
	}
	payer, err := wallet.New(filepath.Join(t.TempDir(), "payer.json"))
	if err != nil {
		t.Fatal(err)
	}
	paid := 0
	pay := func(h *proc, who string) {
		t.Helper()
		res, err := (&x402.Payer{Wallet: payer}).Call(context.Background(), h.url()+"/stream-divergence/compare", payBody)
		if err != nil || res.Status != 200 {
			t.Fatalf("a paid call to %s: %v %+v\n%s", who, err, res, h.log())
		}
		paid++
	}
	start := func(binary, dataDir string) *proc {
		h := launch(t, binary, nil, "--config", cfg, "--data-dir", dataDir, "--store", pg, "--keys-secret", secret)
		if !h.up() {
			t.Fatalf("a host did not start:\n%s", h.log())
		}
		if raw, code := get(t, h.url()+"/readyz"); code != 200 {
			t.Fatalf("a host is not ready: %s\n%s", raw, h.log())
		}
		return h
	}
	dirA := t.TempDir()
	old := start(previous, dirA)
	pay(old, "the previous version")

	newer := start(bin, t.TempDir())
	if !strings.Contains(newer.log(), "listening") {
		t.Fatalf("the new version:\n%s", newer.log())
	}
	pay(old, "the previous version on the migrated store")
	pay(newer, "the new version")
	late := start(previous, t.TempDir())
	pay(late, "the previous version started after the migration")
	if !strings.Contains(late.log(), "listening") {
		t.Fatalf("the previous version after the migration:\n%s", late.log())
	}

	// every host rewrote its row since the migration; each names its build
	// (this one's as `assay version` says, the previous one's its own)
	time.Sleep(2 * readiness.HeartbeatEvery)
	this := buildOf(t, bin)
	builds := buildsByHost(t, pg)
	if builds[newer.addr] != this || builds[old.addr] == "" || builds[old.addr] == this || builds[late.addr] != builds[old.addr] {
		t.Errorf("service status during the upgrade: builds %v (this version %q at %s; the previous at %s and %s)", builds, this, newer.addr, old.addr, late.addr)
	}
	for _, p := range []*proc{old, late} {
		if l := p.log(); strings.Contains(l, "[ERROR]") {
			t.Errorf("a previous-version host logged an error on the migrated store:\n%s", l)
		}
	}

	// the previous host upgraded in place
	old.stop()
	upgraded := start(bin, dirA)
	pay(upgraded, "the upgraded host")
	time.Sleep(2 * readiness.HeartbeatEvery)
	previousBuild := builds[late.addr]
	builds = buildsByHost(t, pg)
	if builds[upgraded.addr] != this || builds[newer.addr] != this || builds[late.addr] != previousBuild || len(builds) != 3 {
		t.Errorf("service status after one host's upgrade: builds %v", builds)
	}
	st, err := store.OpenExisting(context.Background(), pg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := len(allLines(t, st)); n != paid {
		t.Errorf("the ledger holds %d lines for %d paid calls", n, paid)
	}
}

// buildOf is what a binary's `assay version --json` names its build.
func buildOf(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version", "--json").Output()
	var v struct {
		Version string `json:"version"`
	}
	if err != nil || json.Unmarshal(out, &v) != nil || v.Version == "" {
		t.Fatalf("%s version --json: %v\n%s", bin, err, out)
	}
	return v.Version
}

// buildsByHost is each running host's build in service status, by the
// address it listens on.
func buildsByHost(t *testing.T, pg string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, h := range fleetView(t, pg).Hosts {
		if h.Running {
			out[h.Label[strings.LastIndex(h.Label, " ")+1:]] = h.Version
		}
	}
	return out
}

// fleetView is `assay service status --json` on the store.
func fleetView(t *testing.T, pg string) fleetStatus {
	t.Helper()
	var out, errs strings.Builder
	if err := run([]string{"service", "status", "--json", "--config", sdConfig(t), "--store", pg}, &out, &errs); err != nil {
		t.Fatalf("service status: %v\n%s", err, errs.String())
	}
	var s fleetStatus
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
		t.Fatalf("service status --json: %v\n%s", err, out.String())
	}
	return s
}
