package metrics

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// alertmanagerVersion is the Alertmanager deploy/compose.yaml runs; its
// amtool checks the shipped config and its binary delivers in the test.
const alertmanagerVersion = "v0.28.1"

// A rule that fires reaches a receiver: Prometheus (the shipped
// prometheus.yml and alerts.yml, scraping a host's real exposition) sends
// it to Alertmanager (the shipped alertmanager.yml, checked by amtool
// first), which routes a page alert to the pager's webhook and a ticket to
// chat's, each URL read from its secret file, grouped by fleet and alert.
// The copies differ from the shipped files only in addresses, file paths
// and intervals (seconds, not minutes).
func TestAFiringRuleReachesItsReceiver(t *testing.T) {
	prom := prometheusTool(t, "prometheus", "alert delivery is not checked")
	bin := t.TempDir()
	install := exec.Command("go", "install", "github.com/prometheus/alertmanager/cmd/alertmanager@"+alertmanagerVersion,
		"github.com/prometheus/alertmanager/cmd/amtool@"+alertmanagerVersion)
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOWORK=off")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install alertmanager %s: %v\n%s", alertmanagerVersion, err, out)
	}
	shipped := filepath.Join("..", "..", "deploy", "alertmanager", "alertmanager.yml")
	if out, err := exec.Command(filepath.Join(bin, "amtool"), "check-config", shipped).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}

	// the webhooks: what each receiver was sent
	var mu sync.Mutex
	got := map[string][]notification{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Errorf("a webhook body: %v", err)
		}
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], n)
		mu.Unlock()
	}))
	defer hook.Close()

	// a host's exposition: a service stopped (ticket), answers withheld
	// (page: a counter that keeps rising)
	m := New()
	m.Stopped("scope-hygiene", "memory-scope-hygiene/v1", "1", func() bool { return true })
	m.SelfCheckFailed("context-audit", "forbidden_wording")
	target := httptest.NewServer(m.Handler(""))
	defer target.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for ctx.Err() == nil {
			time.Sleep(300 * time.Millisecond)
			m.SelfCheckFailed("context-audit", "forbidden_wording")
		}
	}()

	dir := t.TempDir()
	amAddr, promAddr := freeAddr(t), freeAddr(t)
	secrets := map[string]string{"/run/secrets/alert_pager_url": hook.URL + "/pager", "/run/secrets/alert_chat_url": hook.URL + "/chat"}
	am := readFile(t, shipped)
	for path, url := range secrets {
		file := filepath.Join(dir, filepath.Base(path))
		writeFile(t, file, url+"\n")
		am = mustReplace(t, am, path, file)
	}
	am = mustReplace(t, am, "group_wait: 30s", "group_wait: 1s")
	writeFile(t, filepath.Join(dir, "alertmanager.yml"), am)
	run(t, filepath.Join(bin, "alertmanager"), "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "am"), "--web.listen-address="+amAddr, "--cluster.listen-address=")

	pc := readFile(t, filepath.Join(rulesDir, "prometheus.yml"))
	pc = mustReplace(t, pc, `["assay-a:9402", "assay-b:9402"]`, `["`+strings.TrimPrefix(target.URL, "http://")+`"]`)
	pc = mustReplace(t, pc, `["alertmanager:9093"]`, `["`+amAddr+`"]`)
	pc = mustReplace(t, pc, "scrape_interval: 15s", "scrape_interval: 1s")
	pc = mustReplace(t, pc, "evaluation_interval: 15s", "evaluation_interval: 1s")
	rules, _ := filepath.Abs(filepath.Join(rulesDir, "alerts.yml"))
	pc = mustReplace(t, pc, "  - alerts.yml", "  - "+rules)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), pc)
	run(t, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr)

	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		mu.Lock()
		pager, chat := find(got["/pager"], "AssayAnswersWithheld"), find(got["/chat"], "AssayServiceStopped")
		wrong := find(got["/chat"], "AssayAnswersWithheld") != nil || find(got["/pager"], "AssayServiceStopped") != nil
		mu.Unlock()
		if wrong {
			t.Fatalf("an alert reached the other severity's receiver: %+v", got)
		}
		if pager != nil && chat != nil {
			for _, n := range []*notification{pager, chat} {
				if n.GroupLabels["fleet"] != "assay" || n.Status != "firing" {
					t.Errorf("a notification not grouped by fleet, or not firing: %+v", *n)
				}
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("the alerts did not reach their receivers in two minutes: %+v", got)
}

// notification is what Alertmanager's webhook posts, as far as read here.
type notification struct {
	Receiver    string            `json:"receiver"`
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []struct {
		Labels map[string]string `json:"labels"`
	} `json:"alerts"`
}

func find(ns []notification, alert string) *notification {
	for i := range ns {
		if ns[i].GroupLabels["alertname"] == alert {
			return &ns[i]
		}
	}
	return nil
}

// run starts a process for the rest of the test.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s:\n%s", filepath.Base(name), out.String())
		}
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// mustReplace replaces old, which the shipped file must hold: a test that
// edits a line the file no longer has would test something else.
func mustReplace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("the shipped file no longer holds %q: update this test", old)
	}
	return strings.ReplaceAll(s, old, new)
}
