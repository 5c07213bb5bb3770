package plugintest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk/corpus"
	"github.com/assay-audit/assay/sdk/plugintest"
)

// The trial, done as an outside author does it: a family that
// copies a submitted value into its report, yet passes its own corpus,
// was served by a default `assay serve` with only a warning (leaks=15),
// signing reports that carry the caller's strings. Now the host's custody
// check at launch stops it on that host: /readyz names it stopped with
// the reason, its routes answer 503 service_stopped, the log says why at
// ERROR, and the authors' kit (StartHost) fails on it. The same example
// family without the change, started the same way, is served.
//
// The leaky family is the SDK's example family with one change: the
// string value of any top-level request member it does not know
// (anything but declared_format_id and record, which the example already
// ignores rather than refuses) is copied into its report as
// extra_members. Its corpus sends no such member, so every case's answer
// is what the corpus expects; the canary's planting adds a member (name
// and value the canary) to every object, and that value comes back.
func TestALeakingFamilyIsNotServed(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("needs the go command")
	}
	sdkDir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	assay := assayBinary(t, filepath.Dir(sdkDir))
	mod := leakyModule(t, sdkDir)

	// the author's own tests first: the unmodified example's corpus passes
	// in process, and the leaky one passes its corpus while the custody
	// check of the same kit finds the echo
	out := goIn(t, mod, "test", "-count=1", "-v", "./family/...", "./leaky/...")
	for _, pass := range []string{"--- PASS: TestTheCorpusInProcess", "--- PASS: TestTheCorpusPassesAndTheCanaryComesBack"} {
		if !strings.Contains(out, pass) {
			t.Errorf("the outside module's tests did not all pass (%s missing):\n%s", pass, out)
		}
	}
	leaky, control := t.TempDir(), t.TempDir()
	adapter := filepath.Join(t.TempDir(), "assay-adapter-example-lines")
	goIn(t, mod, "build", "-o", adapter, "./adapter")
	goIn(t, mod, "build", "-o", filepath.Join(leaky, "assay-example-count"), "./leaky")
	goIn(t, mod, "build", "-o", filepath.Join(control, "assay-example-count"), "./family")
	// the family's corpus sends example-lines records: each host needs
	// the adapter beside the family
	for _, dir := range []string{leaky, control} {
		if err := copyFile(adapter, filepath.Join(dir, "assay-adapter-example-lines")); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(sdkDir, "examples/family/count/corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases corpus.Corpus
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	first := -1
	for i, c := range cases.Cases {
		if c.Expect.Status == http.StatusOK && len(c.Request.Body) > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("the example corpus has no 200 case with a JSON body")
	}
	firstCase := cases.Cases[first]

	t.Run("leaky", func(t *testing.T) {
		h := serveDefault(t, assay, leaky)
		status, r := h.readyz(t)
		svc, ok := r.service("example-count")
		if status != http.StatusServiceUnavailable || r.Ready || !ok {
			t.Fatalf("/readyz: %d, want 503 naming example-count\n%s", status, h.log.String())
		}
		if svc.State != "stopped" || !svc.Local || !strings.HasPrefix(svc.Reason, "custody check failed at launch: a planted value came back ") {
			t.Errorf("example-count on /readyz: %+v, want stopped on this host for its custody check", svc)
		}
		// the reason counts what came back and shows the first trace: a
		// planted-member request whose report printed it at the echo
		m := regexp.MustCompile(`came back (\d+) times \(first: (.*)\)$`).FindStringSubmatch(svc.Reason)
		if m == nil {
			t.Fatalf("reason %q: no count and first trace", svc.Reason)
		}
		n, _ := strconv.Atoi(m[1])
		if n == 0 || !strings.Contains(m[2], "planted as members") || !strings.Contains(m[2], "$.extra_members[0]") {
			t.Errorf("reason %q: want a count and the planted member found at $.extra_members[0]", svc.Reason)
		}

		// its routes are refused before the family is reached, with the
		// same reason; the pre-check and the op alike
		for _, c := range cases.Cases {
			if c.Expect.Status != http.StatusOK {
				continue
			}
			status, answer := h.post(t, c.Request.Path, c.Request.Body)
			var a struct {
				Kind  string `json:"kind"`
				Error struct {
					Code, Reason string
				} `json:"error"`
				MessageCount *int `json:"message_count"`
			}
			if err := json.Unmarshal(answer, &a); err != nil || status != http.StatusServiceUnavailable || a.Kind != "refusal" ||
				a.Error.Code != "service_stopped" || a.Error.Reason != svc.Reason || a.MessageCount != nil {
				t.Errorf("corpus case %s, sent to the stopped family: %d %s", c.Name, status, answer)
			}
		}

		// the log: the corpus passed whole, then the custody check logged
		// one ERROR line per trace (the reason's count, as few as there
		// are: at most 50 are logged) and a summary that adds up to it
		log := h.log.String()
		passed := regexp.MustCompile(`corpus passed at launch: service=example-count cases=(\d+) passed=(\d+)`).FindStringSubmatch(log)
		if passed == nil || passed[1] != passed[2] || passed[1] != strconv.Itoa(len(cases.Cases)) {
			t.Errorf("the log does not say the whole corpus (%d cases) passed at launch: %q\n%s", len(cases.Cases), passed, log)
		}
		lines := 0
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, "family answers print caller-chosen strings: not served") {
				lines++
				if !strings.Contains(l, "[ERROR]") || !strings.Contains(l, "service=example-count") {
					t.Errorf("a custody line not at ERROR for example-count: %s", l)
				}
			}
		}
		if lines != min(n, 50) {
			t.Errorf("%d custody lines in the log, the reason counts %d:\n%s", lines, n, log)
		}
		sum := regexp.MustCompile(`custody check at launch: service=example-count planted_requests=\d+ leaks=(\d+) surfaces=(\d+)`).FindStringSubmatch(log)
		if sum == nil {
			t.Fatalf("no custody summary for example-count in the log:\n%s", log)
		}
		leaks, _ := strconv.Atoi(sum[1])
		surfaces, _ := strconv.Atoi(sum[2])
		if leaks == 0 || leaks+surfaces != n {
			t.Errorf("custody summary leaks=%d surfaces=%d, the reason counts %d", leaks, surfaces, n)
		}
		if strings.Contains(log, "--canary-proof refuses them") {
			t.Errorf("the log still words the leak as a warning a stricter launch would refuse:\n%s", log)
		}
	})

	// the kit: an author's StartHost fails on the stopped family at once
	t.Run("leaky under StartHost", func(t *testing.T) {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			plugintest.StartHost(f, plugintest.HostOptions{Assay: assay,
				Plugins: []string{filepath.Join(leaky, "assay-example-count"), filepath.Join(leaky, "assay-adapter-example-lines")}})
		}()
		<-done
		f.mu.Lock()
		defer f.mu.Unlock()
		if !strings.Contains(f.msg, "the host stopped service example-count: custody check failed at launch") {
			t.Errorf("StartHost's failure does not name the stop:\n%.3000s", f.msg)
		}
	})

	t.Run("control", func(t *testing.T) {
		h := serveDefault(t, assay, control)
		status, r := h.readyz(t)
		svc, ok := r.service("example-count")
		if status != http.StatusOK || !r.Ready || !ok || svc.State != "serving" || svc.Local || svc.Reason != "" {
			t.Fatalf("/readyz: %d %+v, want 200 with example-count serving\n%s", status, svc, h.log.String())
		}
		status, answer := h.post(t, firstCase.Request.Path, firstCase.Request.Body)
		if status != http.StatusOK || bytes.Contains(answer, []byte("service_stopped")) {
			t.Errorf("corpus case %s: %d %s", firstCase.Name, status, answer)
		}
		if log := h.log.String(); strings.Contains(log, "family answers print caller-chosen strings") ||
			!strings.Contains(log, "custody check at launch: service=example-count ") {
			t.Errorf("the unmodified family's custody check, in the log:\n%s", log)
		}
	})
}

// leakyModule is an outside author's module: the example adapter, the
// example family as it ships (family/), and the same family with the echo
// (leaky/), each with its tests.
func leakyModule(t *testing.T, sdkDir string) string {
	t.Helper()
	return writeModule(t, sdkDir, map[string]string{
		"adapter/adapter.go":               "examples/adapter/adapter.go",
		"adapter/lines/lines.go":           "examples/adapter/lines/lines.go",
		"adapter/lines/record.schema.json": "examples/adapter/lines/record.schema.json",
		"family/main.go":                   "examples/family/main.go",
		"family/count/count.go":            "examples/family/count/count.go",
		"family/count/corpus_test.go":      "examples/family/count/corpus_test.go",
		"family/count/criteria.json":       "examples/family/count/criteria.json",
		"family/count/corpus.json":         "examples/family/count/corpus.json",
		"leaky/main.go":                    "examples/family/main.go",
		"leaky/count/count.go":             "examples/family/count/count.go",
		"leaky/count/criteria.json":        "examples/family/count/criteria.json",
		"leaky/count/corpus.json":          "examples/family/count/corpus.json",
		"leaky/count/leak_test.go":         leakyCorpusTest,
	}, func(name, body string) string {
		if strings.HasPrefix(name, "leaky/") {
			body = strings.ReplaceAll(body, "example.com/plugins/family/", "example.com/plugins/leaky/")
		}
		if name == "leaky/count/count.go" {
			body = withEcho(t, body)
		}
		return body
	})
}

// withEcho is the example family's source with the leak: the values of
// the members it does not know go into its report. Each edit must find
// its place once, so a change to the example fails here, not later.
func withEcho(t *testing.T, src string) string {
	t.Helper()
	for _, e := range []struct{ old, new string }{
		{"\tformat := *body.Format\n", "\tformat := *body.Format\n\textra := extraMembers(req.Body)\n"},
		{"\t\treturn sdk.Report{\n\t\t\tBody:   map[string]any{\"message_count\": len(rec.GetMessages()), \"block_count\": blocks, \"text_bytes\": text},\n",
			"\t\tout := map[string]any{\"message_count\": len(rec.GetMessages()), \"block_count\": blocks, \"text_bytes\": text}\n" +
				"\t\tif len(extra) > 0 {\n\t\t\tout[\"extra_members\"] = extra\n\t\t}\n" +
				"\t\treturn sdk.Report{\n\t\t\tBody:   out,\n"},
	} {
		if strings.Count(src, e.old) != 1 {
			t.Fatalf("the example family's count.go changed: %q is not there once", e.old)
		}
		src = strings.Replace(src, e.old, e.new, 1)
	}
	return src + `
// extraMembers are the string values of the body's top-level members
// other than declared_format_id and record, in name order: a caller's
// words, printed in the report.
func extraMembers(body []byte) []string {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil
	}
	names := make([]string, 0, len(members))
	for name := range members {
		if name != "declared_format_id" && name != "record" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		var s string
		if json.Unmarshal(members[name], &s) == nil {
			out = append(out, s)
		}
	}
	return out
}
`
}

// leakyCorpusTest is the leaky family's own test, in the author's module:
// the kit's in-process corpus run finds every case as the corpus expects
// and only its custody check complains (recorded here instead of failing).
const leakyCorpusTest = `package count

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"example.com/plugins/adapter/lines"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/familytest"
)

// errs keeps what RunCorpus reports as errors; a Fatalf still ends the test.
type errs struct {
	testing.TB
	got []string
}

func (e *errs) Errorf(format string, args ...any) { e.got = append(e.got, fmt.Sprintf(format, args...)) }

func TestTheCorpusPassesAndTheCanaryComesBack(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	e := &errs{TB: t}
	r := familytest.RunCorpus(e, f, corpus, familytest.WithAdapters(sdk.LocalAdapters{"example-lines": lines.Adapter{}}))
	if r.Cases == 0 || r.Passed != r.Cases || len(r.Failures) != 0 {
		t.Errorf("%d of %d cases passed: %q", r.Passed, r.Cases, r.Failures)
	}
	if len(r.Custody.Leaks) == 0 || len(e.got) != len(r.Custody.Leaks) {
		t.Errorf("custody leaks %q, errors %q", r.Custody.Leaks, e.got)
	}
	for _, msg := range e.got {
		if !strings.HasPrefix(msg, "custody: ") || !strings.Contains(msg, "$.extra_members[0]") {
			t.Errorf("an error that is not the echo's custody leak: %s", msg)
		}
	}
	// what the leak is, in a caller's terms: a value it chose, signed into the report
	body := []byte(` + "`" + `{"declared_format_id":"example-lines","record":["x"],"note":"the caller's words"}` + "`" + `)
	c := f.Check(context.Background(), sdk.Request{Route: sdk.Op, Op: "count", Body: body,
		Adapters: sdk.LocalAdapters{"example-lines": lines.Adapter{}}})
	report, _ := familytest.Report(t, c, time.Now)
	if !reflect.DeepEqual(report["extra_members"], []any{"the caller's words"}) {
		t.Errorf("report: %v", report)
	}
}
`

// goIn runs the go command in the outside module, as its author would.
func goIn(t *testing.T, mod string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in a module of its own: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func copyFile(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, raw, 0o755)
}

// served is a default `assay serve` started by hand: StartHost fails a
// test on a stopped family, and this test needs to look at one.
type served struct {
	url string
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveDefault pins the plugins in dir (assay plugins pin), starts
// `assay serve` with payments off and no --canary-proof over a data dir
// of its own, and waits until its start is over (/readyz names nothing
// as starting), whatever its outcome. The host is stopped when t ends.
func serveDefault(t *testing.T, assay, dir string) *served {
	t.Helper()
	var pins, pinErr bytes.Buffer
	pin := exec.Command(assay, "plugins", "pin", "--dir", dir)
	pin.Stdout, pin.Stderr = &pins, &pinErr
	if err := pin.Run(); err != nil {
		t.Fatalf("assay plugins pin: %v\n%s", err, pinErr.String())
	}
	// the config names the plugins relative to its own folder
	cfg := filepath.Join(dir, "assay.hcl")
	if err := os.WriteFile(cfg, pins.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := loopbackAddr(t)
	h := &served{url: "http://" + addr, log: &syncBuffer{}}
	cmd := exec.Command(assay, "serve", "--config", cfg, "--listen", addr, "--data-dir", filepath.Join(t.TempDir(), "var"), "--payments", "off")
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	// a bound on the wait, not a claim about speed: a start that never
	// ends fails here with the host's log
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("the host exited during its start:\n%s", h.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host's start did not end within 60 s:\n%s", h.log.String())
		}
		body, err := h.get("/readyz")
		var r map[string]json.RawMessage
		if err == nil && json.Unmarshal(body, &r) == nil {
			if _, starting := r["starting"]; !starting {
				return h
			}
		}
	}
}

// loopbackAddr is a free port below the kernel's ephemeral range (one in
// it may be taken by an outbound connection before the host binds it).
func loopbackAddr(t *testing.T) string {
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	for port := 10000 + os.Getpid()%(low-10000); ; port++ {
		if port >= low {
			port = 10000
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
}

func (h *served) get(path string) ([]byte, error) {
	resp, err := http.Get(h.url + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// readyzBody is the part of GET /readyz this test reads.
type readyzBody struct {
	Ready    bool            `json:"ready"`
	Services []readyzService `json:"services"`
}

type readyzService struct {
	Service string `json:"service"`
	State   string `json:"state"`
	Reason  string `json:"reason"`
	Local   bool   `json:"local"`
}

func (r readyzBody) service(name string) (readyzService, bool) {
	for _, s := range r.Services {
		if s.Service == name {
			return s, true
		}
	}
	return readyzService{}, false
}

func (h *served) readyz(t *testing.T) (int, readyzBody) {
	t.Helper()
	resp, err := http.Get(h.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readyzBody
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	return resp.StatusCode, r
}

func (h *served) post(t *testing.T, path string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := http.Post(h.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}
