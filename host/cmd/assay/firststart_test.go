package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/signing"
)

// proc is one `assay serve` process a test starts and stops.
type proc struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.Write(b)
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

func (p *proc) url() string { return "http://" + p.addr }

// launch starts `assay serve` with args (a listen address of its own
// added) and does not wait for it; the test's end stops it.
func launch(t *testing.T, bin string, env []string, args ...string) *proc {
	p := &proc{addr: freePort(t), done: make(chan struct{})}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--payments") }) {
		// a test that names no payments takes none: house mode, named
		// (the default, local, needs a chain)
		args = append([]string{"--payments", "house"}, args...)
	}
	p.cmd = exec.Command(bin, append([]string{"serve", "--listen", p.addr}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

// stop interrupts the host and waits for it (a kill after 15 s).
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// up waits until the host's start is over (false: it exited or took
// longer than a minute): it listens from its first instant, then proves
// what it has not proven on its store; /readyz names what still runs.
func (p *proc) up() bool {
	return startOver(p.url(), time.Minute, p.done)
}

// startOver polls url's /readyz until it answers with nothing still
// starting, ready or not (false: exited closed first, or within was
// spent).
func startOver(url string, within time.Duration, exited <-chan struct{}) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		select {
		case <-exited:
			return false
		default:
		}
		r, err := http.Get(url + "/readyz")
		if err != nil {
			continue
		}
		var ready struct {
			Starting []string `json:"starting"`
		}
		err = json.NewDecoder(r.Body).Decode(&ready)
		r.Body.Close()
		if err == nil && len(ready.Starting) == 0 {
			return true
		}
	}
	return false
}

// get is a GET's body and status.
func get(t *testing.T, url string) ([]byte, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return raw, resp.StatusCode
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	raw, status := get(t, url)
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, raw)
	}
	return status
}

// everyPlugin writes a config that loads every plugin of the repository
// (every family and adapter, as `make build` pins them) plus extra, and
// returns it with the services' paid ops.
func everyPlugin(t testing.TB, dir, extra string) (string, map[string]string) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	mains, _ := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	var b strings.Builder
	pluginDir := ""
	for _, m := range mains {
		name := filepath.Base(filepath.Dir(m))
		path := testhost.Plugin(t, "plugins/"+name)
		sum, err := pluginhost.PinOf(path)
		if err != nil {
			t.Fatal(err)
		}
		pluginDir = filepath.Dir(path)
		kind, label := "family", name
		if strings.HasPrefix(name, "adapter-") {
			kind, label = "adapter", strings.TrimPrefix(name, "adapter-")
		}
		fmt.Fprintf(&b, "plugin %q {\n  kind = %q\n  path = %q\n  sha256 = %q\n}\n", label, kind, filepath.Base(path), sum)
	}
	cfg := filepath.Join(dir, "assay.hcl")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("plugin_dir = %q\n%s%s", pluginDir, b.String(), extra)), 0o600); err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{"context-audit": "audit", "lifecycle-analytics": "analyse", "scope-hygiene": "audit", "stream-divergence": "compare"}
	return cfg, ops
}

// Four hosts started at one instant on an empty store with one key
// secret, as `docker compose up` starts a fleet on a fresh database, ten
// times over (the schema made beforehand in half the rounds, by the hosts
// themselves in the other half): every host comes up ready, serves every
// service (a paid route measures: payments are off here), and signs with
// the one key every host lists. The launch self-test race (a loser's key
// unknown to its own self-test) and the schema race (two CREATE SCHEMA at
// once) each stopped a host before. Two rounds run every plugin; the other
// eight one family with the smallest corpus: the races are the key's and
// the schema's, which every launch self-test reaches, and a round of every
// plugin costs four full launch self-tests (166 s of make test for ten).
func TestAFleetsFirstStartServesOnEveryHost(t *testing.T) {
	const fullRounds = 2
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	dir := t.TempDir()
	secret := filepath.Join(dir, "keys.secret")
	if err := signing.NewSecret(secret); err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf("payments = \"off\"\nkeys_secret_file = %q\n", secret)
	fullCfg, fullOps := everyPlugin(t, dir, extra)
	lightCfg := sdConfig(t)
	if f, err := os.OpenFile(lightCfg, os.O_APPEND|os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	} else if _, err := f.WriteString(extra); err != nil || f.Close() != nil {
		t.Fatal("the one-family config")
	}
	for round := 0; round < 10; round++ {
		cfg, ops := fullCfg, fullOps
		if round >= fullRounds {
			cfg, ops = lightCfg, map[string]string{"stream-divergence": "compare"}
		}
		pg := storetest.PostgresURL(t)
		if round%2 == 1 {
			dropSchema(t, pg)
		}
		hosts := make([]*proc, 4)
		for i := range hosts {
			hosts[i] = launch(t, bin, nil, "--config", cfg, "--data-dir", t.TempDir(), "--store", pg)
		}
		kids := map[string]int{}
		sets := make([][]byte, len(hosts))
		for i, h := range hosts {
			if !h.up() {
				t.Fatalf("round %d: host %d did not start:\n%s", round, i, h.log())
			}
			// ready once its first store check has run ("not checked yet"
			// until then: a host of one small family listens sooner)
			var ready readiness.Report
			code := 0
			for try := 0; try < 100; try++ {
				ready = readiness.Report{}
				if code = getJSON(t, h.url()+"/readyz", &ready); code == 200 || ready.Store.Reason != "not checked yet" {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if code != 200 || !ready.Ready || len(ready.Services) != len(ops) {
				t.Fatalf("round %d: host %d /readyz %d %+v\n%s", round, i, code, ready, h.log())
			}
			var set signing.JWKS
			getJSON(t, h.url()+"/keys", &set)
			kids[set.Keys[0].Kid]++
			sets[i], _ = json.Marshal(set)
		}
		if len(kids) != 1 {
			t.Fatalf("round %d: the hosts sign with %d keys: %v", round, len(kids), kids)
		}
		for i, h := range hosts {
			for svc, op := range ops {
				resp, err := http.Post(h.url()+"/"+svc+"/"+op, "application/json", strings.NewReader(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 503 {
					t.Fatalf("round %d: host %d %s: %d %s", round, i, svc, resp.StatusCode, raw)
				}
				// each answer verifies against the next host's key set
				if _, err := signing.Verify(raw, sets[(i+1)%len(hosts)]); err != nil {
					t.Fatalf("round %d: host %d %s: %v (%d %s)", round, i, svc, err, resp.StatusCode, raw)
				}
			}
		}
		var wg sync.WaitGroup
		for _, h := range hosts {
			wg.Add(1)
			go func() { defer wg.Done(); h.stop() }()
		}
		wg.Wait()
	}
}

func dropSchema(t *testing.T, pg string) {
	db, err := sql.Open("pgx", storetest.PostgresBase())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP SCHEMA ` + pg[strings.LastIndex(pg, "=")+1:]); err != nil {
		t.Fatal(err)
	}
}

// A second host on a data dir another running host holds refuses to
// start, naming the holder; once the holder is killed with SIGKILL (the
// kernel drops its lock) the dir is free again.
func TestOneDataDirOneHost(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	cfg := sdConfig(t)
	dir := t.TempDir()
	first := launch(t, bin, nil, "--config", cfg, "--data-dir", dir, "--payments", "off")
	if !first.up() {
		t.Fatalf("first host:\n%s", first.log())
	}
	second := launch(t, bin, nil, "--config", cfg, "--data-dir", dir, "--payments", "off")
	select {
	case <-second.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the second host on one data dir did not exit")
	}
	if l := second.log(); second.cmd.ProcessState.ExitCode() == 0 || !strings.Contains(l, "held by another running host") ||
		!strings.Contains(l, fmt.Sprintf("pid %d, listening on %s", first.cmd.Process.Pid, first.addr)) {
		t.Errorf("second host exited %d:\n%s", second.cmd.ProcessState.ExitCode(), l)
	}
	_ = first.cmd.Process.Kill()
	<-first.done
	third := launch(t, bin, nil, "--config", cfg, "--data-dir", dir, "--payments", "off")
	if !third.up() {
		t.Fatalf("after the holder's SIGKILL:\n%s", third.log())
	}
}

// statusOf runs `assay service status --json`.
func statusOf(t *testing.T, env []string, args ...string) (fleetStatus, string) {
	t.Helper()
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	var out, said bytes.Buffer
	if err := run(append([]string{"service", "status", "--json"}, args...), &out, &said); err != nil {
		t.Fatalf("status: %v\n%s", err, said.String())
	}
	var st fleetStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, out.String())
	}
	sort.Slice(st.Hosts, func(i, j int) bool { return st.Hosts[i].Label < st.Hosts[j].Label })
	return st, said.String()
}
