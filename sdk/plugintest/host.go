package plugintest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// HostOptions say which host to stand up.
type HostOptions struct {
	// Assay is the path of the assay binary (built from the host's
	// repository, or installed: go install .../host/cmd/assay). Empty: the
	// ASSAY environment variable, then "assay" on PATH.
	Assay string
	// Plugins are the built plugin binaries to load, each named as the
	// host names its kinds: assay-<service> for a family,
	// assay-adapter-<format> for an adapter.
	Plugins []string
	// Args are added to `assay serve` (e.g. "--strict-plugins").
	Args []string
}

// Host is a running `assay serve` process with payments off (each answer
// signed and written to its ledger at price 0), on a free port of
// 127.0.0.1, over its own data directory, stopped when the test ends.
type Host struct {
	// URL is the host's base URL, http://127.0.0.1:port.
	URL string
	t   testing.TB
	log *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StartHost pins the plugins (assay plugins pin), starts the host and
// waits until it is ready: every family's corpus ran at launch, so a
// family that does not pass its own corpus whole is reported here, as
// soon as the host stops it, with the launch message and the host's log.
//
// A family's corpus sends records of every format its criteria accept,
// so each needs its adapter: one not among Plugins is looked for beside
// them (assay-adapter-<format> in the folder of any plugin given, where
// a build writes them all) and loaded; one found nowhere is named in the
// failure. It builds nothing.
func StartHost(t testing.TB, opts HostOptions) *Host {
	t.Helper()
	assay, err := findAssay(opts.Assay)
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	plugins, missing := withAdapters(t, opts.Plugins)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins {
		if !strings.HasPrefix(filepath.Base(p), "assay-") {
			t.Fatalf("plugintest: %s: a plugin binary's name starts with assay- (assay-<service>, assay-adapter-<format>)", p)
		}
		if err := copyFile(p, filepath.Join(bin, filepath.Base(p))); err != nil {
			t.Fatalf("plugintest: %v", err)
		}
	}
	cfg := filepath.Join(bin, "assay.hcl")
	var pins, pinErr bytes.Buffer
	pin := exec.Command(assay, "plugins", "pin", "--dir", bin)
	pin.Stdout, pin.Stderr = &pins, &pinErr
	if err := pin.Run(); err != nil {
		t.Fatalf("plugintest: assay plugins pin: %v\n%s", err, pinErr.String())
	}
	if err := os.WriteFile(cfg, pins.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, err := freeAddr()
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	args := append([]string{"serve", "--config", cfg, "--listen", addr, "--data-dir", filepath.Join(dir, "var"), "--payments", "off"}, opts.Args...)
	cmd := exec.Command(assay, args...)
	h := &Host{URL: "http://" + addr, t: t, log: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("plugintest: start %s: %v", assay, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { stop(cmd, exited) })
	if err := h.waitReady(exited); err != nil {
		if len(missing) > 0 {
			err = fmt.Errorf("%w; no adapter was found for %s: add each assay-adapter-<format> to HostOptions.Plugins", err, strings.Join(missing, ", "))
		}
		t.Fatalf("plugintest: %v\nthe host's log:\n%s", err, h.log.String())
	}
	h.custody(exited)
	return h
}

// Lines of the host's log about its custody check at launch (host/cmd/assay,
// warnCustody): the summary every served family gets once its corpus has
// passed, and the two findings.
const (
	custodyDone     = "custody check at launch: service="
	custodyLeak     = "family answers print caller-chosen strings"
	custodyWithheld = "a caller can have this family's answers withheld"
)

// custody waits (60 s at most) for the host's custody check of every
// service it serves, then fails the test on each answer that printed a
// planted string outside the family's exempt members, and logs each
// accepted case a caller's string can have withheld, as a warning.
func (h *Host) custody(exited <-chan struct{}) {
	h.t.Helper()
	_, body, err := h.do(http.MethodGet, "/readyz", nil)
	var r readyz
	if err != nil || json.Unmarshal(body, &r) != nil {
		return
	}
	var services []string
	for _, s := range r.Services {
		services = append(services, s.Service)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if custodyChecked(h.log.String(), services) {
			break
		}
		select {
		case <-exited:
			return
		default:
		}
	}
	reportCustody(h.t, h.log.String(), services)
}

func custodyChecked(log string, services []string) bool {
	for _, s := range services {
		if !strings.Contains(log, custodyDone+s+" ") {
			return false
		}
	}
	return true
}

// reportCustody turns the host's custody lines into the test's verdict;
// a service the host never checked is named too.
func reportCustody(t testing.TB, log string, services []string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(line, custodyLeak):
			t.Errorf("plugintest: custody: %s", strings.TrimSpace(line))
		case strings.Contains(line, custodyWithheld):
			t.Logf("plugintest: warning: %s", strings.TrimSpace(line))
		}
	}
	for _, s := range services {
		if !strings.Contains(log, custodyDone+s+" ") {
			t.Errorf("plugintest: the host did not finish its custody check of %s within 60 s", s)
		}
	}
}

// withAdapters is plugins with the adapters the families among them need
// and are not given, found beside the plugins given; missing names each
// format found nowhere, with its family.
func withAdapters(t testing.TB, plugins []string) (all, missing []string) {
	t.Helper()
	all = slices.Clone(plugins)
	adapted := map[string]bool{}
	var families []*pb.FamilyDescription
	for _, p := range plugins {
		if strings.HasPrefix(filepath.Base(p), "assay-adapter-") {
			adapted[StartAdapter(t, p).Describe().GetFormatId()] = true
		} else {
			families = append(families, describeFamily(t, p))
		}
	}
	for _, d := range families {
		for _, format := range d.GetFormats() {
			if adapted[format] {
				continue
			}
			for _, p := range plugins {
				beside := filepath.Join(filepath.Dir(p), "assay-adapter-"+format)
				if _, err := os.Stat(beside); err == nil {
					all = append(all, beside)
					adapted[format] = true
					break
				}
			}
			if !adapted[format] {
				missing = append(missing, fmt.Sprintf("format %s (accepted by %s)", format, d.GetService()))
			}
		}
	}
	return all, missing
}

func findAssay(path string) (string, error) {
	if path == "" {
		path = os.Getenv("ASSAY")
	}
	if path == "" {
		path = "assay"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("no assay binary (HostOptions.Assay, the ASSAY environment variable, or assay on PATH): %w", err)
	}
	return p, nil
}

func copyFile(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, raw, 0o755)
}

// freeAddr is a loopback address below the kernel's ephemeral range: a
// ":0" port comes from that range, and in the seconds before the host binds
// it an outbound connection of another process may take it; ports below
// the range are never given to outbound connections.
func freeAddr() (string, error) {
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	for range 200 {
		addr := "127.0.0.1:" + strconv.Itoa(10000+rand.IntN(low-10000))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr, nil
	}
	return "", fmt.Errorf("no free port found below %d", low)
}

// stop asks the host to drain (SIGTERM) and kills it after 10 s.
func stop(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// readyz is the part of GET /readyz's body waitReady reads.
type readyz struct {
	Services []struct {
		Service string `json:"service"`
		State   string `json:"state"`
		Reason  string `json:"reason"`
		Local   bool   `json:"local"`
	} `json:"services"`
}

// waitReady polls /readyz for up to 60 s: 200 once the store answers, the
// keys are loaded and every service passed its launch self-test. A
// service the host stopped (its launch self-test failed) ends the wait at
// once, with the host's reason.
func (h *Host) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("the host exited before it was ready")
		default:
		}
		status, body, err := h.do(http.MethodGet, "/readyz", nil)
		if err == nil && status == http.StatusOK {
			return nil
		}
		var r readyz
		if err == nil && json.Unmarshal(body, &r) == nil {
			for _, s := range r.Services {
				if s.State == "stopped" && s.Local {
					return fmt.Errorf("the host stopped service %s: %s", s.Service, s.Reason)
				}
			}
		}
		if err == nil {
			last = fmt.Sprintf("%d %s", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the host was not ready within 60 s (last /readyz: %s)", last)
}

func (h *Host) do(method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// Post sends body to path (e.g. /my-service/precheck) and returns the
// status and the answer's bytes; a request that gets no answer fails t.
func (h *Host) Post(path string, body []byte) (int, []byte) {
	h.t.Helper()
	status, raw, err := h.do(http.MethodPost, path, body)
	if err != nil {
		h.t.Fatalf("plugintest: POST %s: %v", path, err)
	}
	return status, raw
}

// Get fetches path (/catalog, /keys, /{service}/criteria ...).
func (h *Host) Get(path string) (int, []byte) {
	h.t.Helper()
	status, raw, err := h.do(http.MethodGet, path, nil)
	if err != nil {
		h.t.Fatalf("plugintest: GET %s: %v", path, err)
	}
	return status, raw
}

// Verify checks answer's signature against the host's /keys, as a payer
// does (sdk.VerifyAnswer), and returns the signing key's id; an answer
// that does not verify fails t.
func (h *Host) Verify(answer []byte) string {
	h.t.Helper()
	status, jwks := h.Get("/keys")
	if status != http.StatusOK {
		h.t.Fatalf("plugintest: GET /keys: %d", status)
	}
	kid, err := sdk.VerifyAnswer(answer, jwks)
	if err != nil {
		h.t.Fatalf("plugintest: the answer's signature: %v", err)
	}
	return kid
}

// Log is everything the host has logged so far (metadata only: a host
// never logs a submitted byte).
func (h *Host) Log() string { return h.log.String() }
