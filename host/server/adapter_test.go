package server_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/sdk/membudget"
	"github.com/assay-audit/assay/sdk/wire"
)

const adapterPkg = "host/internal/testadapter"

// A family reaches an adapter plugin only through the host: the host offers
// its Host service over the family's broker and routes by format id.
func TestAdaptersAreReachedThroughTheHost(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: []string{adapterPkg}, CallTimeout: 10 * time.Second}, testPkg)
	url := h.URL + "/test-family/measure"

	r := post(t, url, []byte(`{"adapt":"test-format","record":"hello"}`))
	if r.status != 200 || r.json["adapted_level"] != "L0" || r.json["adapted_text_bytes"] != float64(5) {
		t.Fatalf("adapted: %d %s", r.status, r.raw)
	}
	if r := post(t, url, []byte(`{"adapt":"test-format","record":"refuse"}`)); r.json["adapt_refusal"] != "record_does_not_parse_as_declared_format" {
		t.Errorf("adapter refusal: %s", r.raw)
	}
	// a format the family's criteria do not list is refused by the host,
	// whatever adapters are installed
	if r := post(t, url, []byte(`{"adapt":"unlisted-format","record":"x"}`)); r.json["adapt_refusal"] != "format_not_accepted" {
		t.Errorf("unlisted format: %s", r.raw)
	}
	// listed but no adapter installed: the measurement cannot run (503)
	if r := post(t, url, []byte(`{"adapt":"other-format","record":"x"}`)); r.status != 503 || errorCode(r) != "plugin_unavailable" {
		t.Errorf("no adapter: %d %s", r.status, r.raw)
	}
	// the SDK's family asks for json_string spans, the host passes the ask
	// on, and the family's SDK decodes the span the adapter answers:
	// "x\ny" (6 bytes in the record) is 3 bytes of text
	if r := post(t, url, []byte(`{"adapt":"test-format","record":"\"x\\ny\""}`)); r.status != 200 ||
		r.json["adapted_role"] != "json_string_spans=true" || r.json["adapted_text_bytes"] != float64(3) {
		t.Errorf("json_string span: %d %s", r.status, r.raw)
	}
	// a 5 MiB record crosses family -> host -> adapter -> host -> family
	// through the brokered Host service's raised limits
	const cap5 = 5 << 20
	prefix := []byte(`{"adapt":"test-format","pad":"`)
	big := append(append(prefix, bytes.Repeat([]byte("y"), cap5-len(prefix)-2)...), '"', '}')
	if r := post(t, url, big); r.status != 200 || r.json["adapted_text_bytes"] != float64(cap5-len(prefix)-2) {
		t.Fatalf("5 MiB through the adapter path: %d %.300s", r.status, r.raw)
	}
	// an adapter that dies: 502 adapter_failed (crashed) for that
	// request, restarted for the next
	if r := post(t, url, []byte(`{"adapt":"test-format","record":"crash"}`)); r.status != 502 || errorCode(r) != "adapter_failed" {
		t.Errorf("adapter crash: %d %s", r.status, r.raw)
	}
	r = doPast503(t, url, []byte(`{"adapt":"test-format","record":"again"}`), nil)
	if r.status != 200 || r.json["adapted_text_bytes"] != float64(5) {
		t.Fatalf("after the adapter restarted: %d %s", r.status, r.raw)
	}
	if n := h.Adapters[0].Restarts(); n != 1 {
		t.Errorf("adapter restarts %d", n)
	}
}

// An adapter plugin's soft memory limit follows the record it is adapting
// (sdk/membudget): the idle base plus max(AdapterPerByte·n, AdapterFloor)
// for an n-byte record, so a 1 MiB record sits on the floor and a 4.5 MiB
// record above it.
func TestAdapterMemoryLimitFollowsTheRecord(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: []string{adapterPkg}, NoFreeTier: true}, testPkg)
	limitDuring := func(size int) int64 {
		t.Helper()
		record := "memory_limit" + strings.Repeat("x", size-len("memory_limit"))
		r := post(t, h.URL+"/test-family/measure", []byte(`{"adapt":"test-format","record":"`+record+`"}`))
		role, _ := r.json["adapted_role"].(string)
		limit, err := strconv.ParseInt(role, 10, 64)
		if r.status != 200 || err != nil {
			t.Fatalf("%d-byte record: %d %.200s", size, r.status, r.raw)
		}
		return limit
	}
	small, large := limitDuring(1<<20), limitDuring(9<<19)
	if small < membudget.AdapterFloor || small >= 1<<40 {
		t.Errorf("limit while adapting 1 MiB: %d", small)
	}
	if want := int64(9<<19*membudget.AdapterPerByte - membudget.AdapterFloor); large-small != want {
		t.Errorf("limits while adapting 1 and 4.5 MiB: %d and %d, %d apart, want %d", small, large, large-small, want)
	}
}

// An adapter that outlives its call's deadline (the request's, less a
// margin) fails the request as the adapter's: 502 adapter_failed, cause
// deadline, the format named, before the request's own deadline would
// have ended it as nobody's. The host's log says which adapter it was
// and how long the call ran.
func TestAnAdapterPastTheDeadlineIsNamed(t *testing.T) {
	// a deadline long enough that the stalled call surely reaches the
	// adapter before it passes: on a loaded CI machine 1 s once ran out
	// before the family had asked, and the adapter, never called, said
	// nothing
	h := testhost.Start(t, testhost.Options{Adapters: []string{adapterPkg}, CallTimeout: 5 * time.Second, NoFreeTier: true}, testPkg)
	r := post(t, h.URL+"/test-family/measure", []byte(`{"adapt":"test-format","record":"stall"}`))
	if e, _ := r.json["error"].(map[string]any); r.status != 502 || errorCode(r) != "adapter_failed" || e["format"] != "test-format" || e["cause"] != "deadline" {
		t.Fatalf("stalled adapter: %d %s", r.status, r.raw)
	}
	// the lines come from goroutines in two processes, some after the
	// answer: wait for all of them (a bound, not a timing)
	var adapterLine, faultLine, pluginLine map[string]any
	for wait := time.Now().Add(30 * time.Second); time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
		log := h.Log.String()
		if strings.Contains(log, "adapt ended after") && strings.Contains(log, "adapter call failed") && strings.Contains(log, "format adapter fault") {
			break
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(h.Log.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch m["@message"] {
		case "adapter call failed":
			adapterLine = m
		case "format adapter fault: the request failed":
			faultLine = m
		case "adapt ended after its request was given up":
			pluginLine = m
		}
	}
	if ms, _ := adapterLine["ms"].(float64); adapterLine == nil || adapterLine["kind"] != "deadline" || adapterLine["plugin"] != "testadapter" || ms < 1000 {
		t.Errorf("adapter line: %v", adapterLine)
	}
	if faultLine == nil || faultLine["cause"] != "deadline" || faultLine["binary"] != "assay-testadapter" || faultLine["service"] != "test-family" {
		t.Errorf("fault line: %v", faultLine)
	}
	// the adapter's own line, through the host's reduction: its message and
	// numbers (the record's size, never its bytes)
	if bytes, _ := pluginLine["bytes"].(float64); pluginLine == nil || bytes != float64(len("stall")) {
		t.Errorf("the adapter's line: %v", pluginLine)
	}
	metricsWith(t, h.URL+"/metrics", `assay_adapter_faults_total{cause="deadline",format="test-format"} 1`)
}

// Work that never looks at its context (the runaway a crafted input could
// find in an engine) is answered 503 at the deadline, and once it outlives
// the request by the plugin's grace the plugin process ends itself: the
// host restarts it and the next request is served, so the runaway costs
// the grace, not as long as it runs.
func TestARunawayRequestEndsItsPlugin(t *testing.T) {
	h := testhost.Start(t, testhost.Options{CallTimeout: time.Second, NoFreeTier: true,
		Env: []string{wire.OverrunEnv + "=300ms"}}, testPkg)
	url := h.URL + "/test-family/measure"
	if r := post(t, url, []byte(`{"spin_ms":60000}`)); r.status != 503 || errorCode(r) != "deadline_exceeded" {
		t.Fatalf("runaway: %d %s", r.status, r.raw)
	}
	fam := h.Families["test-family"]
	for wait := time.Now().Add(20 * time.Second); fam.Restarts() == 0 && time.Now().Before(wait); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := fam.Restarts(); n != 1 {
		t.Fatalf("the family restarted %d times, want 1", n)
	}
	if r := doPast503(t, url, []byte(`{}`), nil); r.status != 200 {
		t.Fatalf("after the restart: %d %s", r.status, r.raw)
	}
	if !strings.Contains(h.Log.String(), "outlived its caller by the grace") {
		t.Error("the plugin's line is not in the host's log")
	}
}

// An adapter's wrong answer is the adapter's fault, named as such: the
// family never sees it; the request gets 502 adapter_failed (nothing
// charged, no Retry-After) with the format and the cause; the log names
// the adapter, its binary and version and the cause, never a byte of the
// record; a metric counts it by format and cause; the service is never
// stopped, and however many faults come in a row the next good record is
// served.
func TestAnAdaptersFaultIsNamedAndNeverStopsTheService(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: []string{adapterPkg}, CallTimeout: 10 * time.Second, NoFreeTier: true}, testPkg)
	url := h.URL + "/test-family/measure"
	bad := map[string]string{"panic": "failed", "empty": "empty", "level9": "level", "span-out": "span", "negative": "count"}
	order := []string{"panic", "empty", "level9", "span-out"}
	for _, rec := range order {
		r := post(t, url, []byte(`{"adapt":"test-format","record":"`+rec+`"}`))
		e, _ := r.json["error"].(map[string]any)
		if r.status != 502 || errorCode(r) != "adapter_failed" || e["format"] != "test-format" || e["cause"] != bad[rec] {
			t.Errorf("record %q: %d %s", rec, r.status, r.raw)
		}
	}
	const inARow = 2 * pluginhost.FaultingAt
	for i := 0; i < inARow; i++ {
		if r := post(t, url, []byte(`{"adapt":"test-format","record":"negative"}`)); errorCode(r) != "adapter_failed" {
			t.Fatalf("fault %d: %d %s", i, r.status, r.raw)
		}
	}
	if r := post(t, url, []byte(`{"adapt":"test-format","record":"hello"}`)); r.status != 200 || r.json["adapted_level"] != "L0" {
		t.Fatalf("a good record after %d faults: %d %s", len(order)+inARow, r.status, r.raw)
	}

	var faults []map[string]any
	panicked, panicLine := "", 0.0
	for _, line := range strings.Split(strings.TrimSpace(h.Log.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch m["@message"] {
		case "format adapter fault: the request failed":
			faults = append(faults, m)
		case "adapter panicked":
			// the plugin's own line: where, never what
			panicked, _ = m["panic_function"].(string)
			panicLine, _ = m["panic_line"].(float64)
		}
	}
	if len(faults) != len(order)+inARow {
		t.Fatalf("%d fault lines:\n%s", len(faults), h.Log.String())
	}
	for i, f := range faults {
		if f["adapter"] != "testadapter" || f["binary"] != "assay-testadapter" || f["version"] != "0.0.1" || f["format"] != "test-format" || f["detail"] == "" {
			t.Errorf("fault line %d: %v", i, f)
		}
	}
	if panicked != "main.adapter.Adapt" || panicLine == 0 || strings.Contains(h.Log.String(), "an adapter bug") {
		t.Errorf("the panic's site %q line %v (its value must not be logged)", panicked, panicLine)
	}
	if d, _ := faults[3]["detail"].(string); d != "message 1 block 1: a text span ending at byte 102 of a 8-byte record" {
		t.Errorf("the span's detail: %q", d)
	}
	m := do(t, "GET", h.URL+"/metrics", nil, nil)
	for cause, want := range map[string]int{"failed": 1, "empty": 1, "level": 1, "span": 1, "count": inARow} {
		series := `assay_adapter_faults_total{cause="` + cause + `",format="test-format"} ` + strconv.Itoa(want)
		if !strings.Contains(string(m.raw), series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}
