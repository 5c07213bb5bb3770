package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/siwx"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
)

// sdConfig writes a config that loads the stream-divergence plugin.
func sdConfig(t testing.TB) string {
	plugin := testhost.Plugin(t, "plugins/stream-divergence")
	sum, err := pluginhost.PinOf(plugin)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "assay.hcl")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf("plugin_dir = %q\nplugin \"stream-divergence\" {\n  path = %q\n  sha256 = %q\n}\n",
		filepath.Dir(plugin), filepath.Base(plugin), sum)), 0o600)
	return cfg
}

// precheckCode posts a pre-check from a fresh caller n, signed in with
// its wallet (SIGN-IN-WITH-X: its own allowance and interval), and
// returns the status and error code. A host that gives no challenge (a
// service stopped, a free tier down) is sent the pre-check unproven.
func precheckCode(t *testing.T, base string, n int) (int, string) {
	seed := sha256.Sum256([]byte(fmt.Sprintf("precheck-caller-%d", n)))
	key := ed25519.NewKeyFromSeed(seed[:])
	url := base + "/stream-divergence/precheck"
	body := `{"caller":"` + solana.EncodeBase58(key.Public().(ed25519.PublicKey)) + `","streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`
	var header map[string]string
	if proof, err := siwx.Prove(t.Context(), http.DefaultClient, url, key); err == nil {
		header = map[string]string{"SIGN-IN-WITH-X": proof}
	}
	status, code, _ := postCode(t, url, []byte(body), header)
	return status, code
}

// postCode posts a JSON body with the given headers and returns the
// status, the error code (if any) and the body.
func postCode(t *testing.T, url string, body []byte, header map[string]string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(raw, &a)
	return resp.StatusCode, a.Error.Code, raw
}

// The operator's round trip on a running host: `assay service stop` (the
// host answers service_stopped within its next poll), `service status`
// shows who stopped it and why, `service resume` runs the corpus and
// serves it again; both are rows in the store, the resume with its
// corpus result.
func TestServiceStopStatusResumeOnARunningHost(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	cfg := sdConfig(t)
	dataDir := t.TempDir()
	host := startHost(t, bin, cfg, dataDir, "sqlite")
	flags := []string{"--config", cfg, "--data-dir", dataDir}
	var out bytes.Buffer
	if err := run(append([]string{"service", "stop", "stream-divergence", "--reason", "criteria audit (ticket 41)"}, flags...), &out, &out); err != nil {
		t.Fatalf("stop: %v\n%s", err, out.String())
	}
	n := 0
	for deadline := time.Now().Add(10 * time.Second); ; n++ {
		status, code := precheckCode(t, host, n)
		if status == 503 && code == "service_stopped" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running host still answers %d %s", status, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	out.Reset()
	if err := run(append([]string{"service", "status"}, flags...), &out, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "stopped") || !strings.Contains(s, "criteria audit (ticket 41)") || !strings.Contains(s, "operator") {
		t.Errorf("status:\n%s", s)
	}
	out.Reset()
	if err := run(append([]string{"service", "resume", "stream-divergence"}, flags...), &out, &out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "99 of 99 cases passed") || !strings.Contains(s, "resumed") {
		t.Errorf("resume said:\n%s", s)
	}
	for deadline := time.Now().Add(10 * time.Second); ; n++ {
		if status, _ := precheckCode(t, host, n); status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the running host did not serve again after the resume")
		}
		time.Sleep(50 * time.Millisecond)
	}
	st, err := store.Open(context.Background(), "sqlite", dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events, err := st.ServiceEvents(context.Background())
	if err != nil || len(events) != 2 || events[0].Action != "stop" || events[1].Action != "resume" ||
		events[1].CorpusPassed == nil || *events[1].CorpusPassed != 99 || *events[1].CorpusCases != 99 || events[0].CriteriaID != "stream-divergence/v1" {
		t.Fatalf("rows %+v %v", events, err)
	}
	if err := run(append([]string{"service", "stop", "stream-divergence"}, flags...), &out, &out); err == nil {
		t.Error("a stop without a reason was accepted")
	}
}

// At launch, a family whose corpus does not pass whole is stopped on this
// host with "corpus failed at launch: N of M", one that ships no corpus
// is not served either, and a family whose corpus passes is served.
func TestLaunchSelfTestStopsAFailingFamily(t *testing.T) {
	ctx := context.Background()
	log := &testhost.Log{}
	logger := hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Info})
	start := func(pkg string) server.Service {
		path := testhost.Plugin(t, pkg)
		sum, _ := pluginhost.PinOf(path)
		f, err := pluginhost.StartFamily(ctx, pluginhost.Spec{Name: filepath.Base(pkg), Path: path, SHA256: sum},
			pluginhost.Options{Logger: logger, Env: []string{"PATH=" + os.Getenv("PATH")}}, pluginhost.NewRouter())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		return server.Service{Desc: f.Description(), Backend: server.FamilyBackend{Family: f}}
	}
	good := start("plugins/stream-divergence")
	broken := withBrokenCorpus(t, start("plugins/stream-divergence"))
	none := start("host/internal/testfamily")
	keys, err := signing.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// the broken one is the same service version: a host of its own
	board, brokenBoard := servicestate.New(nil, nil, nil), servicestate.New(nil, nil, nil)
	launchSelfTests(ctx, []server.Service{good, none}, keys, board, logger)
	launchSelfTests(ctx, []server.Service{broken}, keys, brokenBoard, logger)

	if st := board.State(keyOf(good)); st.Stopped {
		t.Errorf("the passing family was stopped: %+v", st)
	}
	if st := brokenBoard.State(keyOf(broken)); !st.Stopped || st.Reason != "corpus failed at launch: 1 of 99 cases failed" || !st.Local {
		t.Errorf("the failing family: %+v", st)
	}
	if st := board.State(keyOf(none)); !st.Stopped || st.Reason != "corpus not run at launch: the family ships no corpus" {
		t.Errorf("the family without a corpus: %+v", st)
	}
	if l := log.String(); !strings.Contains(l, "corpus passed at launch: service=stream-divergence cases=99 passed=99") ||
		!strings.Contains(l, "corpus failed at launch: not served: service=stream-divergence cases=99 passed=98") {
		t.Errorf("launch log:\n%s", l)
	}
}

// Two hosts, each with its own data dir, on one PostgreSQL with one key
// secret: a report from either verifies with `assay verify --keys`
// pointed at the other; `assay keys rotate` run once reaches both, which
// list the new key first and sign with it, the old one still listed.
func TestTwoHostsSignWithOneKeySet(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	dir := t.TempDir()
	secret := filepath.Join(dir, "keys.secret")
	var out bytes.Buffer
	if err := run([]string{"keys", "secret", "--out", secret}, &out, &out); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(sdConfig(t))
	cfg := filepath.Join(dir, "assay.hcl")
	_ = os.WriteFile(cfg, append(raw, []byte(fmt.Sprintf("payments = \"off\"\nkeys_secret_file = %q\n", secret))...), 0o600)
	pg := storetest.PostgresURL(t)
	hosts := []string{startHost(t, bin, cfg, t.TempDir(), pg), startHost(t, bin, cfg, t.TempDir(), pg)}

	report := func(host string) (string, []byte) {
		resp, err := http.Post(host+"/stream-divergence/compare", "application/json",
			strings.NewReader(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var a struct {
			Signature struct {
				KeyID string `json:"key_id"`
			} `json:"signature"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &a) != nil {
			t.Fatalf("report from %s: %d %s", host, resp.StatusCode, b)
		}
		path := filepath.Join(t.TempDir(), "report.json")
		_ = os.WriteFile(path, b, 0o600)
		return a.Signature.KeyID, []byte(path)
	}
	first, pathA := report(hosts[0])
	kidB, pathB := report(hosts[1])
	if first != kidB {
		t.Fatalf("the hosts sign with %s and %s", first, kidB)
	}
	for i, p := range [][]byte{pathA, pathB} {
		if err := run([]string{"verify", "--keys", hosts[1-i] + "/keys", string(p)}, &out, &out); err != nil {
			t.Errorf("host %d's report against the other host's keys: %v", i, err)
		}
	}
	out.Reset()
	if err := run([]string{"keys", "rotate", "--config", cfg, "--store", pg}, &out, &out); err != nil {
		t.Fatal(err)
	}
	var rotated string
	said := out.String()
	if i := strings.Index(said, "active signing key: "); i < 0 || !strings.HasPrefix(said, "store: postgres 127.0.0.1:5432/test schema assay_t_") {
		t.Fatalf("rotate said %q", said)
	} else if _, err := fmt.Sscanf(said[i:], "active signing key: %s", &rotated); err != nil || rotated == first {
		t.Fatalf("rotate said %q", said)
	}
	for _, host := range hosts {
		for deadline := time.Now().Add(10 * time.Second); ; {
			kid, _ := report(host)
			if kid == rotated {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still signs with %s after the rotation", host, kid)
			}
			time.Sleep(50 * time.Millisecond)
		}
		resp, err := http.Get(host + "/keys")
		if err != nil {
			t.Fatal(err)
		}
		var set signing.JWKS
		_ = json.NewDecoder(resp.Body).Decode(&set)
		resp.Body.Close()
		if len(set.Keys) != 2 || set.Keys[0].Kid != rotated || set.Keys[1].Kid != first {
			t.Errorf("%s/keys after the rotation: %+v", host, set.Keys)
		}
	}
	// the report signed before the rotation still verifies on either host
	if err := run([]string{"verify", "--keys", hosts[1] + "/keys", string(pathA)}, &out, &out); err != nil {
		t.Errorf("an answer from before the rotation: %v", err)
	}
}

// A stop that no running host takes is recorded and says so, with an exit
// status of its own (3): a script must not read it as done on a fleet it
// did not reach.
func TestServiceStopThatReachesNoHostExitsThree(t *testing.T) {
	cfg := sdConfig(t)
	dataDir := t.TempDir()
	st, err := store.Open(context.Background(), "sqlite", dataDir) // a store no host runs on now
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	var out bytes.Buffer
	err = run([]string{"service", "stop", "stream-divergence", "--reason", "audit", "--config", cfg, "--data-dir", dataDir, "--wait", "1s"}, &out, &out)
	if exitStatus(err) != 3 || !strings.Contains(err.Error(), "no running host on it loads the service, so none confirmed it") ||
		!strings.Contains(out.String(), "stopped stream-divergence") {
		t.Errorf("exit %d: %v\n%s", exitStatus(err), err, out.String())
	}
}
