package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// A machine paces itself on the free pre-check without a refusal to learn
// from: every pre-check answer says, in its signed body (free_tier) and
// in the IETF RateLimit fields, how many are left today and when they
// reset; the spent allowance's 402 names the paid route, and its
// PAYMENT-REQUIRED is that route's own requirement, so the official x402
// client reads it instead of throwing on it. A payment the client sends
// to the pre-check is never taken: it still buys the paid route after.
func TestFreeAllowanceForMachines(t *testing.T) {
	dir := nodeDir(t, "../internal/testdata/x402-interop", "@x402/fetch")
	h := startPaid(t, sdPkg)
	h.clock.mu.Lock()
	h.clock.t = time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC) // an hour before the reset
	h.clock.mu.Unlock()
	body := precheckBody("") // counted by address: the node client's too
	url := h.URL + "/stream-divergence/precheck"

	for i := int64(1); i <= 100; i++ {
		r := post(t, url, body)
		if r.status != 200 {
			t.Fatalf("pre-check %d: %d %s", i, r.status, r.raw)
		}
		ft, _ := r.json["free_tier"].(map[string]any)
		if ft["per_day"] != float64(100) || ft["remaining"] != float64(100-i) || ft["resets_at"] != "2026-11-30T00:00:00Z" || ft["min_interval_ms"] != float64(5000) ||
			ft["counted"] != "address" || len(ft) != 5 {
			t.Fatalf("pre-check %d: free_tier %v", i, ft)
		}
		secs := int64(3600 - 5*(i-1))
		if got, want := r.header.Get("RateLimit"), `"free-precheck";r=`+itoa(100-i)+`;t=`+itoa(secs); got != want {
			t.Fatalf("pre-check %d: RateLimit %q, want %q", i, got, want)
		}
		if got := r.header.Get("RateLimit-Policy"); got != `"free-precheck";q=100;w=86400` {
			t.Fatalf("pre-check %d: RateLimit-Policy %q", i, got)
		}
		if i == 1 {
			verified(t, h.Host, r) // the member is signed with the rest
		}
		if i == 50 {
			// inside the interval: 429, the count unchanged
			h.clock.Add(time.Second)
			r := post(t, url, body)
			if ft, _ := r.json["free_tier"].(map[string]any); r.status != 429 || ft["remaining"] != float64(50) ||
				r.header.Get("RateLimit") != `"free-precheck";r=50;t=`+itoa(secs-1) {
				t.Fatalf("inside the interval: %d %s %q", r.status, r.raw, r.header.Get("RateLimit"))
			}
			h.clock.Add(-time.Second)
		}
		h.clock.Add(5 * time.Second)
	}

	// the spent answer carries nothing of what was sent (custody): a
	// planted string in the body, the query and a header
	const planted = "PLANTEDSPENTCANARY7f3a"
	r := do(t, "POST", url+"?q="+planted, sdBody([]string{planted}, []string{planted}), map[string]string{"X-Note": planted})
	for _, where := range []string{string(r.raw), r.header.Get("PAYMENT-REQUIRED"), decoded(r.header.Get("PAYMENT-REQUIRED"))} {
		if strings.Contains(where, planted) || strings.Contains(where, base64.StdEncoding.EncodeToString([]byte(planted))) {
			t.Fatalf("the spent allowance's answer carries what was sent: %.300s", where)
		}
	}
	e, _ := r.json["error"].(map[string]any)
	if r.status != 402 || errorCode(r) != "free_allowance_spent" || e["paid_route"] != "POST /stream-divergence/compare" || r.json["payment"] != nil {
		t.Fatalf("spent: %d %s", r.status, r.raw)
	}
	verified(t, h.Host, r)
	if got := r.header.Get("Retry-After"); got != itoa(3600-500) {
		t.Errorf("spent: Retry-After %q, want the seconds to 00:00 UTC", got)
	}
	var offered x402.PaymentRequired
	raw, err := base64.StdEncoding.DecodeString(r.header.Get("PAYMENT-REQUIRED"))
	if err != nil || json.Unmarshal(raw, &offered) != nil {
		t.Fatalf("spent: PAYMENT-REQUIRED does not decode: %q", r.header.Get("PAYMENT-REQUIRED"))
	}
	paid := post(t, h.URL+"/stream-divergence/compare", body)
	var own x402.PaymentRequired
	raw, _ = base64.StdEncoding.DecodeString(paid.header.Get("PAYMENT-REQUIRED"))
	_ = json.Unmarshal(raw, &own)
	if offered.X402Version != 2 || offered.Resource.URL != h.URL+"/stream-divergence/compare" || !strings.HasPrefix(offered.Error, "free_allowance_spent") ||
		len(offered.Accepts) != 1 || len(own.Accepts) != 1 || offered.Accepts[0].Amount != own.Accepts[0].Amount ||
		offered.Accepts[0].PayTo != own.Accepts[0].PayTo || offered.Accepts[0].Asset != own.Accepts[0].Asset {
		t.Fatalf("spent: the requirement offered is not the paid route's: %+v\nthe route's: %+v", offered, own)
	}

	// the official client on the spent pre-check: no throw, the 402 read
	stub := &rpcStub{}
	rpcServer := httptest.NewServer(stub)
	defer rpcServer.Close()
	rpc := rpcServer.URL
	tmp := t.TempDir()
	walletPath, bodyPath, saved := filepath.Join(tmp, "payer.json"), filepath.Join(tmp, "body.json"), filepath.Join(tmp, "payment")
	if _, err := wallet.New(walletPath); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(bodyPath, body, 0o600)
	h.clock.Add(5 * time.Second)
	out := payMJS(t, dir, "the official client threw on the spent allowance's 402",
		"--url", url, "--body", bodyPath, "--wallet", walletPath, "--rpc", rpc, "--save-payment", saved)
	var res struct {
		Status int            `json:"status"`
		Body   map[string]any `json:"body"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Status != 402 {
		t.Fatalf("the official client's answer: %v %s", err, out)
	}
	if e, _ := res.Body["error"].(map[string]any); e["code"] != "free_allowance_spent" || e["paid_route"] != "POST /stream-divergence/compare" {
		t.Fatalf("the official client's answer: %s", out)
	}
	if lines, err := h.Store.Lines(context.Background()); err != nil || len(lines) != 0 {
		t.Fatalf("the pre-check took something: %d lines (%v)", len(lines), err)
	}
	// the payment it signed was not taken: it buys the paid route now
	payment, err := os.ReadFile(saved)
	if err != nil || len(payment) == 0 {
		t.Fatalf("the official client sent no payment to read back: %v", err)
	}
	payer, _ := newPayer(t)
	got, err := payer.Resend(context.Background(), h.URL+"/stream-divergence/compare", body, strings.TrimSpace(string(payment)))
	if err != nil || got.Status != 200 {
		t.Fatalf("the payment sent to the pre-check, on the paid route: %v %+v", err, got)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Fatalf("ledger: %d lines", len(lines))
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func decoded(h string) string { b, _ := base64.StdEncoding.DecodeString(h); return string(b) }
