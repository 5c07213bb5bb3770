package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
)

// roundRobin is the reverse proxy of the deployment's compose file, in
// small: requests alternate between the hosts, and one a host refuses to
// connect (it is down) goes to the next; a request that reached a host
// and lost its answer is not sent twice (the client re-sends it).
type roundRobin struct {
	backends []string
	next     atomic.Int64
	rt       http.RoundTripper
}

func (p *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	first := int(p.next.Add(1))
	for i := range p.backends {
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, p.backends[(first+i)%len(p.backends)]+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		client, _, _ := net.SplitHostPort(r.RemoteAddr)
		if prior := r.Header.Get("X-Forwarded-For"); prior != "" {
			client = prior + ", " + client
		}
		out.Header.Set("X-Forwarded-For", client)
		resp, err := p.rt.RoundTrip(out)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			continue
		}
		if err != nil {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		resp.Body.Close()
		return
	}
	http.Error(w, "no host answers", http.StatusBadGateway)
}

// The deployment's topology without Docker: two `assay serve` processes,
// each with its own data dir, on one PostgreSQL, sharing the key secret
// and the local facilitator's fee payer, behind a round-robin proxy. The
// free tier is exact across them; paid calls run through the proxy while
// one host is killed with SIGKILL and never comes back; the other keeps
// serving; afterwards no payment was accepted twice, every payment left
// undelivered delivers once when re-sent, and every delivered report has
// its one ledger line.
func TestFleetBehindAProxy(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"keys", "secret", "--out", filepath.Join(dir, "keys.secret")}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := wallet.New(filepath.Join(dir, "fee-payer.json")); err != nil {
		t.Fatal(err)
	}
	seller, err := wallet.New(filepath.Join(dir, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(sdConfig(t))
	cfg := filepath.Join(dir, "assay.hcl")
	_ = os.WriteFile(cfg, append(raw, []byte(fmt.Sprintf("keys_secret_file = \"keys.secret\"\nfee_payer_key_file = \"fee-payer.json\"\npay_to = %q\n"+
		"trusted_proxies = [\"127.0.0.1\"]\nadmission {\n  waiting = 64\n  wait = \"30s\"\n}\n", solana.EncodeBase58(seller.Public().(ed25519.PublicKey))))...), 0o600)
	pg := storetest.PostgresURL(t)
	hosts := []*killable{
		{t: t, bin: bin, cfg: cfg, dir: t.TempDir(), store: pg, addr: freePort(t)},
		{t: t, bin: bin, cfg: cfg, dir: t.TempDir(), store: pg, addr: freePort(t)},
	}
	for _, h := range hosts {
		h.start()
		t.Cleanup(h.kill)
	}
	proxy := httptest.NewServer(&roundRobin{backends: []string{"http://" + hosts[0].addr, "http://" + hosts[1].addr},
		rt: &http.Transport{DisableKeepAlives: true}})
	defer proxy.Close()
	logs := func() string { return hosts[0].log() + hosts[1].log() }

	// one caller's burst of pre-checks at one instant, split over both
	// hosts: exactly one is free
	precheck := func(caller, forwarded string) *http.Request {
		req, _ := http.NewRequest("POST", proxy.URL+"/stream-divergence/precheck",
			bytes.NewReader([]byte(`{`+caller+`"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`)))
		if forwarded != "" {
			req.Header.Set("X-Forwarded-For", forwarded)
		}
		return req
	}
	statuses := burst(t, 40, func(int) *http.Request {
		return precheck(`"caller":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",`, "")
	})
	if statuses[200] != 1 || statuses[429] != 39 {
		t.Fatalf("one caller's burst through the proxy: %v, want exactly one free pre-check", statuses)
	}
	// callers without a wallet are counted by the address the trusted
	// proxy names: two clients' bursts, one free pre-check each
	statuses = burst(t, 40, func(i int) *http.Request { return precheck("", fmt.Sprintf("198.51.100.%d", 7+i%2)) })
	if statuses[200] != 2 || statuses[429] != 38 {
		t.Fatalf("two clients' bursts through the proxy: %v, want one free pre-check each", statuses)
	}

	url := proxy.URL + "/stream-divergence/compare"
	load := startPaying(t, url, 4, 0, nil)
	waitDelivered := func(n int) {
		for deadline := time.Now().Add(30 * time.Second); load.delivered() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d reports delivered, waiting for %d\n%s", load.delivered(), n, logs())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitDelivered(20)
	hosts[0].kill()
	atKill := load.delivered()
	waitDelivered(atKill + 40) // the other host keeps serving
	seen := load.stop()
	st, err := store.Open(context.Background(), pg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	answered, unanswered, resent := resendUndelivered(t, st, url, seen, logs)
	t.Logf("%d payments: %d delivered at once (%d before the kill), %d without an answer, %d re-sent", len(seen), answered, atKill, unanswered, resent)
}

// burst sends n requests at once and counts their statuses.
func burst(t *testing.T, n int, req func(i int) *http.Request) map[int]int {
	statuses := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.DefaultClient.Do(req(i))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return statuses
}

// The deployment files, read as Docker would read them, since Docker
// cannot run here: each property below once kept `docker compose up` from
// starting a working fleet, or left it serving what it should not.
func TestDeployFilesStartAsWritten(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	read := func(t *testing.T, rel string) string {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		return string(raw)
	}
	const dataDir = "/var/lib/assay"

	t.Run("Dockerfile", func(t *testing.T) {
		final := lastStage(dockerInstructions(read(t, "deploy/Dockerfile")))
		if len(final) == 0 {
			t.Fatal("deploy/Dockerfile: no FROM read")
		}
		chowned, user, workdir := -1, -1, -1
		for i, in := range final {
			op, rest, _ := strings.Cut(in, " ")
			switch strings.ToUpper(op) {
			case "RUN":
				t.Errorf("deploy/Dockerfile: the final stage (distroless) has no shell for %q: prepare it in the build stage", in)
			case "COPY":
				f := strings.Fields(rest)
				if strings.TrimSuffix(f[len(f)-1], "/") == dataDir && (strings.Contains(rest, "--chown=65532") || strings.Contains(rest, "--chown=nonroot")) {
					chowned = i
				}
			case "USER":
				if u := strings.TrimSpace(rest); u == "65532:65532" || u == "nonroot:nonroot" || u == "65532" || u == "nonroot" {
					user = i
				} else {
					t.Errorf("deploy/Dockerfile: USER %s, want the distroless nonroot user (65532)", u)
				}
			case "WORKDIR":
				if strings.TrimSuffix(strings.TrimSpace(rest), "/") == dataDir {
					workdir = i
				}
			}
		}
		if chowned < 0 {
			t.Errorf("deploy/Dockerfile: the final stage does not COPY %s with --chown=65532:65532: the host (uid 65532) cannot write its host-id in a root-owned data dir", dataDir)
		}
		if user < 0 {
			t.Error("deploy/Dockerfile: the final stage sets no USER nonroot (65532)")
		}
		if workdir >= 0 && (chowned < 0 || workdir < chowned) {
			t.Errorf("deploy/Dockerfile: WORKDIR %s comes before the data dir is copied owned by 65532: WORKDIR makes it owned by root, and named volumes copy that owner", dataDir)
		}
		if !strings.Contains(strings.Join(final, "\n"), "--data-dir\", \""+dataDir) {
			t.Errorf("deploy/Dockerfile: the CMD does not serve from %s, the dir made for the runtime user", dataDir)
		}
	})

	compose := read(t, "deploy/compose.yaml")
	services, hosts := composeServices(t, compose)
	topSecrets := yamlChildren(yamlBlock(strings.Split(compose, "\n"), "secrets"))

	t.Run("postgres", func(t *testing.T) {
		pg := services["postgres"]
		if pg == nil {
			t.Fatal("deploy/compose.yaml: no postgres service")
		}
		test := yamlValue(yamlBlock(pg, "healthcheck"), "test")
		if !strings.Contains(test, "pg_isready") || !regexp.MustCompile(`-h\s+127\.0\.0\.1\b`).MatchString(test) {
			t.Errorf("deploy/compose.yaml: postgres's healthcheck %s does not run pg_isready -h 127.0.0.1: over the unix socket it passes while the image is still initialising, and the hosts crash-loop", test)
		}
		env := yamlEnv(yamlBlock(pg, "environment"))
		if _, ok := env["POSTGRES_PASSWORD"]; ok {
			t.Error("deploy/compose.yaml: postgres has POSTGRES_PASSWORD in its environment: use POSTGRES_PASSWORD_FILE")
		}
		if env["POSTGRES_PASSWORD_FILE"] != "/run/secrets/pg_password" || !containsItem(yamlValue(pg, "secrets"), "pg_password") {
			t.Errorf("deploy/compose.yaml: postgres's password is not the pg_password secret (POSTGRES_PASSWORD_FILE %q, secrets %s)", env["POSTGRES_PASSWORD_FILE"], yamlValue(pg, "secrets"))
		}
	})

	t.Run("hosts", func(t *testing.T) {
		drain := longestDrain(t, root)
		for _, name := range hosts {
			h := services[name]
			test := yamlValue(yamlBlock(h, "healthcheck"), "test")
			if !strings.Contains(test, `"/opt/assay/assay", "probe"`) || !strings.Contains(test, "/readyz") {
				t.Errorf("deploy/compose.yaml: %s's healthcheck %q does not run /opt/assay/assay probe on /readyz (the image has no shell or curl)", name, test)
			}
			grace, err := time.ParseDuration(yamlValue(h, "stop_grace_period"))
			if err != nil {
				t.Errorf("deploy/compose.yaml: %s has no stop_grace_period (%v): Docker's 10 s default ends a drain of up to %s with SIGKILL", name, err, drain)
			} else if grace <= drain {
				t.Errorf("deploy/compose.yaml: %s's stop_grace_period %s is not longer than the host's longest drain, %s", name, grace, drain)
			}
			env := yamlEnv(yamlBlock(h, "environment"))
			u, err := url.Parse(env[EnvStore])
			if err != nil || u.Scheme != "postgres" || u.User == nil {
				t.Errorf("deploy/compose.yaml: %s's %s is not a postgres:// URL naming its user", name, EnvStore)
			} else if _, has := u.User.Password(); has || u.Query().Has("password") {
				t.Errorf("deploy/compose.yaml: %s's %s carries a password: it is then in `docker inspect`; give it in %s", name, EnvStore, EnvStorePasswordFile)
			}
			secret, ok := strings.CutPrefix(env[EnvStorePasswordFile], "/run/secrets/")
			if !ok || !containsItem(yamlValue(h, "secrets"), secret) || topSecrets[secret] == nil {
				t.Errorf("deploy/compose.yaml: %s's %s is %q, want /run/secrets/<a secret it is given>", name, EnvStorePasswordFile, env[EnvStorePasswordFile])
			}
			if secret != "pg_password" {
				t.Errorf("deploy/compose.yaml: %s reads the store's password from %q, not the pg_password postgres was made with", name, secret)
			}
			// payments that settle: local on a chain whose node comes from a
			// secret file, the network from the environment
			command := strings.Join(yamlBlock(h, "command"), " ")
			if !strings.Contains(command, "--payments=local") {
				t.Errorf("deploy/compose.yaml: %s does not serve --payments=local: the deployment would take no money", name)
			}
			if strings.Contains(command, "--solana-rpc") {
				t.Errorf("deploy/compose.yaml: %s names its RPC node on the command line (it carries a key): use %s", name, EnvSolanaRPCFile)
			}
			rpc, ok := strings.CutPrefix(env[EnvSolanaRPCFile], "/run/secrets/")
			if !ok || !containsItem(yamlValue(h, "secrets"), rpc) || topSecrets[rpc] == nil {
				t.Errorf("deploy/compose.yaml: %s's %s is %q, want /run/secrets/<a secret it is given>", name, EnvSolanaRPCFile, env[EnvSolanaRPCFile])
			}
			if !strings.HasPrefix(env[EnvNetwork], "${ASSAY_NETWORK") {
				t.Errorf("deploy/compose.yaml: %s's %s is %q: the operator picks mainnet or devnet in the environment", name, EnvNetwork, env[EnvNetwork])
			}
		}
		dependsOn := yamlBlock(services["proxy"], "depends_on")
		for _, name := range hosts {
			if yamlValue(yamlBlock(dependsOn, name), "condition") != "service_healthy" {
				t.Errorf("deploy/compose.yaml: the proxy does not wait for %s to be healthy (depends_on %s: condition: service_healthy)", name, name)
			}
		}
	})

	t.Run("secrets", func(t *testing.T) {
		header := compose[:strings.Index(compose, "\nx-assay:")]
		for _, s := range []string{"chown 65532:65532", "chmod 0600"} {
			if !strings.Contains(header, s) {
				t.Errorf("deploy/compose.yaml: the header does not say `%s` for the secrets: compose mounts them with the host file's owner and mode, and the hosts run as 65532", s)
			}
		}
		for name, block := range topSecrets {
			file := yamlValue(block, "file")
			if !strings.HasPrefix(file, "./secrets/") {
				t.Errorf("deploy/compose.yaml: secret %s is read from %q, outside secrets/ (which .gitignore and .dockerignore keep out)", name, file)
			} else if !strings.Contains(header, strings.TrimPrefix(file, "./")) {
				t.Errorf("deploy/compose.yaml: the header does not say how to make %s", file)
			}
		}
	})

	t.Run("ignores", func(t *testing.T) {
		entries := func(rel string) map[string]bool {
			out := map[string]bool{}
			for _, l := range strings.Split(read(t, rel), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					out[strings.Trim(l, "/")] = true
				}
			}
			return out
		}
		docker := entries(".dockerignore")
		for _, e := range []string{"var", "deploy/secrets", "bin", ".git"} {
			if !docker[e] {
				t.Errorf(".dockerignore does not exclude %s/: the build context would carry it (the data dir holds keys, secrets/ the fleet's)", e)
			}
		}
		if !entries(".gitignore")["deploy/secrets"] {
			t.Error(".gitignore does not ignore deploy/secrets/: the fleet's key secret, fee payer and database password could be committed")
		}
	})
}

// longestDrain is how long `assay serve` may take to exit after SIGTERM
// with the image's config: its shutdown_grace (the default), then
// go-plugin's 2 s wait for each plugin to exit gracefully.
func longestDrain(t *testing.T, root string) time.Duration {
	grace, err := config.Defaults().Grace()
	if err != nil {
		t.Fatal(err)
	}
	plugins, _ := filepath.Glob(filepath.Join(root, "plugins", "*", "main.go"))
	if len(plugins) == 0 {
		t.Fatal("no plugins/*/main.go: the drain cannot be counted")
	}
	return grace + time.Duration(len(plugins))*2*time.Second
}

// dockerInstructions is a Dockerfile's instructions, continuation lines
// joined and comments dropped.
func dockerInstructions(src string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if cur.Len() == 0 && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if body, more := strings.CutSuffix(t, "\\"); more {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(t)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// lastStage is the instructions after the last FROM: the image that runs.
func lastStage(ins []string) []string {
	for i := len(ins) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.ToUpper(ins[i]), "FROM ") {
			return ins[i:]
		}
	}
	return nil
}

// yamlIndent is a line's indentation, -1 for a blank or comment line.
func yamlIndent(l string) int {
	t := strings.TrimLeft(l, " ")
	if t == "" || strings.HasPrefix(t, "#") {
		return -1
	}
	return len(l) - len(t)
}

// yamlTop is the shallowest indentation of a block's lines: its keys'.
func yamlTop(lines []string) int {
	top := -1
	for _, l := range lines {
		if n := yamlIndent(l); n >= 0 && (top < 0 || n < top) {
			top = n
		}
	}
	return top
}

// yamlBlock is the lines under the first key of that name at a block's
// top level (a block-style mapping, as compose.yaml is written), dedented
// so that blocks from different depths can be merged, or nil.
func yamlBlock(lines []string, key string) []string {
	top := yamlTop(lines)
	for i, l := range lines {
		if yamlIndent(l) != top || !strings.HasPrefix(strings.TrimSpace(l), key+":") {
			continue
		}
		var out []string
		for _, m := range lines[i+1:] {
			if n := yamlIndent(m); n >= 0 && n <= top {
				break
			}
			out = append(out, m)
		}
		in := yamlTop(out) // -1 for a key with an inline value only
		for j, m := range out {
			if in > 0 && yamlIndent(m) >= in {
				out[j] = m[in:]
			}
		}
		return out
	}
	return nil
}

// yamlChildren is a block's top-level keys, each with its block.
func yamlChildren(lines []string) map[string][]string {
	out := map[string][]string{}
	top := yamlTop(lines)
	for _, l := range lines {
		if yamlIndent(l) == top {
			if k, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
				out[k] = yamlBlock(lines, k)
			}
		}
	}
	return out
}

// yamlValue is the inline value of the first key of that name at a
// block's top level, its comment and quotes dropped ("" when absent).
func yamlValue(lines []string, key string) string {
	top := yamlTop(lines)
	for _, l := range lines {
		if yamlIndent(l) != top {
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			if i := strings.Index(v, " #"); i >= 0 {
				v = v[:i]
			}
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// yamlEnv is an environment block, in map or list form.
func yamlEnv(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if item, ok := strings.CutPrefix(t, "- "); ok {
			k, v, _ := strings.Cut(strings.Trim(item, `"'`), "=")
			out[k] = v
			continue
		}
		k, v, _ := strings.Cut(t, ":")
		out[k] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return out
}

// containsItem says whether a flow list ("[a, b]") holds item.
func containsItem(flow, item string) bool {
	for _, s := range strings.Split(strings.Trim(flow, "[]"), ",") {
		if strings.Trim(strings.TrimSpace(s), `"'`) == item {
			return true
		}
	}
	return false
}

// `assay probe` is the hosts' healthcheck: 0 on 200 only, and otherwise a
// one-line reason that is the status or "no answer", never the body.
func TestProbe(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			_, _ = io.WriteString(w, "ready")
		case "/slow":
			<-release
		case "/moved":
			http.Redirect(w, r, "/readyz", http.StatusFound)
		default:
			http.Error(w, "not ready: store secret-body-text", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	defer close(release)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + ln.Addr().String() + "/readyz"
	ln.Close()

	probeRun := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(append([]string{"probe"}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := probeRun(srv.URL + "/readyz"); err != nil || out != "" {
		t.Errorf("probe of a ready host: %v %q, want success and nothing printed", err, out)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{srv.URL + "/readyz-not"}, "probe: status 503"},
		{[]string{srv.URL + "/moved"}, "probe: status 302"},
		{[]string{nobody}, "probe: no answer within 2s"},
		{[]string{"--timeout=100ms", srv.URL + "/slow"}, "probe: no answer within 100ms"},
	} {
		start := time.Now()
		out, err := probeRun(c.args...)
		if err == nil || err.Error() != c.says || out != "" {
			t.Errorf("probe %v: %v %q, want exactly %q", c.args, err, out, c.says)
		}
		if time.Since(start) > 2*time.Second {
			t.Errorf("probe %v took %s: the timeout does not bound it", c.args, time.Since(start))
		}
	}
	if _, err := probeRun(); err == nil {
		t.Error("probe with no URL succeeded")
	}
	if _, err := probeRun("127.0.0.1:8402/readyz"); err == nil {
		t.Error("probe of a URL without http:// succeeded")
	}

	// the exit status is what Docker reads
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	for _, c := range []struct {
		url    string
		status int
		stderr string
	}{{srv.URL + "/readyz", 0, ""}, {srv.URL + "/down", 1, "assay: probe: status 503\n"}, {nobody, 1, "assay: probe: no answer within 2s\n"}} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "probe", c.url)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != c.status || stderr.String() != c.stderr || stdout.Len() != 0 {
			t.Errorf("assay probe %s: exit %d, stderr %q, stdout %q; want exit %d and stderr %q", c.url, code, stderr.String(), stdout.String(), c.status, c.stderr)
		}
	}
}
