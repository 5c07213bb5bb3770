package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/store"
)

// composeServices is compose.yaml's services, each host's block merged
// with the x-assay anchor it names (its own keys first: they override the
// anchor's), and the names of the hosts.
func composeServices(t *testing.T, compose string) (map[string][]string, []string) {
	t.Helper()
	services := yamlChildren(yamlBlock(strings.Split(compose, "\n"), "services"))
	anchor := yamlBlock(strings.Split(compose, "\n"), "x-assay")
	var hosts []string
	for name, block := range services {
		if yamlValue(block, "<<") == "*assay" {
			services[name] = append(append([]string{}, block...), anchor...)
			hosts = append(hosts, name)
		}
	}
	if len(hosts) < 2 {
		t.Fatalf("deploy/compose.yaml: %d services merge the *assay host anchor, want the two hosts: the check is not reading the file", len(hosts))
	}
	return services, hosts
}

// caddyLines is a Caddyfile's lines, comments dropped, trimmed, blank
// lines left out.
func caddyLines(src string) []string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// caddyArgs is the arguments of the first line that starts with the
// directive (nil when none does).
func caddyArgs(lines []string, directive string) []string {
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == directive {
			return f[1:]
		}
	}
	return nil
}

// The production properties of the deployment's files, rendered and read
// as Docker would: TLS at the proxy (Caddy, automatic certificates for the
// operator's domain), the hosts' public URL https, /metrics on a listener
// of the hosts' own that nothing publishes (and the proxy refuses the
// paths anyway), Prometheus scraping every host's metrics listener with the
// shipped rules, resource limits on every service, and the PostgreSQL
// elsewhere reached over verified TLS.
func TestDeployTLSMetricsLimitsAndStore(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	read := func(rel string) string {
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		return string(raw)
	}
	compose := read("deploy/compose.yaml")
	services, hosts := composeServices(t, compose)
	caddy := caddyLines(read("deploy/Caddyfile"))

	t.Run("tls", func(t *testing.T) {
		proxy := services["proxy"]
		if !strings.HasPrefix(yamlValue(proxy, "image"), "caddy:") {
			t.Fatalf("deploy/compose.yaml: the proxy is %q, want Caddy (TLS with automatic certificates)", yamlValue(proxy, "image"))
		}
		for _, port := range []string{"80:80", "443:443"} {
			if !containsItem(yamlValue(proxy, "ports"), port) {
				t.Errorf("deploy/compose.yaml: the proxy does not publish %s (443 serves TLS; 80 answers the ACME challenge and redirects)", port)
			}
		}
		// the site block: the first block at the top level after the
		// global options
		var site string
		depth := 0
		for _, l := range caddy {
			if depth == 0 && strings.HasSuffix(l, "{") && l != "{" {
				site = strings.TrimSpace(strings.TrimSuffix(l, "{"))
				break
			}
			depth += strings.Count(l, "{") - strings.Count(l, "}")
		}
		// an http:// or :port address turns automatic HTTPS off
		if site != "{$ASSAY_DOMAIN}" {
			t.Errorf("deploy/Caddyfile: the site address is %q, want {$ASSAY_DOMAIN} (a domain: Caddy then obtains its certificate)", site)
		}
		env := yamlEnv(yamlBlock(proxy, "environment"))
		if !strings.HasPrefix(env["ASSAY_DOMAIN"], "${ASSAY_DOMAIN:?") || !strings.HasPrefix(env["ASSAY_ACME_EMAIL"], "${ASSAY_ACME_EMAIL:?") {
			t.Errorf("deploy/compose.yaml: the proxy's ASSAY_DOMAIN and ASSAY_ACME_EMAIL are not required from the environment: %v", env)
		}
		if !strings.Contains(strings.Join(yamlBlock(proxy, "volumes"), "\n"), ":/data") {
			t.Error("deploy/compose.yaml: Caddy's /data (its certificates and ACME account) is not on a volume: every restart would ask the CA again")
		}
		for _, name := range hosts {
			command := strings.Join(yamlBlock(services[name], "command"), " ")
			if !strings.Contains(command, "--public-url=https://${ASSAY_DOMAIN") {
				t.Errorf("deploy/compose.yaml: %s's public URL is not https://${ASSAY_DOMAIN}: x402's resource.url would name another address", name)
			}
		}
	})

	t.Run("proxy", func(t *testing.T) {
		upstreams := caddyArgs(caddy, "reverse_proxy")
		for _, name := range hosts {
			if !strings.Contains(strings.Join(upstreams, " "), name+":8402") {
				t.Errorf("deploy/Caddyfile: reverse_proxy %v does not reach %s:8402", upstreams, name)
			}
		}
		if got := caddyArgs(caddy, "health_uri"); len(got) != 1 || got[0] != "/readyz" {
			t.Errorf("deploy/Caddyfile: health_uri %v, want /readyz (a host not ready is left out)", got)
		}
		if caddyArgs(caddy, "lb_retry_match") != nil {
			t.Error("deploy/Caddyfile: lb_retry_match would send a POST that reached a host to the other one: a paid request twice")
		}
		size := caddyArgs(caddy, "max_size")
		if n, err := strconv.Atoi(strings.TrimSuffix(strings.Join(size, ""), "MB")); err != nil || n*1000*1000 <= 5<<20 {
			t.Errorf("deploy/Caddyfile: request_body max_size %v is not above context-audit's 5 MiB cap (the host answers 413 itself)", size)
		}
		grace, err := time.ParseDuration(strings.Join(caddyArgs(caddy, "grace_period"), ""))
		stop, err2 := time.ParseDuration(yamlValue(services["proxy"], "stop_grace_period"))
		if err != nil || err2 != nil || grace >= stop || grace < 60*time.Second {
			t.Errorf("deploy/Caddyfile: grace_period %v must cover a host's drain (60 s) and end before the proxy's stop_grace_period %v", grace, stop)
		}
		if wait, err := time.ParseDuration(strings.Join(caddyArgs(caddy, "response_header_timeout"), "")); err != nil || wait < 120*time.Second {
			t.Errorf("deploy/Caddyfile: response_header_timeout %v, want at least 120s (call_timeout with settlement)", wait)
		}
		metrics := caddyArgs(caddy, "@metrics")
		if len(metrics) < 3 || metrics[0] != "path" || !containsField(metrics, "/metrics") || !containsField(metrics, "/*/metrics") {
			t.Errorf("deploy/Caddyfile: @metrics %v does not match /metrics and /<service>/metrics", metrics)
		}
		if got := strings.Join(caddyArgs(caddy, "respond"), " "); got != "@metrics 404" {
			t.Errorf("deploy/Caddyfile: respond %q, want @metrics 404", got)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		prom := read("deploy/prometheus/prometheus.yml")
		for _, name := range hosts {
			h := services[name]
			m := regexp.MustCompile(`--metrics-listen=([^\s]+):(\d+)`).FindStringSubmatch(strings.Join(yamlBlock(h, "command"), " "))
			if m == nil {
				t.Errorf("deploy/compose.yaml: %s serves its metrics on the public listener (no --metrics-listen)", name)
				continue
			}
			if yamlValue(h, "ports") != "" || yamlBlock(h, "ports") != nil {
				t.Errorf("deploy/compose.yaml: %s publishes ports: its metrics listener would reach the outside", name)
			}
			if !strings.Contains(prom, `"`+name+":"+m[2]+`"`) {
				t.Errorf("deploy/prometheus/prometheus.yml: no scrape target %s:%s", name, m[2])
			}
		}
		if !strings.Contains(prom, "alerts.yml") {
			t.Error("deploy/prometheus/prometheus.yml does not load alerts.yml")
		}
		volumes := strings.Join(yamlBlock(services["prometheus"], "volumes"), "\n")
		if !strings.Contains(volumes, "./prometheus:/etc/prometheus") {
			t.Errorf("deploy/compose.yaml: the prometheus service does not mount ./prometheus (its config and the rules): %s", volumes)
		}
	})

	t.Run("limits", func(t *testing.T) {
		for name, block := range services {
			limits := yamlBlock(yamlBlock(yamlBlock(block, "deploy"), "resources"), "limits")
			if yamlValue(limits, "memory") == "" || yamlValue(limits, "cpus") == "" {
				t.Errorf("deploy/compose.yaml: %s has no memory and cpus limits (deploy.resources.limits)", name)
			}
		}
		for _, name := range hosts {
			if yamlValue(services[name], "pids_limit") == "" {
				t.Errorf("deploy/compose.yaml: %s has no pids_limit", name)
			}
		}
	})

	t.Run("postgres elsewhere", func(t *testing.T) {
		ext := read("deploy/compose.external-postgres.yaml")
		anchor := yamlBlock(strings.Split(ext, "\n"), "x-store")
		u, err := url.Parse(os.Expand(yamlEnv(yamlBlock(anchor, "environment"))[EnvStore], func(string) string { return "db.example" }))
		if err != nil || u.Query().Get("sslmode") != "verify-full" {
			t.Fatalf("deploy/compose.external-postgres.yaml: %s does not connect with sslmode=verify-full: %v", EnvStore, u)
		}
		ca, ok := strings.CutPrefix(u.Query().Get("sslrootcert"), "/run/secrets/")
		secrets := yamlChildren(yamlBlock(strings.Split(ext, "\n"), "secrets"))
		if !ok || !containsItem(yamlValue(anchor, "secrets"), ca) || !strings.HasPrefix(yamlValue(secrets[ca], "file"), "./secrets/") {
			t.Errorf("deploy/compose.external-postgres.yaml: sslrootcert %q is not a secret the hosts are given from ./secrets/", u.Query().Get("sslrootcert"))
		}
		for _, name := range hosts {
			if yamlValue(yamlChildren(yamlBlock(strings.Split(ext, "\n"), "services"))[name], "<<") != "*store" {
				t.Errorf("deploy/compose.external-postgres.yaml: %s does not take the store over TLS", name)
			}
		}
	})
}

func containsField(fields []string, want string) bool {
	for _, f := range fields {
		if f == want {
			return true
		}
	}
	return false
}

// The store URL's TLS settings reach the connection: with sslmode=verify-ca
// and the server's CA as sslrootcert the host's store runs over TLS (the
// server says so for its own connection); with a CA that did not sign the
// server's certificate the store is refused. The machine's PostgreSQL
// serves TLS with Debian's self-signed snakeoil certificate, its own CA.
func TestStoreOverVerifiedTLS(t *testing.T) {
	const ca = "/etc/ssl/certs/ssl-cert-snakeoil.pem"
	if _, err := os.Stat(ca); err != nil {
		t.Skip("no " + ca + ": this machine's PostgreSQL serves no TLS certificate to verify")
	}
	pg := storetest.PostgresURL(t)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", "verify-ca")
	q.Set("sslrootcert", ca)
	u.RawQuery = q.Encode()
	ctx := t.Context()
	st, err := store.Open(ctx, u.String(), t.TempDir())
	if err != nil {
		t.Fatalf("the store over TLS: %v", err)
	}
	defer st.Close()
	var ssl bool
	if err := st.DB().QueryRowContext(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl); err != nil || !ssl {
		t.Errorf("the store's connection is not TLS: %v %v", ssl, err)
	}
	other := filepath.Join(t.TempDir(), "other-ca.pem")
	writeSelfSignedCA(t, other)
	q.Set("sslrootcert", other)
	u.RawQuery = q.Encode()
	if st2, err := store.Open(ctx, u.String(), t.TempDir()); err == nil {
		st2.Close()
		t.Error("a store whose certificate the given CA did not sign was opened")
	}
}

// writeSelfSignedCA writes a CA certificate that signed nothing the
// machine's PostgreSQL serves.
func writeSelfSignedCA(t *testing.T, path string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the server's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
