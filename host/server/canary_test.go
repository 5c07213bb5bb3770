package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/canaryproof"
	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
)

// canary is a unique string planted in every submitted field, with every
// form it could leak in (canaryproof: itself, its base64 and its SHA-256,
// and those of every byte string added).
type canary struct {
	*canaryproof.Canary
	value string
}

func newCanary(t *testing.T) canary {
	c, err := canaryproof.New()
	if err != nil {
		t.Fatal(err)
	}
	return canary{Canary: c, value: c.Value}
}

// add registers a submitted byte string and its derived forms.
func (c canary) add(label string, b []byte) { c.Add(label, b) }

func (c canary) find(t *testing.T, surface string, data []byte) {
	t.Helper()
	for _, form := range c.Find(data) {
		t.Errorf("canary (%s) found in %s", form, surface)
	}
}

func TestCanaryNeverLeaks(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) { canaryRun(t, kind) })
	}
}

func canaryRun(t *testing.T, kind string) {
	spec, _ := storetest.Spec(t, kind)
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch)
	c := newCanary(t)
	clock := &steppingClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), step: 6 * time.Second}
	h := testhost.Start(t, testhost.Options{Env: []string{"TMPDIR=" + scratch}, CallTimeout: 5 * time.Second, Now: clock.Now, Store: spec, Adapters: caAdapters}, sdPkg, testPkg, lcPkg, shPkg, caPkg)

	artefact := []byte("stream " + c.value + " end")
	other := []byte("stream " + c.value + " END")
	c.add("artefact", artefact)
	c.add("other artefact", other)
	b64 := base64.StdEncoding.EncodeToString
	bodies := 0
	sd := func(streamed, reference []any, extra map[string]any) []byte {
		m := map[string]any{
			"streamed_capture": map[string]any{"chunks": streamed, c.value: c.value},
			"reference_output": map[string]any{"chunks": reference},
			c.value:            c.value,
		}
		for k, v := range extra {
			m[k] = v
		}
		body, _ := json.Marshal(m)
		bodies++
		c.add(fmt.Sprintf("body %d", bodies), body)
		return body
	}
	good := sd([]any{b64(artefact[:9]), b64(artefact[9:])}, []any{b64(other)}, map[string]any{"caller": c.value})
	wallet := sd([]any{b64(artefact)}, []any{b64(other)}, map[string]any{"caller": "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"})
	// lifecycle-analytics: the canary as challenge ids, buyer fields,
	// unknown members, malformed timestamps and as_of
	lc := func(asOf string, lines ...string) []byte {
		b := `{"log":[` + strings.Join(lines, ",") + `],"` + c.value + `":"` + c.value + `"`
		if asOf != "" {
			b += `,"as_of":"` + asOf + `"`
		}
		return []byte(b + "}")
	}
	lcLine := func(id, extra string) string {
		return `{"challenge_id":"` + id + `","issued_at":"2026-11-29T10:00:00Z","expires_at":"2026-11-29T10:05:00Z","payer":"` + c.value + `","wallet":"` + c.value + `"` + extra + `}`
	}
	lcGood := lc("2026-11-29T12:00:00Z", lcLine(c.value, `,"used_at":null`), lcLine(c.value+"2", ""), lcLine(c.value, ""),
		`{"challenge_id":"x","issued_at":"`+c.value+`","expires_at":"2026-11-29T10:05:00Z"}`)
	// scope-hygiene: the canary as content (text and submitted hash),
	// sources, metadata, manifest entries and unknown members; record ids
	// and scopes are printed by design, so they stay plain
	shRec := func(id, user string) string {
		return `{"id":"` + id + `","user_id":"` + user + `","content_text":"` + c.value + `","content_hash":"` + c.value + `","source":"` + c.value +
			`","metadata":{"note":"` + c.value + `"},"` + c.value + `":1}`
	}
	sh := []byte(`{"family":"mem0","form":"full_text","manifest":{"global_content_keys":["` + c.value + `x"],"private_scopes":["` + c.value + `"]},"records":[` +
		shRec("r1", "alice") + `,` + shRec("r2", "bob") + `,` + shRec("r3", "bob") + `]}`)
	shHash := bytes.Replace(sh, []byte(`"form":"full_text"`), []byte(`"form":"hash_only"`), 1)
	// context-audit: the canary in message text, tool arguments, tool
	// results and tool names, through each adapter
	letta := map[string]any{"agents": []any{map[string]any{
		"messages": []any{
			map[string]any{"id": "m0", "role": "system", "content": []any{map[string]any{"type": "text", "text": "system " + c.value}}},
			map[string]any{"id": "m1", "role": "assistant", "content": []any{}, "tool_calls": []any{map[string]any{"id": "c1",
				"function": map[string]any{"name": c.value, "arguments": `{"q":"` + c.value + `"}`}}}},
			map[string]any{"id": "m2", "role": "tool", "tool_call_id": "c1", "content": []any{map[string]any{"type": "text", "text": "result " + c.value}},
				"tool_returns": []any{map[string]any{"func_response": "other " + c.value}}},
		},
		"in_context_message_ids": []string{"m0", "m1", "m2"}}},
		"tools": []any{map[string]any{"id": "t", "name": c.value, "json_schema": map[string]any{"name": c.value}}}}
	anth := []any{map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "name": c.value, "input": map[string]any{"q": c.value}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "content": c.value}}}}
	gen := map[string]any{"messages": []any{map[string]any{"role": c.value, "kind": c.value, "name": c.value, "text": c.value}}}
	// a report prints P-OTHER raw values (the criteria require it), so the
	// paid generic report carries the canary in names, texts and stated
	// counts only; the raw-value exception is checked on its own below
	genNamed := map[string]any{"messages": []any{
		map[string]any{"role": "user", "text": c.value + " " + c.value + " " + c.value, "stated_tokens": 3},
		map[string]any{"role": "assistant", "kind": "tool_call", "name": c.value, "has_args": true, "text": `{"q":"` + c.value + `"}`},
		map[string]any{"role": "tool", "kind": "tool_result", "name": c.value, "text": c.value}},
		"tool_schemas": []any{map[string]any{"name": c.value, "text": c.value}}}
	type call struct {
		name, path string
		body       []byte
		status     int
	}
	calls := []call{
		{"precheck, canary as caller", "/stream-divergence/precheck", good, 400},
		{"precheck assessable", "/stream-divergence/precheck", wallet, 200},
		{"compare report", "/stream-divergence/compare", good, 200},
		{"compare equal", "/stream-divergence/compare", sd([]any{b64(artefact)}, []any{b64(artefact)}, nil), 200},
		{"root compare", "/compare", good, 404}, // two families loaded: no root routes
		{"chunk not base64", "/stream-divergence/precheck", sd([]any{c.value}, []any{}, nil), 400},
		{"chunk not string", "/stream-divergence/compare", sd([]any{map[string]any{c.value: 1}}, []any{}, nil), 400},
		{"reference missing", "/stream-divergence/compare", []byte(`{"streamed_capture":{"chunks":["` + b64(artefact) + `"]},"` + c.value + `":1}`), 400},
		{"not an object", "/stream-divergence/precheck", []byte(`["` + c.value + `"]`), 400},
		{"not json", "/stream-divergence/compare", []byte(c.value), 400},
		{"body over cap", "/stream-divergence/compare", bytes.Repeat([]byte(c.value), 262144/len(c.value)+1), 413},
		{"uncovered op", "/stream-divergence/" + c.value, good, 404},
		{"could not measure", "/test-family/measure", []byte(`{"could_not_measure":true,"pad":"` + c.value + `"}`), 422},
		{"test family refusal", "/test-family/measure", []byte(`{"refuse":true,"pad":"` + c.value + `"}`), 400},
		{"panic in check", "/test-family/measure", []byte(`{"panic_in_check":"` + c.value + `"}`), 500},
		{"panic in a goroutine", "/test-family/measure", []byte(`{"goroutine_panic":"` + c.value + `"}`), 503},
		{"plugin exits mid-measure", "/test-family/measure", []byte(`{"exit_in_measure":true,"pad":"` + c.value + `"}`), 503},
		{"self-check failure", "/test-family/measure", []byte(`{"forbidden_word":true,"pad":"` + c.value + `"}`), 500},
		{"ledger line refused", "/test-family/measure", []byte(`{"bad_ledger":true,"pad":"` + c.value + `"}`), 500},
		{"test family report", "/test-family/measure", []byte(`{"pad":"` + c.value + `"}`), 200},
		{"test family precheck", "/test-family/precheck", []byte(`{"pad":"` + c.value + `"}`), 200},
		{"free interval", "/test-family/precheck", []byte(`{"pad":"` + c.value + `"}`), 429},
		{"context-audit letta precheck", "/context-audit/precheck", envelope("letta-af", letta), 200},
		{"context-audit anthropic precheck", "/context-audit/precheck", envelope("anthropic-messages", anth), 200},
		{"context-audit generic precheck", "/context-audit/precheck", envelope("generic-message-list", gen), 200},
		{"context-audit letta report", "/context-audit/audit", envelope("letta-af", letta), 200},
		{"context-audit anthropic report", "/context-audit/audit", envelope("anthropic-messages", anth), 200},
		{"context-audit generic report", "/context-audit/audit", envelope("generic-message-list", genNamed), 200},
		{"context-audit could not measure", "/context-audit/audit", envelope("generic-message-list", map[string]any{"messages": []any{map[string]any{"role": "user", "name": c.value, "text": nil}}}), 422},
		{"context-audit R-5", "/context-audit/audit", envelope("generic-message-list", map[string]any{"messages": c.value}), 400},
		{"scope-hygiene precheck", "/scope-hygiene/precheck", sh, 200},
		{"scope-hygiene report", "/scope-hygiene/audit", sh, 200},
		{"scope-hygiene hash-only report", "/scope-hygiene/audit", shHash, 200},
		{"scope-hygiene refusal", "/scope-hygiene/audit", []byte(`{"family":"` + c.value + `","form":"full_text","records":[]}`), 400},
		{"lifecycle precheck", "/lifecycle-analytics/precheck", lcGood, 200},
		{"lifecycle report", "/lifecycle-analytics/analyse", lcGood, 200},
		{"lifecycle as_of invalid", "/lifecycle-analytics/analyse", lc(c.value, lcLine("a", "")), 400},
		{"lifecycle no valid lines", "/lifecycle-analytics/precheck", lc("", `"`+c.value+`"`), 400},
		{"lifecycle not an object", "/lifecycle-analytics/analyse", []byte(`["` + c.value + `"]`), 400},
	}
	for _, k := range calls {
		if k.status == 429 {
			clock.hold(true)
		}
		var r reply
		for try := 0; try < 50; try++ { // a crashed plugin is restarting
			r = do(t, http.MethodPost, h.URL+k.path+"?q="+c.value, k.body, map[string]string{"X-Note": c.value})
			if r.status != 503 || k.status == 503 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if r.status != k.status {
			t.Errorf("%s: status %d, want %d (%.300s)", k.name, r.status, k.status, r.raw)
		}
		clock.hold(false)
		c.find(t, "the answer to "+k.name, r.raw)
		for name, vals := range r.header {
			c.find(t, "header "+name+" of "+k.name, []byte(strings.Join(vals, " ")))
		}
	}
	// every route the server mounts meets the canary: the POST routes
	// above carry it in their bodies, every GET route here carries it in
	// its query and a header (as JSON and as a browser asks), and no
	// answer gives it back
	posted := map[string]bool{}
	for _, k := range calls {
		posted["POST "+k.path] = true
	}
	for _, route := range h.Server.Routes() {
		method, path, _ := strings.Cut(route, " ")
		if path == "/{$}" {
			path = "/"
		}
		if method != http.MethodGet {
			if !posted[route] {
				t.Errorf("the canary never reaches %s", route)
			}
			continue
		}
		// a host that takes no payment publishes no x402 manifest
		want := http.StatusOK
		if path == "/.well-known/x402" {
			want = http.StatusNotFound
		}
		for _, accept := range []string{"application/json", "text/html"} {
			r := do(t, method, h.URL+path+"?q="+c.value+"&"+c.value+"=1", nil, map[string]string{"X-Note": c.value, "Accept": accept})
			if r.status != want {
				t.Errorf("%s (%s): %d", route, accept, r.status)
			}
			c.find(t, "the answer to "+route, r.raw)
			for name, vals := range r.header {
				c.find(t, "header "+name+" of "+route, []byte(strings.Join(vals, " ")))
			}
		}
	}
	for _, path := range []string{"/metrics", "/stream-divergence/metrics", "/test-family/metrics"} {
		m := do(t, "GET", h.URL+path, nil, nil)
		if m.status != 200 || !strings.Contains(string(m.raw), "assay_requests_total") {
			t.Errorf("GET %s: %d", path, m.status)
		}
		c.find(t, "GET "+path, m.raw)
	}
	// a rail label is a log fragment: it groups the per-rail split, which
	// names each group by its first line, and is printed nowhere, the paid
	// report included (ANNEX A-8)
	rail := newCanary(t)
	railBody := []byte(`{"as_of":"2026-11-29T12:00:00Z","log":[{"challenge_id":"a","issued_at":"2026-11-29T10:00:00Z","expires_at":"2026-11-29T10:05:00Z","rail":"` + rail.value + `"}]}`)
	if r := post(t, h.URL+"/lifecycle-analytics/analyse", railBody); r.status != 200 || !strings.Contains(string(r.raw), `"first_line":0`) {
		t.Errorf("the paid report has no rail group: %d", r.status)
	} else {
		rail.find(t, "the lifecycle report", r.raw)
	}
	if r := post(t, h.URL+"/lifecycle-analytics/precheck", railBody); r.status != 200 {
		t.Errorf("rail precheck: %d", r.status)
	} else {
		rail.find(t, "the lifecycle pre-check", r.raw)
	}
	// a P-OTHER raw value is printed in the paid report's raw_values (the
	// criteria require it) and nowhere else
	role := newCanary(t)
	roleBody := envelope("generic-message-list", map[string]any{"messages": []any{map[string]any{"role": role.value, "text": "x"}}})
	if r := post(t, h.URL+"/context-audit/audit", roleBody); r.status != 200 || !strings.Contains(string(r.raw), `"raw_values":["`+role.value+`"]`) {
		t.Errorf("the paid report does not print the P-OTHER raw value: %d", r.status)
	} else {
		var rep map[string]any
		_ = json.Unmarshal(r.raw, &rep)
		for _, f := range rep["factors"].([]any) {
			delete(f.(map[string]any), "rows") // F-1's rows hold the raw values
		}
		out, _ := json.Marshal(rep)
		role.find(t, "the context-audit report outside raw_values", out)
	}
	if r := post(t, h.URL+"/context-audit/precheck", roleBody); r.status != 200 {
		t.Errorf("raw-value precheck: %d", r.status)
	} else {
		role.find(t, "the context-audit pre-check", r.raw)
	}
	rows := dumpTables(t, h.Store)
	rail.find(t, "the store's rows", []byte(rows))
	role.find(t, "the store's rows", []byte(rows))
	role.find(t, "the host log", []byte(h.Log.String()))
	role.find(t, "/metrics", do(t, "GET", h.URL+"/metrics", nil, nil).raw)
	rail.find(t, "the host log", []byte(h.Log.String()))
	rail.find(t, "/metrics", do(t, "GET", h.URL+"/metrics", nil, nil).raw)
	if !strings.Contains(rows, "stream-divergence/v1") || !strings.Contains(rows, "test-family/v1") {
		t.Error("the ledger holds no line from the paid calls above")
	}
	c.find(t, "the "+kind+" store's rows", []byte(rows))
	if err := h.Store.Close(); err != nil { // flush SQLite's WAL into the files searched below
		t.Fatal(err)
	}
	// plugin stderr reached the host log through go-plugin; give it a moment
	time.Sleep(300 * time.Millisecond)
	logText := h.Log.String()
	// every answer above has its request line; c.find below holds them to
	// the same rule as the rest of the log
	if n := len(requestLines(t, logText)); n < len(calls) {
		t.Errorf("%d request lines in the log for %d calls", n, len(calls))
	}
	if !strings.Contains(logText, "plugin panicked") {
		t.Error("the goroutine panic was not reported (reduced) in the host log")
	}
	// the recovered panic in Check: where it began, for the author, and
	// (c.find below) never the value it panicked with
	if !strings.Contains(logText, `"@message":"family panicked"`) || !strings.Contains(logText, `"panic_function":"github.com/assay-audit/assay/host/internal/testfamily/family.(*Family).Check"`) {
		t.Error("the recovered family panic is not logged with its site")
	}
	c.find(t, "the host log", []byte(logText))
	if os.Getenv("DUMPLOG") != "" {
		t.Log(logText)
	}
	// shared bodies are memory, never files on disk; none outlives its request
	for _, pid := range append(h.PIDs(), "self") {
		if n := testhost.SharedBodiesSettled(pid); n != 0 {
			t.Errorf("process %s holds %d shared bodies after every request answered", pid, n)
		}
	}
	for _, dir := range []string{h.DataDir, scratch} {
		_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || info.Size() > 64<<20 || strings.HasPrefix(filepath.Base(path), "assay-") {
				return nil
			}
			data, err := os.ReadFile(path)
			if err == nil {
				c.find(t, "file "+path, data)
			}
			return nil
		})
	}
}

// steppingClock advances by step on every reading, so every free pre-check
// falls outside the previous one's interval, unless held.
type steppingClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
	held bool
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held {
		c.t = c.t.Add(c.step)
	}
	return c.t
}

func (c *steppingClock) hold(h bool) {
	c.mu.Lock()
	c.held = h
	c.mu.Unlock()
}

// dumpTables renders every row of every table in the store as text.
func dumpTables(t *testing.T, st *store.Store) string {
	out, err := st.DumpText(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCanaryNeverLeaksWithPayments runs the paid routes with x402 payments
// on: the 402, a paid report, a refused submission carrying a payment, a
// re-send of the paid report (the answer kept for redelivery), the same
// payment with another submission (409) and past the redelivery window
// (a replay), a crash after the payment check (503 with a delivery
// marker) and its redemption.
func TestCanaryNeverLeaksWithPayments(t *testing.T) {
	c := newCanary(t)
	h := startPaid(t, sdPkg, testPkg)
	artefact := []byte("paid " + c.value)
	c.add("artefact", artefact)
	b64 := base64.StdEncoding.EncodeToString
	body, _ := json.Marshal(map[string]any{
		"streamed_capture": map[string]any{"chunks": []string{b64(artefact)}},
		"reference_output": map[string]any{"chunks": []string{b64(artefact[1:])}},
		"caller":           c.value, c.value: c.value,
	})
	c.add("body", body)
	var answers [][]byte
	keep := func(r reply) {
		answers = append(answers, r.raw)
		for _, v := range r.header {
			answers = append(answers, []byte(strings.Join(v, " ")))
		}
	}
	keep(post(t, h.URL+"/stream-divergence/compare", body)) // 402
	// the discovery documents, built from the 402s, with the canary in
	// the query and a header
	for _, path := range []string{"/.well-known/x402", "/.well-known/api-catalog"} {
		r := do(t, "GET", h.URL+path+"?q="+c.value, nil, map[string]string{"X-Note": c.value})
		if r.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, r.status)
		}
		keep(r)
	}
	payer, _ := newPayer(t)
	rec := &recorder{next: http.DefaultTransport}
	payer.Client = &http.Client{Transport: rec}
	res, err := payer.Call(context.Background(), h.URL+"/stream-divergence/compare", body)
	if err != nil || res.Status != 200 {
		t.Fatalf("paid report: %v %d", err, res.Status)
	}
	answers = append(answers, res.Body)
	bad := []byte(`{"streamed_capture":{"chunks":["` + c.value + `"]},"reference_output":{"chunks":[]}}`)
	keep(do(t, "POST", h.URL+"/stream-divergence/compare", bad, map[string]string{"PAYMENT-SIGNATURE": rec.sig}))
	keep(do(t, "POST", h.URL+"/stream-divergence/compare", body, map[string]string{"PAYMENT-SIGNATURE": rec.sig})) // redelivered
	other := bytes.Replace(body, []byte(b64(artefact[1:])), []byte(b64(artefact[2:])), 1)
	keep(do(t, "POST", h.URL+"/stream-divergence/compare", other, map[string]string{"PAYMENT-SIGNATURE": rec.sig})) // conflict
	h.clock.Add(x402.DefaultRedelivery)
	keep(do(t, "POST", h.URL+"/stream-divergence/compare", body, map[string]string{"PAYMENT-SIGNATURE": rec.sig})) // replay

	fam := h.Families["test-family"]
	go func() {
		time.Sleep(700 * time.Millisecond)
		_ = syscall.Kill(fam.PID(), syscall.SIGKILL)
	}()
	crashBody := []byte(`{"sleep_ms":3000,"pad":"` + c.value + `"}`)
	res, err = payer.Call(context.Background(), h.URL+"/test-family/measure", crashBody)
	if err != nil || res.Status != 200 {
		t.Fatalf("crash then marker redemption: %v %d %s", err, res.Status, res.Body)
	}
	answers = append(answers, res.Body)
	for i, a := range answers {
		c.find(t, fmt.Sprintf("paid-route answer %d", i), a)
	}
	// each payment outcome above is on its request line (the canary, on
	// none: c.find below)
	time.Sleep(100 * time.Millisecond) // the last line follows its answer
	outcomes := map[any]bool{}
	for _, l := range requestLines(t, h.Log.String()) {
		outcomes[l["payment"]] = true
	}
	for _, o := range []string{"required", "settled", "not-paid", "redelivered", "conflict", "replayed", "undelivered"} {
		if !outcomes[o] {
			t.Errorf("no request line with payment=%s (lines: %v)", o, outcomes)
		}
	}
	c.find(t, "the host log", []byte(h.Log.String()))
	c.find(t, "the store's rows", []byte(dumpTables(t, h.Store)))
	m := do(t, "GET", h.URL+"/metrics", nil, nil)
	c.find(t, "/metrics", m.raw)
}
