package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/sdk/membudget"
)

const (
	sdPkg   = "plugins/stream-divergence"
	lcPkg   = "plugins/lifecycle-analytics"
	shPkg   = "plugins/scope-hygiene"
	testPkg = "host/internal/testfamily"
)

type reply struct {
	status int
	header http.Header
	raw    []byte
	json   map[string]any
}

func do(t testing.TB, method, url string, body []byte, header map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(raw, &r.json)
	}
	return r
}

// metricsWith fetches a metrics page until it holds every sample wanted
// (a request is counted as its handler returns, an instant after its
// client has read the answer, which the host flushes first), failing the
// test on each one missing after 5 s.
func metricsWith(t testing.TB, url string, wants ...string) []byte {
	t.Helper()
	var raw []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		raw = do(t, "GET", url, nil, nil).raw
		missing := false
		for _, w := range wants {
			missing = missing || !strings.Contains(string(raw), w)
		}
		if !missing || time.Now().After(deadline) {
			break
		}
	}
	for _, w := range wants {
		if !strings.Contains(string(raw), w) {
			t.Errorf("GET %s lacks %s", url, w)
		}
	}
	return raw
}

func post(t testing.TB, url string, body []byte) reply { return do(t, "POST", url, body, nil) }

func errorCode(r reply) string {
	e, _ := r.json["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// verified checks an answer's signature against the host's published keys.
func verified(t testing.TB, h *testhost.Host, r reply) {
	t.Helper()
	jwks := do(t, "GET", h.URL+"/keys", nil, nil)
	if _, err := signing.Verify(r.raw, jwks.raw); err != nil {
		t.Fatalf("answer does not verify against /keys: %v", err)
	}
}

func sdBody(streamed, reference []string) []byte {
	enc := func(parts []string) []string {
		out := make([]string, len(parts))
		for i, p := range parts {
			out[i] = base64.StdEncoding.EncodeToString([]byte(p))
		}
		return out
	}
	b, _ := json.Marshal(map[string]any{
		"streamed_capture": map[string]any{"chunks": enc(streamed)},
		"reference_output": map[string]any{"chunks": enc(reference)},
	})
	return b
}

func TestStreamDivergenceThroughRealPlugin(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, sdPkg)

	pre := post(t, h.URL+"/stream-divergence/precheck", sdBody([]string{"ab", "cd"}, []string{"abcd"}))
	if pre.status != 200 || pre.json["kind"] != "precheck" || pre.json["assessable"] != true {
		t.Fatalf("precheck: %d %s", pre.status, pre.raw)
	}
	if _, ok := pre.json["byte_equal"]; ok {
		t.Error("the pre-check must not compare")
	}
	verified(t, h, pre)

	// same bytes, different chunking: equal, graded exactly so
	rep := post(t, h.URL+"/stream-divergence/compare", sdBody([]string{"ab", "cd"}, []string{"abcd"}))
	if rep.status != 200 || rep.json["kind"] != "report" || rep.json["byte_equal"] != true {
		t.Fatalf("compare: %d %s", rep.status, rep.raw)
	}
	verified(t, h, rep)
	at, _ := rep.json["issued_at"].(string)
	want := "STREAM-CAPTURE DIVERGENCE — byte-equal: YES · streamed chunks: 2 · reference chunks: 1 · first divergence: NONE · differing spans: 0 — " + at
	if rep.json["verdict_line"] != want || len(at) != len("2026-11-29T15:47:22Z") || !strings.HasSuffix(at, "Z") {
		t.Errorf("verdict line %q (issued_at %q)", rep.json["verdict_line"], at)
	}
	if p, _ := rep.json["payment"].(map[string]any); p["mode"] != "off" {
		t.Errorf("payment member %v", rep.json["payment"])
	}
	for k, v := range map[string]any{"service": "stream-divergence", "op": "compare", "service_version": "1.0.0"} {
		if rep.json[k] != v {
			t.Errorf("%s = %v", k, rep.json[k])
		}
	}

	ref := post(t, h.URL+"/stream-divergence/compare", []byte(`{"streamed_capture":{"chunks":[]}}`))
	if ref.status != 400 || errorCode(ref) != "reference_output_required" || ref.json["kind"] != "refusal" {
		t.Errorf("refusal: %d %s", ref.status, ref.raw)
	}
	verified(t, h, ref)

	// one family loaded: its routes answer at the root too
	if r := post(t, h.URL+"/compare", sdBody([]string{"a"}, []string{"b"})); r.status != 200 || r.json["byte_equal"] != false {
		t.Errorf("root compare: %d", r.status)
	}
	for _, path := range []string{"/stream-divergence/verify", "/anything", "/stream-divergence/precheck/x"} {
		if r := post(t, h.URL+path, nil); r.status != 404 || string(r.raw) != "NOT COVERED" {
			t.Errorf("POST %s: %d %q", path, r.status, r.raw)
		}
	}

	crit := do(t, "GET", h.URL+"/stream-divergence/criteria", nil, nil)
	onDisk, err := os.ReadFile("../../criteria/stream-divergence/criteria.json")
	if err != nil || !bytes.Equal(crit.raw, onDisk) {
		t.Errorf("criteria not served byte for byte (%v)", err)
	}
	if r := do(t, "GET", h.URL+"/healthz", nil, nil); r.status != 200 {
		t.Errorf("healthz %d", r.status)
	}
	cat := do(t, "GET", h.URL+"/", nil, nil)
	if svcs, _ := cat.json["services"].([]any); cat.status != 200 || len(svcs) != 1 {
		t.Errorf("catalog: %s", cat.raw)
	}
	page := do(t, "GET", h.URL+"/", nil, map[string]string{"Accept": "text/html"})
	if !strings.Contains(string(page.raw), "POST /stream-divergence/compare") {
		t.Errorf("catalog page lacks the paid route")
	}
}

func TestBodyCapCountsRawBytes(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, sdPkg)
	valid := []byte(`{"streamed_capture":{"chunks":[]},"reference_output":{"chunks":[]}}`)
	exact := append(append([]byte{}, valid...), bytes.Repeat([]byte(" "), 262144-len(valid))...)
	if r := post(t, h.URL+"/stream-divergence/compare", exact); r.status != 200 {
		t.Errorf("exactly the cap: %d %s", r.status, r.raw)
	}
	over := append(exact, ' ')
	r := post(t, h.URL+"/stream-divergence/precheck", over)
	e, _ := r.json["error"].(map[string]any)
	if r.status != 413 || e["code"] != "body_bytes_cap" || e["cap"] != float64(262144) {
		t.Errorf("one over: %d %s", r.status, r.raw)
	}
	verified(t, h, r)
	// without a declared length (chunked), the cap is the same
	for _, c := range []struct {
		route string
		body  []byte
		want  int
	}{{"compare", exact, 200}, {"precheck", over, 413}} {
		req, _ := http.NewRequest("POST", h.URL+"/stream-divergence/"+c.route, io.MultiReader(bytes.NewReader(c.body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.ContentLength != 0 || resp.StatusCode != c.want {
			t.Errorf("chunked %d bytes: %d, want %d (declared length %d)", len(c.body), resp.StatusCode, c.want, req.ContentLength)
		}
	}
}

// A body at the cap reaches the family whole, inline on the gRPC stream
// (raised message limits) and as a shared file (the Linux default). As a
// shared file it goes from the connection straight into the file: the
// host's heap never holds a copy (inline, it holds one).
func TestFiveMiBBodyCrossesTheBoundary(t *testing.T) {
	const cap5 = 5 << 20
	prefix := []byte(`{"pad":"`)
	body := append(append(prefix, bytes.Repeat([]byte("x"), cap5-len(prefix)-2)...), '"', '}')
	for _, inline := range []bool{true, false} {
		sharing := !inline && runtime.GOOS == "linux"
		h := testhost.Start(t, testhost.Options{InlineFamilies: inline}, testPkg)
		for _, route := range []string{"precheck", "measure"} {
			// what this process allocates during the request: the host's
			// share (the client sends from body and reads a small reply)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := post(t, h.URL+"/test-family/"+route, body)
			runtime.ReadMemStats(&after)
			if r.status != 200 || r.json["body_bytes"] != float64(cap5) {
				t.Fatalf("%s of 5 MiB (inline %v): %d %.200s", route, inline, r.status, r.raw)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; sharing && allocated >= cap5/2 || !sharing && allocated < cap5 {
				t.Errorf("%s of 5 MiB (shared %v): the host allocated %d bytes", route, sharing, allocated)
			}
		}
		shared := h.Families["test-family"].SharedBodiesSent()
		if want := int64(2); !sharing {
			if shared != 0 {
				t.Errorf("inline: %d bodies shared", shared)
			}
		} else if shared != want {
			t.Errorf("%d bodies shared, want %d", shared, want)
		}
		if r := post(t, h.URL+"/test-family/precheck", append(body, ' ')); r.status != 413 {
			t.Errorf("5 MiB + 1: %d", r.status)
		}
		// the same one byte over, without a declared length
		req, _ := http.NewRequest("POST", h.URL+"/test-family/precheck", io.MultiReader(bytes.NewReader(body), strings.NewReader(" ")))
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 413 {
			t.Errorf("5 MiB + 1, chunked: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		if n := testhost.SharedBodiesSettled("self"); n != 0 {
			t.Errorf("the host holds %d shared bodies after every request answered", n)
		}
	}
}

// A client that declares a body and goes away halfway through it gets no
// answer, and leaves nothing behind: no shared file, no session; the host
// serves the next request.
func TestBodyCutShortLeavesNothing(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, testPkg)
	addr := strings.TrimPrefix(h.URL, "http://")
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /test-family/precheck HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 1<<20)
		if _, err := c.Write(bytes.Repeat([]byte(" "), 300<<10)); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for testhost.OpenSharedBodies("self") != 0 || h.Families["test-family"].OpenBodies() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the clients went away the host holds %d shared bodies and %d sessions' bodies",
				testhost.OpenSharedBodies("self"), h.Families["test-family"].OpenBodies())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// a body large enough to cross as a shared file (pluginhost.SharedBodyMin)
	next := []byte(`{"pad":"` + strings.Repeat("x", pluginhost.SharedBodyMin) + `"}`)
	if r := post(t, h.URL+"/test-family/measure", next); r.status != 200 {
		t.Fatalf("the next request: %d %s", r.status, r.raw)
	}
	if shared := h.Families["test-family"].SharedBodiesSent(); runtime.GOOS == "linux" && shared != 1 {
		t.Errorf("%d bodies reached the family, want only the last request's", shared)
	}
}

// A family plugin's soft memory limit follows the requests it is working
// on (sdk/membudget): during a request of n bytes it is the process's idle
// base plus max(FamilyPerByte·n, FamilyFloor), so a 1 MiB request sits on
// the floor and a 5 MiB request above it. An operator's GOMEMLIMIT
// replaces it.
func TestPluginMemoryLimitFollowsTheBody(t *testing.T) {
	limitDuring := func(h *testhost.Host, size int) float64 {
		t.Helper()
		prefix := `{"memory_limit":true,"pad":"`
		body := prefix + strings.Repeat("x", size-len(prefix)-2) + `"}`
		r := post(t, h.URL+"/test-family/precheck", []byte(body))
		limit, ok := r.json["memory_limit"].(float64)
		if r.status != 200 || !ok {
			t.Fatalf("%d-byte pre-check: %d %.200s", size, r.status, r.raw)
		}
		return limit
	}
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, testPkg)
	small, large := limitDuring(h, 1<<20), limitDuring(h, 5<<20)
	if small < membudget.FamilyFloor || small >= 1<<40 {
		t.Errorf("limit during a 1 MiB request: %.0f", small)
	}
	if want := 5<<20*membudget.FamilyPerByte - membudget.FamilyFloor; large-small != float64(want) {
		t.Errorf("limits during 1 and 5 MiB requests: %.0f and %.0f, %.0f apart, want %d", small, large, large-small, want)
	}
	h = testhost.Start(t, testhost.Options{NoFreeTier: true, Env: []string{"GOMEMLIMIT=1GiB"}}, testPkg)
	if got := limitDuring(h, 5<<20); got != 1<<30 {
		t.Errorf("with the operator's GOMEMLIMIT=1GiB: limit %.0f", got)
	}
}

func TestPluginKilledWhileRequestsAreInFlight(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, testPkg)
	fam := h.Families["test-family"]
	pid := fam.PID()
	const inflight = 4
	var wg sync.WaitGroup
	replies := make([]reply, inflight)
	for i := range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = post(t, h.URL+"/test-family/measure", []byte(`{"sleep_ms":5000}`))
		}()
	}
	// every request is measuring on this process before the kill (one
	// killed while validating would be retried on the restarted plugin)
	for i := 0; fam.Measuring() < inflight; i++ {
		if i == 1000 {
			t.Fatalf("%d of %d requests reached the measurement", fam.Measuring(), inflight)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := 0; fam.Measuring() != 0; i++ { // sessions close after the answers
		if i == 1000 {
			t.Fatalf("%d requests still counted as measuring", fam.Measuring())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, r := range replies {
		if r.status != 503 || errorCode(r) != "plugin_unavailable" || r.header.Get("Retry-After") == "" {
			t.Errorf("in-flight request %d: %d %s", i, r.status, r.raw)
		}
		verified(t, h, r)
	}
	// the next request works, after exactly one restart
	// a body large enough to cross as a shared file (pluginhost.SharedBodyMin)
	next := []byte(`{"pad":"` + strings.Repeat("x", pluginhost.SharedBodyMin) + `"}`)
	if r := post(t, h.URL+"/test-family/measure", next); r.status != 200 {
		t.Fatalf("after restart: %d %s\n%s", r.status, r.raw, h.Log.String())
	}
	if n := fam.Restarts(); n != 1 {
		t.Errorf("restarts = %d, want 1", n)
	}
	if m := do(t, "GET", h.URL+"/metrics", nil, nil); !strings.Contains(string(m.raw), `assay_plugin_restarts_total{kind="family",name="test-family"} 1`) ||
		!strings.Contains(string(m.raw), `assay_refusals_total{code="plugin_unavailable",service="test-family"} 4`) {
		t.Error("the restart and the four 503s are not in /metrics")
	}
	if fam.PID() == pid {
		t.Error("plugin was not replaced")
	}
}

func TestCallDeadline(t *testing.T) {
	h := testhost.Start(t, testhost.Options{CallTimeout: 300 * time.Millisecond}, testPkg)
	r := post(t, h.URL+"/test-family/measure", []byte(`{"sleep_ms":5000}`))
	if r.status != 503 || errorCode(r) != "deadline_exceeded" {
		t.Fatalf("deadline: %d %s", r.status, r.raw)
	}
	// a body large enough to cross as a shared file (pluginhost.SharedBodyMin)
	next := []byte(`{"pad":"` + strings.Repeat("x", pluginhost.SharedBodyMin) + `"}`)
	if r := post(t, h.URL+"/test-family/measure", next); r.status != 200 {
		t.Errorf("next request: %d", r.status)
	}
}

func TestSelfCheckWithholdsAForbiddenReport(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, testPkg)
	r := post(t, h.URL+"/test-family/measure", []byte(`{"forbidden_word":true}`))
	if r.status != 500 || errorCode(r) != "self_check_failed" {
		t.Fatalf("self-check: %d %s", r.status, r.raw)
	}
	if bytes.Contains(r.raw, []byte("score")) {
		t.Error("the withheld report leaked into the answer")
	}
}

func TestLedgerLineBreakingTheClosedListIsNeverWritten(t *testing.T) {
	h := testhost.Start(t, testhost.Options{}, testPkg)
	r := post(t, h.URL+"/test-family/measure", []byte(`{"bad_ledger":true}`))
	if r.status != 500 || errorCode(r) != "self_check_failed" {
		t.Fatalf("bad ledger fields: %d %s", r.status, r.raw)
	}
	// a body large enough to cross as a shared file (pluginhost.SharedBodyMin)
	next := []byte(`{"pad":"` + strings.Repeat("x", pluginhost.SharedBodyMin) + `"}`)
	if r := post(t, h.URL+"/test-family/measure", next); r.status != 200 {
		t.Fatalf("good report: %d", r.status)
	}
	lines := h.Lines(t, 1)
	if len(lines) != 1 || lines[0].FamilyFields != `{"op":"measure"}` || !lines[0].House || lines[0].PriceUSDCUnits != 0 {
		t.Fatalf("ledger %+v: want exactly the good report's line", lines)
	}
	m := metricsWith(t, h.URL+"/test-family/metrics",
		`assay_ledger_refused_lines_total{service="test-family"} 1`,
		`assay_self_check_failures_total{rule="ledger_line_undeclared_key",service="test-family"} 1`,
		`assay_calls_total{service="test-family",tier="paid"} 1`)
	if strings.Contains(string(m), "stream-divergence") {
		t.Error("a service's metrics carry another service's samples")
	}
}
