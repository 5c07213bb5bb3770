package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// payingHost is a host in the test's process that takes payments through
// the embedded local facilitator, serving the test family's paid op.
type payingHost struct {
	*testhost.Host
	dir, wallet string
}

func startPayingHost(t *testing.T) *payingHost {
	t.Helper()
	dir := t.TempDir()
	fee, err := wallet.New(filepath.Join(dir, "fee.json"))
	if err != nil {
		t.Fatal(err)
	}
	seller, err := wallet.New(filepath.Join(dir, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	fac := x402.NewLocal(fee, x402.SolanaDevnet)
	h := testhost.Start(t, testhost.Options{Gate: func(tb testing.TB, st *store.Store) payment.Gate {
		g, err := x402.NewGate(context.Background(), x402.Config{Facilitator: fac, Store: st, Network: x402.SolanaDevnet,
			Asset: x402.USDCDevnet, PayTo: address(seller)})
		if err != nil {
			tb.Fatal(err)
		}
		return g
	}}, "host/internal/testfamily")
	p := &payingHost{Host: h, dir: dir, wallet: filepath.Join(dir, "payer.json")}
	if _, err := wallet.New(p.wallet); err != nil {
		t.Fatal(err)
	}
	return p
}

// file writes content into the host's test dir and returns its path.
func (p *payingHost) file(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// assayCall runs `assay call` and returns the exit status the process
// would end with, its message and what it printed.
func assayCall(args ...string) (int, string, string) {
	var out bytes.Buffer
	err := run(append([]string{"call"}, args...), &out, &out)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return exitStatus(err), msg, out.String()
}

// The exit status of `assay call` tells a script whether it holds the
// report and whether it paid without one: 0 for a report whose signature
// checked, 3 for one saved unchecked (the keys out of reach), 4 when
// nothing was charged (the body refused before payment, the payment
// refused, no host), 2 for the command line.
func TestCallExitStatusSaysWhatWasPaid(t *testing.T) {
	h := startPayingHost(t)
	op := h.URL + "/test-family/measure"
	body := h.file(t, "body.json", `{}`)

	report := filepath.Join(h.dir, "report.json")
	status, msg, said := assayCall("--wallet", h.wallet, "--out", report, op, body)
	if status != callVerified || !strings.Contains(said, "signature checked") || !strings.Contains(said, "payment id pay_") {
		t.Fatalf("a verified report: status %d, %s\n%s", status, msg, said)
	}

	unchecked := filepath.Join(h.dir, "unchecked.json")
	status, msg, _ = assayCall("--wallet", h.wallet, "--keys", "http://127.0.0.1:9/keys", "--out", unchecked, op, body)
	if status != callUnverified || !strings.Contains(msg, "assay verify") {
		t.Errorf("keys out of reach: status %d, %s", status, msg)
	}
	if _, err := os.Stat(unchecked); err != nil {
		t.Errorf("the unchecked report was not saved: %v", err)
	}

	before := h.LedgerRows(t)
	refusedOut := filepath.Join(h.dir, "refused.json")
	status, msg, _ = assayCall("--wallet", h.wallet, "--out", refusedOut, op, h.file(t, "refuse.json", `{"refuse":true}`))
	if status != callNotPaid || !strings.Contains(msg, "refused") {
		t.Errorf("a body refused before payment: status %d, %s", status, msg)
	}
	status, msg, _ = assayCall("--payment", h.file(t, "forged.payment", "eyJ4NDAyVmVyc2lvbiI6Mn0="), "--out", refusedOut, op, body)
	if status != callNotPaid || !strings.Contains(msg, "402 ") {
		t.Errorf("a payment the host refuses: status %d, %s", status, msg)
	}
	status, msg, _ = assayCall("--wallet", h.wallet, "--out", refusedOut, "http://127.0.0.1:9/test-family/measure", body)
	if status != callNotPaid {
		t.Errorf("no host to pay: status %d, %s", status, msg)
	}
	for _, f := range []string{refusedOut, refusedOut + ".payment"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a call that paid nothing left %s", f)
		}
	}
	if after := h.LedgerRows(t); after != before {
		t.Errorf("the calls that paid nothing added %d ledger lines", after-before)
	}

	for _, args := range [][]string{{op, body}, {"--wallet", h.wallet, op}, {"--wallet", h.wallet, "--no-such-flag", op, body}, {"--wallet", h.wallet, "/test-family/measure", body}} {
		if status, msg, _ := assayCall(args...); status != callUsage {
			t.Errorf("%v: status %d, %s", args, status, msg)
		}
	}
	if status := exitStatus(run([]string{"call", "-h"}, &bytes.Buffer{}, &bytes.Buffer{})); status != 0 {
		t.Errorf("call -h: status %d", status)
	}
}

// A paid request that gets no answer ends with 5 and its payment saved
// beside --out; the same call run again (a wrapper retrying) is refused
// rather than paying a second time, and the saved payment, sent again,
// buys the report with nothing more charged: a fresh transaction was
// never built.
func TestCallExitStatusOfAPaymentWithNoAnswer(t *testing.T) {
	h := startPayingHost(t)
	body := h.file(t, "body.json", `{}`)
	target, _ := url.Parse(h.URL)
	fwd := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var payments []string
	lossy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.Header.Get(x402.HeaderSignature); p != "" {
			mu.Lock()
			payments = append(payments, p)
			mu.Unlock()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		fwd.ServeHTTP(w, r)
	}))
	defer lossy.Close()

	report := filepath.Join(h.dir, "report.json")
	status, msg, _ := assayCall("--wallet", h.wallet, "--out", report, lossy.URL+"/test-family/measure", body)
	saved := report + ".payment"
	if status != callOwed || !strings.Contains(msg, "--payment "+saved) {
		t.Fatalf("a paid request with no answer: status %d, %s", status, msg)
	}
	raw, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sent := append([]string(nil), payments...)
	mu.Unlock()
	if len(sent) == 0 || strings.TrimSpace(string(raw)) != sent[0] {
		t.Fatal("the payment saved is not the one sent")
	}
	pp, err := x402.DecodePayment(sent[0])
	if err != nil {
		t.Fatal(err)
	}
	id, err := pp.Identifier()
	if err != nil || !x402.ValidIdentifier(id) || !strings.Contains(msg, id) {
		t.Errorf("the payment carries id %q (%v); the message: %s", id, err, msg)
	}
	for _, p := range sent {
		if p != sent[0] {
			t.Error("the call's re-sends carried another payment")
		}
	}

	// a wrapper retrying the same command: no new payment while one is owed
	status, msg, _ = assayCall("--wallet", h.wallet, "--out", report, h.URL+"/test-family/measure", body)
	if status != callUsage || !strings.Contains(msg, "--payment "+saved) {
		t.Errorf("the call run again: status %d, %s", status, msg)
	}
	if n := h.LedgerRows(t); n != 0 {
		t.Errorf("%d ledger lines before the payment was sent again", n)
	}

	status, msg, said := assayCall("--payment", saved, "--out", report, h.URL+"/test-family/measure", body)
	if status != callVerified || !strings.Contains(said, "payment id "+id) || !strings.Contains(said, "removed "+saved) {
		t.Fatalf("the saved payment sent again: status %d, %s\n%s", status, msg, said)
	}
	// the file that bought the report is gone: the same command pays anew
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Errorf("the payment file is still there once its report was saved: %v", err)
	}
	var answer map[string]any
	if raw, _ := os.ReadFile(report); json.Unmarshal(raw, &answer) != nil || answer["kind"] != "report" {
		t.Errorf("saved %v", answer)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Errorf("%d ledger lines for one payment", len(lines))
	}
}

// The usage text names every exit status.
func TestCallUsageListsTheExitStatuses(t *testing.T) {
	for _, s := range []string{"exit status", "0  the report is saved", "3  the report is saved", "4  not paid", "5  paid or possibly paid", "2  usage", "1  anything else", "--payment <out>.payment"} {
		if !strings.Contains(callUsageText, s) {
			t.Errorf("the usage text does not say %q", s)
		}
	}
}

// The built binary exits with assay call's status, not 1 for every
// failure: a wrapper script reads $? to tell a refusal (4) from a usage
// error (2) without parsing text.
func TestTheBinaryExitsWithTheCallsStatus(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, "host/internal/testfamily")
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	if err := os.WriteFile(body, []byte(`{"pad":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"no arguments", []string{"call"}, callUsage},
		{"a refused call (no such route: nothing was paid)", []string{"call", "--payment", body, "--out", filepath.Join(dir, "r.json"), h.URL + "/no-such-service/op", body}, callNotPaid},
	} {
		cmd := exec.Command(bin, c.args...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.want {
			t.Errorf("%s: %v, want exit %d\n%s", c.name, err, c.want, out)
		}
	}
}
