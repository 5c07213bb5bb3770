package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/x402"
)

// requestFields are every key a request line may carry: hclog's own and
// the host's metadata, nothing named after what a caller sent.
var requestFields = map[string]bool{"@level": true, "@message": true, "@module": true, "@timestamp": true,
	"route": true, "service": true, "method": true, "status": true, "code": true, "duration_ms": true, "payment": true, "tx": true, "reason": true}

// requestLines are the host's per-request lines in a JSON log.
func requestLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"@message":"request"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a request line is not JSON: %v\n%s", err, line)
		}
		if m["@module"] == "assay" { // a plugin's own line of that name is not one
			out = append(out, m)
		}
	}
	return out
}

// awaitLines waits until the log holds n request lines: a line is written
// once its handler returns, an instant after the client has the answer.
func awaitLines(t *testing.T, h *testhost.Host, n int) []map[string]any {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		lines := requestLines(t, h.Log.String())
		if len(lines) >= n || time.Now().After(deadline) {
			if len(lines) < n {
				t.Fatalf("%d request lines, want %d:\n%s", len(lines), n, h.Log.String())
			}
			return lines
		}
	}
}

// wantLine is a request line's expected fields; an empty string is a
// field that must be absent.
type wantLine struct {
	level, route, service, method string
	status                        int
	code, payment                 string
}

func checkLine(t *testing.T, name string, got map[string]any, w wantLine) {
	t.Helper()
	str := func(k string) string { s, _ := got[k].(string); return s }
	for k := range got {
		if !requestFields[k] {
			t.Errorf("%s: the request line carries %q", name, k)
		}
	}
	if str("@level") != w.level || str("route") != w.route || str("service") != w.service || str("method") != w.method ||
		got["status"] != float64(w.status) || str("code") != w.code || str("payment") != w.payment {
		t.Errorf("%s: request line %v, want %+v", name, got, w)
	}
	// a refused payment's line says why, in the facilitator's words, so
	// an operator can act on it; no other line has a reason
	if r := str("reason"); (w.payment == "invalid") != (r != "") || r != "" && strings.Trim(r, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		t.Errorf("%s: reason %q on a %q payment", name, r, w.payment)
	}
	if ms, ok := got["duration_ms"].(float64); !ok || ms < 0 {
		t.Errorf("%s: duration_ms %v", name, got["duration_ms"])
	}
	if _, ok := got["tx"]; ok && w.payment != "settled" {
		t.Errorf("%s: a transaction id on an unsettled request", name)
	}
}

// noting adds the canary as a header to every request a payer sends.
type noting struct {
	next  http.RoundTripper
	value string
}

func (n noting) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Note", n.value)
	return n.next.RoundTrip(r)
}

// Every answer has one line naming its route, method, status, refusal code
// and payment outcome, and the transaction when settled: a pre-check, its
// free-tier refusal, a family refusal, a body over the cap, the 402, a
// settled call, a replay and a forged payment, a probe (at debug) and
// paths and methods the host does not serve. The canary is in every body,
// query and a header, and nowhere in the log.
func TestRequestLineNamesTheAnswerNeverTheRequest(t *testing.T) {
	c := newCanary(t)
	h := startPaid(t, sdPkg)
	artefact := []byte("logged " + c.value)
	c.add("artefact", artefact)
	b64 := base64.StdEncoding.EncodeToString
	body := func(streamed string, extra map[string]any) []byte {
		m := map[string]any{"streamed_capture": map[string]any{"chunks": []string{streamed}},
			"reference_output": map[string]any{"chunks": []string{b64(artefact[1:])}}, c.value: c.value}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		c.add("a body", b)
		return b
	}
	good := body(b64(artefact), nil)
	paidBody := body(b64(artefact), map[string]any{"caller": c.value})
	q := "?q=" + c.value + "&" + c.value + "=1"
	pre, compare := h.URL+"/stream-divergence/precheck"+q, h.URL+"/stream-divergence/compare"+q
	const svc = "stream-divergence"
	n := 0
	call := func(name, method, url string, b []byte, header map[string]string, status int, w wantLine) reply {
		t.Helper()
		hdr := map[string]string{"X-Note": c.value}
		for k, v := range header {
			hdr[k] = v
		}
		r := do(t, method, url, b, hdr)
		if r.status != status {
			t.Fatalf("%s: %d, want %d: %s", name, r.status, status, r.raw)
		}
		n++
		checkLine(t, name, awaitLines(t, h.Host, n)[n-1], w)
		return r
	}
	call("precheck", "POST", pre, good, nil, 200, wantLine{"info", "POST /stream-divergence/precheck", svc, "POST", 200, "", ""})
	call("free interval", "POST", pre, good, nil, 429, wantLine{"info", "POST /stream-divergence/precheck", svc, "POST", 429, "free_interval", ""})
	call("family refusal", "POST", compare, body(c.value, nil), nil, 400,
		wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 400, "chunk_not_base64", "not-paid"})
	call("body over cap", "POST", compare, bytes.Repeat([]byte(c.value), 262144/len(c.value)+1), nil, 413,
		wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 413, "body_bytes_cap", "not-paid"})
	call("no payment", "POST", compare, good, nil, 402,
		wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 402, "payment_required", "required"})

	payer, _ := newPayer(t)
	rec := &recorder{next: noting{next: http.DefaultTransport, value: c.value}}
	payer.Client = &http.Client{Transport: rec}
	res, err := payer.Call(context.Background(), compare, paidBody)
	if err != nil || res.Status != 200 {
		t.Fatalf("paid call: %v %v", err, res)
	}
	n += 2 // the 402, then the paid request
	lines := awaitLines(t, h.Host, n)
	checkLine(t, "the payer's first ask", lines[n-2], wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 402, "payment_required", "required"})
	checkLine(t, "paid call", lines[n-1], wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 200, "", "settled"})
	ledger := h.Lines(t, 1)
	if len(ledger) != 1 || ledger[0].TxID == nil || lines[n-1]["tx"] != *ledger[0].TxID {
		t.Errorf("the settled line's tx %v is not the ledger's (%+v)", lines[n-1]["tx"], ledger)
	}
	call("re-sent", "POST", compare, paidBody, map[string]string{"PAYMENT-SIGNATURE": rec.sig}, 200,
		wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 200, "", "redelivered"})
	call("re-sent with another submission", "POST", compare, good, map[string]string{"PAYMENT-SIGNATURE": rec.sig}, 409,
		wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 409, "payment_conflict", "conflict"})
	var pp x402.PaymentPayload
	decodeHeader(t, rec.sig, &pp)
	pp.Accepted.Amount = "1"
	forged, _ := x402.EncodeHeader(pp)
	call("forged payment", "POST", compare, good, map[string]string{"PAYMENT-SIGNATURE": forged}, 402,
		wantLine{"info", "POST /stream-divergence/compare", svc, "POST", 402, "payment_invalid", "invalid"})

	call("probe", "GET", h.URL+"/healthz"+q, nil, nil, 200, wantLine{"debug", "GET /healthz", "", "GET", 200, "", ""})
	call("metrics", "GET", h.URL+"/stream-divergence/metrics"+q, nil, nil, 200, wantLine{"debug", "GET /stream-divergence/metrics", svc, "GET", 200, "", ""})
	call("catalog", "GET", h.URL+"/"+q, nil, nil, 200, wantLine{"info", "GET /{$}", "", "GET", 200, "", ""})
	call("uncovered op", "POST", h.URL+"/stream-divergence/"+c.value+q, good, nil, 404, wantLine{"info", "/", "", "POST", 404, "", ""})
	call("a method of the caller's", c.value, h.URL+"/"+c.value+q, good, nil, 404, wantLine{"info", "/", "", "other", 404, "", ""})

	c.find(t, "the host log", []byte(h.Log.String()))
}

// A host logging at info writes no probe's line, and a JSON logger's
// request line is one object; at warn it writes none.
func TestRequestLineLevels(t *testing.T) {
	for _, level := range []hclog.Level{hclog.Info, hclog.Warn} {
		var buf bytes.Buffer
		log := hclog.New(&hclog.LoggerOptions{Name: "assay", Level: level, Output: &buf, JSONFormat: true})
		s := server.New(server.Config{Logger: log})
		for _, path := range []string{"/healthz", "/readyz", "/metrics", "/nowhere?secret=1"} {
			s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		}
		var lines []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s: not JSON: %s", level, line)
			}
			lines = append(lines, m)
		}
		switch {
		case level == hclog.Warn && len(lines) != 0:
			t.Errorf("warn: %d lines: %v", len(lines), lines)
		case level == hclog.Info && (len(lines) != 1 || lines[0]["route"] != "/" || lines[0]["status"] != float64(404) || lines[0]["@level"] != "info"):
			t.Errorf("info: %v", lines)
		}
		if strings.Contains(buf.String(), "secret") || strings.Contains(buf.String(), "nowhere") {
			t.Errorf("%s: the path or query reached the log: %s", level, buf.String())
		}
	}
}
