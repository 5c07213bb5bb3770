package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
)

// A slow client cannot hold a stopping host past shutdown_grace: with an
// upload trickling in (its body read would last a minute), SIGTERM ends
// the host once the grace has passed, the cut named in its log, and the
// host exits cleanly; its last line says so.
func TestShutdownGraceBoundsASlowClient(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	p := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", t.TempDir(), "--payments", "off", "--shutdown-grace", "1s")
	if !p.up() {
		t.Fatalf("the host did not start:\n%s", p.log())
	}
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// headers and the first bytes of a body that will never be complete
	fmt.Fprintf(conn, "POST /stream-divergence/compare HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"streamed")
	time.Sleep(200 * time.Millisecond) // the request is in its handler, reading
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// the body read's own timeout is a minute: an exit well before it is
	// the grace's doing
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the host was still up 30 s after SIGTERM with a 1 s grace:\n%s", p.log())
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d after a grace that ran out, want 0:\n%s", code, p.log())
	}
	if !strings.Contains(p.log(), "shutdown grace ran out") {
		t.Errorf("the cut requests are not named in the log:\n%s", p.log())
	}
}

// A PostgreSQL store URL without search_path is served (into the
// database's public schema) with a warning that says so and names the
// store. The test sets the schema through the connection's options
// instead, so that no table lands in the shared test database's public
// schema while the URL still names no search_path.
func TestAStoreWithoutSearchPathIsNamedInTheLog(t *testing.T) {
	url := strings.Replace(storetest.PostgresURL(t), "search_path=", "options=-csearch_path%3D", 1)
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	p := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", t.TempDir(), "--payments", "off", "--store", url)
	if !p.up() {
		t.Fatalf("the host did not start:\n%s", p.log())
	}
	if log := p.log(); !strings.Contains(log, "names no search_path") || !strings.Contains(log, "postgres 127.0.0.1:5432/test schema public") {
		t.Errorf("no warning naming the store:\n%s", log)
	}
}

// serve --check reports each check and exits without serving or making
// anything (no store, no keys, no host id in the data dir); with a wrong
// plugin pin and an unreadable key secret it names both problems at once.
func TestServeCheckValidatesWithoutServing(t *testing.T) {
	cfg := sdConfig(t)
	data := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"serve", "--check", "--config", cfg, "--data-dir", data, "--payments", "off"}, io.Discard, &out); err != nil {
		t.Fatalf("a good config failed its check: %v\n%s", err, out.String())
	}
	for _, want := range []string{"ok   store: none there yet", "ok   plugins: 1 families", "serve --check: ready to serve"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, out.String())
		}
	}
	if left, _ := os.ReadDir(data); len(left) != 0 {
		t.Errorf("the check made %d entries in the data dir", len(left))
	}
	raw, _ := os.ReadFile(cfg)
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	broken := regexp.MustCompile(`sha256 = "[0-9a-f]+"`).ReplaceAllString(string(raw), `sha256 = "`+strings.Repeat("0", 64)+`"`)
	_ = os.WriteFile(bad, []byte(broken+"keys_secret_file = \"/nonexistent/keys.secret\"\n"), 0o600)
	out.Reset()
	err := run([]string{"serve", "--check", "--config", bad, "--data-dir", data, "--payments", "off"}, io.Discard, &out)
	if err == nil || !strings.Contains(err.Error(), "2 problem(s)") || !strings.Contains(out.String(), "FAIL keys secret file") || !strings.Contains(out.String(), "FAIL plugins") {
		t.Fatalf("a wrong pin and a missing secret: %v\n%s", err, out.String())
	}
}
