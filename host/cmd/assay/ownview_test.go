package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/launchproof"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/selftest"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// pgGate forwards TCP to the machine's PostgreSQL until it is shut, as a
// network partition between a host and its store would.
type pgGate struct {
	t     *testing.T
	addr  string
	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func (g *pgGate) open() {
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		g.t.Fatal(err)
	}
	g.mu.Lock()
	g.ln, g.addr = ln, ln.Addr().String()
	g.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", "127.0.0.1:5432")
			if err != nil {
				c.Close()
				continue
			}
			g.mu.Lock()
			g.conns = append(g.conns, c, up)
			g.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (g *pgGate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ln.Close()
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

// readyzOf is a host's /readyz.
func readyzOf(t *testing.T, url string) (int, readiness.Report) {
	t.Helper()
	var r readiness.Report
	code := getJSON(t, url+"/readyz", &r)
	return code, r
}

func eventually(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
	}
}

// With its store unreachable a host stays alive (/healthz 200) and says
// it is not ready (/readyz 503, the store named as the reason, without
// the store's error text); the log says so once, not once a second or a
// request; when the store answers again the host is ready again and says
// so.
func TestReadyzFollowsTheStore(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	gate := &pgGate{t: t, addr: "127.0.0.1:0"}
	gate.open()
	t.Cleanup(gate.shut)
	pg := strings.Replace(storetest.PostgresURL(t), "127.0.0.1:5432", gate.addr, 1)
	h := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", t.TempDir(), "--store", pg, "--payments", "off")
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	eventually(t, "ready", 10*time.Second, func() bool { c, _ := readyzOf(t, h.url()); return c == 200 })

	gate.shut()
	eventually(t, "not ready with the store gone", 15*time.Second, func() bool {
		c, r := readyzOf(t, h.url())
		return c == 503 && !r.Ready && !r.Store.OK && r.Store.Reason == "the store does not answer" && r.Keys.OK
	})
	if r, err := http.Get(h.url() + "/healthz"); err != nil || r.StatusCode != 200 {
		t.Fatalf("healthz with the store gone: %v", err)
	}
	for i := 0; i < 20; i++ {
		if code, errCode := precheckCode(t, h.url(), i); code != 503 || errCode != "free_tier_unavailable" {
			t.Fatalf("a pre-check with the store gone: %d %s", code, errCode)
		}
	}
	time.Sleep(5 * time.Second)
	l := h.log()
	for _, line := range []string{"the store does not answer", "service states not refreshed", "free tier unavailable"} {
		if n := strings.Count(l, line); n != 1 {
			t.Errorf("%q logged %d times in the outage's first seconds, want once", line, n)
		}
	}

	gate.open()
	eventually(t, "ready again", 20*time.Second, func() bool { c, r := readyzOf(t, h.url()); return c == 200 && r.Store.OK })
	eventually(t, "the log says the store is back", 5*time.Second, func() bool { return strings.Contains(h.log(), "the store answers again") })
}

// stream-divergence as a plugin, and the same plugin whose corpus has one
// expectation changed: its self-test fails one case.
func sdServices(t *testing.T) (good, broken server.Service) {
	path := testhost.Plugin(t, "plugins/stream-divergence")
	sum, _ := pluginhost.PinOf(path)
	f, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "stream-divergence", Path: path, SHA256: sum},
		pluginhost.Options{Logger: hclog.NewNullLogger(), Env: []string{"PATH=" + os.Getenv("PATH")}}, pluginhost.NewRouter())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	good = server.Service{Desc: f.Description(), Backend: server.FamilyBackend{Family: f}}
	return good, withBrokenCorpus(t, good)
}

// withBrokenCorpus is svc with one expectation of its corpus changed (and
// the corpus re-pinned): that case fails.
func withBrokenCorpus(t *testing.T, svc server.Service) server.Service {
	desc := proto.Clone(svc.Desc).(*pb.FamilyDescription)
	desc.Corpus = bytes.Replace(desc.Corpus, []byte(`"status": 200`), []byte(`"status": 201`), 1)
	pin, err := selftest.Pin(desc.Corpus)
	if err != nil {
		t.Fatal(err)
	}
	desc.Corpus = bytes.Replace(desc.Corpus, []byte(desc.CorpusSha256), []byte(pin), 1)
	desc.CorpusSha256 = pin
	return server.Service{Desc: desc, Backend: svc.Backend}
}

// `assay service resume` reaches the hosts whose launch self-test stopped
// a service on them alone: each runs its corpus again, and serves the
// service when it passes; the command waits for every running host and
// names the one whose corpus failed again, with its result. Two hosts on
// one store, each with its board, readiness and the relaunch `assay
// serve` wires: the first failed at launch and passes now (what failed
// was passing), the second fails again.
func TestResumeReachesHostsWhoseLaunchFailed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := storetest.Open(t, "postgres")
	good, broken := sdServices(t)
	k := keyOf(good)
	keys, err := signing.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	host := func(id string, again server.Service) (*servicestate.Board, *readiness.Host) {
		board := servicestate.New(st, nil, nil)
		if err := board.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		launchSelfTests(ctx, []server.Service{broken}, keys, board, hclog.NewNullLogger())
		if s := board.State(k); !s.Stopped || !s.Local || s.Reason != "corpus failed at launch: 1 of 99 cases failed" {
			t.Fatalf("host %s after launch: %+v", id, s)
		}
		r := readiness.New(readiness.Config{Store: st, Board: board, Keys: keys, Services: []servicestate.Key{k}, HostID: id, Label: "host-" + id,
			Relaunch: func(ctx context.Context, k servicestate.Key) (bool, string) {
				return launchproof.New(launchproof.Config{Keys: keys}).Relaunch(ctx, launchproof.Target{Service: again})
			}})
		wg.Add(2)
		go func() { defer wg.Done(); board.Run(ctx, 100*time.Millisecond) }()
		go func() { defer wg.Done(); r.Run(ctx) }()
		return board, r
	}
	boardA, readyA := host("a", good)
	boardB, readyB := host("b", broken)
	eventually(t, "both hosts' rows", 10*time.Second, func() bool { hs, _ := st.Hosts(ctx); return len(hs) == 2 })
	if readyA.Report().Ready || readyB.Report().Ready {
		t.Fatal("a host whose launch self-test failed says it is ready")
	}

	var out bytes.Buffer
	err = serviceResume(ctx, st, good, time.Minute, &out)
	said := out.String()
	if err == nil || !strings.Contains(err.Error(), "1 of 2 running hosts are not serving") {
		t.Fatalf("resume: %v\n%s", err, said)
	}
	if !strings.Contains(said, "host-a (a): serving") || !strings.Contains(said, "host-b (b): stopped: corpus failed on resume: 1 of 99 cases failed") {
		t.Errorf("resume said:\n%s", said)
	}
	if s := boardA.State(k); s.Stopped {
		t.Errorf("host a after the resume: %+v", s)
	}
	if s := boardB.State(k); !s.Stopped || s.Reason != "corpus failed on resume: 1 of 99 cases failed" {
		t.Errorf("host b after the resume: %+v", s)
	}
	if !readyA.Report().Ready || readyB.Report().Ready {
		t.Errorf("readiness after the resume: a %+v, b %+v", readyA.Report(), readyB.Report())
	}
	// host b is not tried again until the next resume
	time.Sleep(2 * readiness.HeartbeatEvery)
	if s := boardB.State(k); s.Reason != "corpus failed on resume: 1 of 99 cases failed" || s.Actor != "resume self-test" {
		t.Errorf("host b later: %+v", s)
	}
}

// Every host on a store writes its own view: `assay service status` lists
// the store it read, the fleet's state of each service, and each host with
// what it alone does not serve (a family whose launch self-test could not
// run), and /readyz on that host names it.
func TestStatusShowsEachHostsOwnView(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	pg := storetest.PostgresURL(t)
	sd := sdConfig(t)
	// both plugins in one plugin dir (a plugin's path may not leave it)
	pdir := t.TempDir()
	var conf strings.Builder
	fmt.Fprintf(&conf, "plugin_dir = %q\n", pdir)
	for name, pkg := range map[string]string{"stream-divergence": "plugins/stream-divergence", "testfamily": "host/internal/testfamily"} {
		raw, err := os.ReadFile(testhost.Plugin(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(pdir, "assay-"+name)
		if err := os.WriteFile(path, raw, 0o700); err != nil {
			t.Fatal(err)
		}
		sum, _ := pluginhost.PinOf(path)
		fmt.Fprintf(&conf, "plugin %q {\n  path = %q\n  sha256 = %q\n}\n", name, filepath.Base(path), sum)
	}
	withTest := filepath.Join(t.TempDir(), "assay.hcl")
	_ = os.WriteFile(withTest, []byte(conf.String()), 0o600)
	a := launch(t, bin, nil, "--config", withTest, "--data-dir", t.TempDir(), "--store", pg, "--payments", "off")
	b := launch(t, bin, nil, "--config", sd, "--data-dir", t.TempDir(), "--store", pg, "--payments", "off")
	if !a.up() || !b.up() {
		t.Fatalf("hosts:\n%s\n%s", a.log(), b.log())
	}
	code, r := readyzOf(t, a.url())
	var testFamily *readiness.ServiceCheck
	for i := range r.Services {
		if r.Services[i].Service == "test-family" {
			testFamily = &r.Services[i]
		}
	}
	if code != 503 || r.Ready || testFamily == nil || testFamily.Ready || !testFamily.Local ||
		testFamily.Reason != "corpus not run at launch: the family ships no corpus" || !r.Store.OK {
		t.Fatalf("/readyz of the host whose test-family did not launch: %d %+v", code, r)
	}
	if code, r := readyzOf(t, b.url()); code != 200 || !r.Ready {
		t.Fatalf("/readyz of the other host: %d %+v", code, r)
	}
	var st fleetStatus
	eventually(t, "both hosts in the status, their starts over", 10*time.Second, func() bool {
		st, _ = statusOf(t, nil, "--config", withTest, "--store", pg)
		for _, h := range st.Hosts {
			for _, s := range h.Services {
				if s.State == "starting" {
					return false
				}
			}
		}
		return len(st.Hosts) == 2
	})
	if !strings.HasPrefix(st.Store, "postgres 127.0.0.1:5432/test schema assay_t_") {
		t.Errorf("status store %q", st.Store)
	}
	var hostA, hostB *hostRow
	for i := range st.Hosts {
		switch {
		case strings.HasSuffix(st.Hosts[i].Label, a.addr):
			hostA = &st.Hosts[i]
		case strings.HasSuffix(st.Hosts[i].Label, b.addr):
			hostB = &st.Hosts[i]
		}
	}
	if hostA == nil || hostB == nil || hostA.Ready || !hostB.Ready || !hostA.Running || !hostB.Running || len(hostA.Services) != 2 || len(hostB.Services) != 1 {
		t.Fatalf("hosts %+v", st.Hosts)
	}
	for _, s := range hostA.Services {
		if (s.Service == "test-family") != (s.State == "stopped" && s.Local && s.Reason == "corpus not run at launch: the family ships no corpus") {
			t.Errorf("host a's %s: %+v", s.Service, s)
		}
	}
	var out bytes.Buffer
	if err := run([]string{"service", "status", "--config", withTest, "--store", pg}, &out, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "store: postgres 127.0.0.1:5432/test schema") || !strings.Contains(text, a.addr) || !strings.Contains(text, b.addr) ||
		!strings.Contains(text, "test-family: corpus not run at launch: the family ships no corpus") {
		t.Errorf("status:\n%s", text)
	}
	// a host that stops takes its row with it
	b.stop()
	eventually(t, "the stopped host's row gone", 10*time.Second, func() bool {
		st, _ = statusOf(t, nil, "--config", withTest, "--store", pg)
		return len(st.Hosts) == 1
	})
}

// Operator commands that change a fleet cannot miss it: without a store
// they refuse and make none (no ./var appears); the store comes from
// ASSAY_STORE as well as --store, and each names the store it acted on;
// `keys rotate` on a store holding sealed keys refuses without the key
// secret, which ASSAY_KEYS_SECRET_FILE can give.
func TestAdminCommandsCannotMiss(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	cfg := sdConfig(t)
	secret := filepath.Join(t.TempDir(), "keys.secret")
	if err := signing.NewSecret(secret); err != nil {
		t.Fatal(err)
	}
	pg := storetest.PostgresURL(t)
	h := launch(t, bin, nil, "--config", cfg, "--data-dir", t.TempDir(), "--store", pg, "--payments", "off", "--keys-secret", secret)
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	cwd := t.TempDir()
	t.Chdir(cwd)
	t.Setenv(EnvStore, "")
	t.Setenv(EnvKeysSecret, "")
	var out bytes.Buffer
	err := run([]string{"service", "stop", "stream-divergence", "--reason", "audit", "--config", cfg}, &out, &out)
	if !errors.Is(err, store.ErrNoStore) || !strings.Contains(err.Error(), filepath.Join(cwd, "var", "assay.db")) {
		t.Fatalf("a stop with no store named: %v\n%s", err, out.String())
	}
	if err := run([]string{"keys", "rotate", "--config", cfg, "--store", pg}, &out, &out); err == nil ||
		!strings.Contains(err.Error(), "sealed with the fleet's key secret") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a rotation without the secret: %v", err)
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Fatalf("the refused commands left %d files in the working dir", len(entries))
	}
	if code, _ := precheckCode(t, h.url(), 1); code != 200 {
		t.Fatalf("the fleet no longer serves: %d", code)
	}

	t.Setenv(EnvStore, pg)
	out.Reset()
	if err := run([]string{"service", "stop", "stream-divergence", "--reason", "audit", "--config", cfg}, &out, &out); err != nil {
		t.Fatalf("a stop with ASSAY_STORE: %v\n%s", err, out.String())
	}
	if s := out.String(); !strings.HasPrefix(s, "store: postgres 127.0.0.1:5432/test schema assay_t_") || !strings.Contains(s, h.addr+" (") || !strings.Contains(s, ": stopped") {
		t.Errorf("stop said:\n%s", s)
	}
	if code, errCode := precheckCode(t, h.url(), 2); code != 503 || errCode != "service_stopped" {
		t.Errorf("after the stop: %d %s", code, errCode)
	}
	var before signing.JWKS
	getJSON(t, h.url()+"/keys", &before)
	t.Setenv(EnvKeysSecret, secret)
	out.Reset()
	if err := run([]string{"keys", "rotate", "--config", cfg}, &out, &out); err != nil {
		t.Fatalf("a rotation with ASSAY_KEYS_SECRET_FILE: %v\n%s", err, out.String())
	}
	if s := out.String(); !strings.HasPrefix(s, "store: postgres 127.0.0.1:5432/test schema assay_t_") || !strings.Contains(s, "every host on the store signs with it") {
		t.Errorf("rotate said:\n%s", s)
	}
	eventually(t, "the host signs with the rotated key", 10*time.Second, func() bool {
		var now signing.JWKS
		getJSON(t, h.url()+"/keys", &now)
		return len(now.Keys) == 2 && now.Keys[1].Kid == before.Keys[0].Kid
	})
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Errorf("the commands left %d files in the working dir", len(entries))
	}
}

// A host that joins a store whose fleet already signs with shared keys
// keeps what it signed on its own verifiable: its data dir's keys are
// sealed into the store as retired keys, listed by every host's /keys;
// it signs with the fleet's key.
func TestAJoiningHostKeepsItsEarlierKeys(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	cfg := sdConfig(t)
	secret := filepath.Join(t.TempDir(), "keys.secret")
	if err := signing.NewSecret(secret); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	alone := launch(t, bin, nil, "--config", cfg, "--data-dir", dir, "--payments", "off")
	if !alone.up() {
		t.Fatalf("host alone:\n%s", alone.log())
	}
	compare := func(url string) []byte {
		resp, err := http.Post(url+"/stream-divergence/compare", "application/json",
			strings.NewReader(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("compare: %d %s", resp.StatusCode, raw)
		}
		return raw
	}
	before := compare(alone.url())
	alone.stop()

	pg := storetest.PostgresURL(t)
	fleet := launch(t, bin, nil, "--config", cfg, "--data-dir", t.TempDir(), "--store", pg, "--payments", "off", "--keys-secret", secret)
	if !fleet.up() {
		t.Fatalf("fleet host:\n%s", fleet.log())
	}
	joined := launch(t, bin, nil, "--config", cfg, "--data-dir", dir, "--store", pg, "--payments", "off", "--keys-secret", secret)
	if !joined.up() {
		t.Fatalf("joining host:\n%s", joined.log())
	}
	var fleetKeys signing.JWKS
	eventually(t, "the fleet host lists the joined host's key", 10*time.Second, func() bool {
		getJSON(t, fleet.url()+"/keys", &fleetKeys)
		return len(fleetKeys.Keys) == 2
	})
	for _, h := range []*proc{fleet, joined} {
		var set signing.JWKS
		getJSON(t, h.url()+"/keys", &set)
		raw, _ := json.Marshal(set)
		if _, err := signing.Verify(before, raw); err != nil {
			t.Errorf("what the host signed alone, against %s/keys: %v", h.url(), err)
		}
		if set.Keys[0].Kid != fleetKeys.Keys[0].Kid {
			t.Errorf("%s lists %s active, the fleet %s", h.url(), set.Keys[0].Kid, fleetKeys.Keys[0].Kid)
		}
	}
	fleetSet, _ := json.Marshal(fleetKeys)
	if kid, err := signing.Verify(compare(joined.url()), fleetSet); err != nil || kid != fleetKeys.Keys[0].Kid {
		t.Errorf("the joined host signs with %s (%v), the fleet's key is %s", kid, err, fleetKeys.Keys[0].Kid)
	}
}
