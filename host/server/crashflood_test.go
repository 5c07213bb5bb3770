package server_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/senderlimit"
)

// auditBody is an unpaid context-audit of a one-message anthropic record.
func auditBody(text string) []byte {
	b, _ := json.Marshal(map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": "anthropic-messages",
		"record": map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}})
	return b
}

// A crash flood costs its sender: one client sends a record that crashes
// its adapter to the paid route, unpaid (it is adapted before its 402),
// ten a second for ten seconds; another client's good records, sent
// beside it, are served (402, the payment asked for) at least 90 % of the
// time. The flood's sender is held (429 sender_held, Retry-After) after
// its second crash, so the adapter restarts twice, not a hundred times;
// its restarts never wait longer for it (the backoff is for binaries that
// die before they are sent anything).
func TestACrashFloodCostsItsSender(t *testing.T) {
	proxy := netip.MustParsePrefix("127.0.0.1/32")
	ph := startPaidWith(t, testhost.Options{Adapters: poisonAdapters, AdapterBackoff: 100 * time.Millisecond,
		Senders: senderlimit.New(senderlimit.Config{}), TrustedProxies: []netip.Prefix{proxy}}, caPkg)
	url := ph.URL + "/context-audit/audit"
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }

	var wg sync.WaitGroup
	flood := map[int]int{}
	var held string
	stop := time.Now().Add(10 * time.Second)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for tick := time.NewTicker(100 * time.Millisecond); time.Now().Before(stop); <-tick.C {
			r := do(t, "POST", url, auditBody("POISON-CRASH"), from("10.0.0.66"))
			flood[r.status]++
			if r.status == 429 && held == "" {
				held = errorCode(r) + " " + r.header.Get("Retry-After")
			}
		}
	}()
	victim := map[string]int{}
	// out of step with the flood, as two independent clients are
	time.Sleep(50 * time.Millisecond)
	for tick := time.NewTicker(200 * time.Millisecond); time.Now().Before(stop); <-tick.C {
		r := do(t, "POST", url, auditBody("Please list three risks in this plan."), from("10.0.0.77"))
		victim[strconv.Itoa(r.status)+" "+errorCode(r)]++
	}
	wg.Wait()
	total, served := 0, victim["402 payment_required"]
	for _, n := range victim {
		total += n
	}
	t.Logf("beside a crash flood (%v), the other client's records: %v", flood, victim)
	if total < 40 || float64(served) < 0.9*float64(total) {
		t.Errorf("the other client's good records were served %d of %d times (%v), want at least 90 %%", served, total, victim)
	}
	if flood[502] > 3 || flood[429] < 80 {
		t.Errorf("the flood's answers %v: its sender was not held after its crashes", flood)
	}
	if !strings.HasPrefix(held, "sender_held ") {
		t.Errorf("the flood's first 429: %q", held)
	}
	for _, a := range ph.Adapters {
		if a.Description().GetFormatId() == "anthropic-messages" && a.Restarts() > 3 {
			t.Errorf("the adapter restarted %d times for one sender's flood", a.Restarts())
		}
	}
}

// Requests without a payment on a paid route are limited per client (the
// stated allowance, 429 unpaid_rate with Retry-After and per_minute),
// another client keeps its own, and a paid report gives one back.
func TestUnpaidRequestsAreLimitedPerClient(t *testing.T) {
	proxy := netip.MustParsePrefix("127.0.0.1/32")
	ph := startPaidWith(t, testhost.Options{Senders: senderlimit.New(senderlimit.Config{UnpaidPerMinute: 3}), TrustedProxies: []netip.Prefix{proxy}},
		"plugins/stream-divergence")
	url := ph.URL + "/stream-divergence/compare"
	body := []byte(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`)
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	for i := range 3 {
		if r := do(t, "POST", url, body, from("10.0.0.1")); r.status != http.StatusPaymentRequired {
			t.Fatalf("unpaid request %d of 3: %d %s", i+1, r.status, r.raw)
		}
	}
	r := do(t, "POST", url, body, from("10.0.0.1"))
	e, _ := r.json["error"].(map[string]any)
	if r.status != http.StatusTooManyRequests || errorCode(r) != "unpaid_rate" || e["per_minute"] != float64(3) || r.header.Get("Retry-After") != "20" {
		t.Fatalf("the 4th unpaid request: %d %s (Retry-After %q)", r.status, r.raw, r.header.Get("Retry-After"))
	}
	if r := do(t, "POST", url, body, from("10.0.0.2")); r.status != http.StatusPaymentRequired {
		t.Errorf("another client: %d %s", r.status, r.raw)
	}
	// a payer: its paid call's own unpaid request spends one, its report
	// gives one back, so it keeps what it had
	payer, _ := newPayer(t)
	payer.Client = &http.Client{Transport: forwardedFor{"10.0.0.3"}}
	for range 2 {
		if r := do(t, "POST", url, body, from("10.0.0.3")); r.status != http.StatusPaymentRequired {
			t.Fatalf("the payer's unpaid request: %d %s", r.status, r.raw)
		}
	}
	if paid, err := payer.Call(t.Context(), url, body); err != nil || paid.Status != http.StatusOK {
		t.Fatalf("the paid call: %v %+v", err, paid)
	}
	if r := do(t, "POST", url, body, from("10.0.0.3")); r.status != http.StatusPaymentRequired {
		t.Errorf("after a paid report, the payer's unpaid request: %d %s (the report gave none back)", r.status, r.raw)
	}
}

// forwardedFor sends every request as if through the host's trusted
// proxy from addr.
type forwardedFor struct{ addr string }

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	return http.DefaultTransport.RoundTrip(r)
}
