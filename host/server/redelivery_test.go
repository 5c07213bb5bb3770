package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/x402"
)

// A body large enough to reach the family as a shared body (64 KiB and
// more) is redelivered as a small one is: its digest is taken from the
// sealed shared file when the answer is sealed and when it is opened.
func TestALargeSubmissionIsRedeliveredAndNoOtherIs(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	big := strings.Repeat("a streamed answer ", 2500) // 45,000 bytes a side
	body := sdBody([]string{big}, []string{big + "!"})
	if len(body) < 64<<10 {
		t.Fatalf("the body is %d bytes, under the shared-body size", len(body))
	}
	sig := freshPayment(t, url, body)
	first := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig})
	if first.status != 200 {
		t.Fatalf("paid: %d %.300s", first.status, first.raw)
	}
	other := sdBody([]string{big}, []string{big + "?"}) // the same length, one byte apart
	resentUntilTheWindowEnds(t, h, url, body, other, map[string]string{"PAYMENT-SIGNATURE": sig}, first)
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
}

// The official client's retry: a fresh payment (another transaction)
// carrying the same payment-identifier id is answered with the report
// issued for that id, byte for byte, and is never settled: one claim, one
// line. The same id with another submission is a conflict.
func TestAFreshPaymentWithAnIssuedIdentifierIsNeverSettled(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab", "c"}, []string{"abd"})
	payer, _ := newPayer(t)
	id, err := x402.NewIdentifier()
	if err != nil {
		t.Fatal(err)
	}
	payer.Identifier = id
	rec := &recorder{next: http.DefaultTransport}
	payer.Client = &http.Client{Transport: rec}
	first, err := payer.Call(context.Background(), url, body)
	if err != nil || first.Status != 200 {
		t.Fatalf("paid: %v %+v", err, first)
	}
	firstSig := rec.sig
	again, err := payer.Call(context.Background(), url, body)
	if err != nil || again.Status != 200 {
		t.Fatalf("the retry with a fresh payment: %v %+v", err, again)
	}
	if rec.sig == firstSig {
		t.Fatal("the retry did not build a fresh payment")
	}
	if !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("the retry's answer is not the issued one:\n%s\n%s", first.Body, again.Body)
	}
	var claims int
	if err := h.Store.DB().QueryRow(`SELECT COUNT(*) FROM payment_claims`).Scan(&claims); err != nil || claims != 1 {
		t.Fatalf("%d claims (%v), want the first payment's alone", claims, err)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	conflict, err := payer.Call(context.Background(), url, sdBody([]string{"ab"}, []string{"ab"}))
	if err != nil || conflict.Status != 409 || !strings.Contains(string(conflict.Body), `"payment_conflict"`) {
		t.Fatalf("the same id with another submission: %v %+v", err, conflict)
	}
	if err := h.Store.DB().QueryRow(`SELECT COUNT(*) FROM payment_claims`).Scan(&claims); err != nil || claims != 1 {
		t.Fatalf("%d claims after the conflict, want 1", claims)
	}
}

// A client that goes away while the family measures is logged as that,
// not as the plugin's fault: the plugin only saw its request end.
func TestAClientGoneWhileMeasuringIsNotThePluginsFault(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, testPkg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.URL+"/test-family/measure", strings.NewReader(`{"sleep_ms":3000}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d before the client went away", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(h.Log.String(), "the client went away before its answer") {
		if time.Now().After(deadline) {
			t.Fatalf("no line saying the client went away:\n%s", h.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(h.Log.String(), "plugin unavailable during request") {
		t.Errorf("the plugin was blamed for the client leaving:\n%s", h.Log.String())
	}
}

// Two requests with one payment at once, the embedded facilitator
// offline (nothing written until the issue): both measure, the first to
// issue wins, the other is told payment_in_progress, and its re-send is
// the winner's report. One claim, one line.
func TestTwoRequestsWithOnePaymentIssueOnce(t *testing.T) {
	h := startPaid(t, testPkg)
	url := h.URL + "/test-family/measure"
	body := []byte(`{"sleep_ms":400}`)
	sig := freshPayment(t, url, body)
	replies := make(chan reply, 2)
	for range 2 {
		go func() { replies <- do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig}) }()
	}
	a, b := <-replies, <-replies
	if a.status != 200 {
		a, b = b, a
	}
	if a.status != 200 || b.status != 503 || errorCode(b) != "payment_in_progress" || b.header.Get("Retry-After") == "" {
		t.Fatalf("two at once: %d %s / %d %s", a.status, a.raw, b.status, b.raw)
	}
	if p, _ := b.json["payment"].(map[string]any); p["charged"] != false {
		t.Errorf("the later one's payment member %v", p)
	}
	again := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig})
	if again.status != 200 || !bytes.Equal(again.raw, a.raw) {
		t.Fatalf("the later one's re-send: %d %.300s", again.status, again.raw)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
}
