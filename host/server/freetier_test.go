package server_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
)

// fixedClock is a host clock the test moves by hand.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fixedClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const callerWallet = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"

func precheckBody(caller string) []byte {
	var m map[string]any
	_ = json.Unmarshal(sdBody([]string{"a"}, []string{"a"}), &m)
	if caller != "" {
		m["caller"] = caller
	}
	b, _ := json.Marshal(m)
	return b
}

// burst sends n concurrent pre-checks spread over hosts and counts statuses.
func burst(t *testing.T, hosts []*testhost.Host, n int, body []byte) map[int]int64 {
	var mu sync.Mutex
	counts := map[int]int64{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := post(t, hosts[i%len(hosts)].URL+"/stream-divergence/precheck", body)
			mu.Lock()
			counts[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return counts
}

func TestFreeTierThroughTheHost(t *testing.T) {
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			spec, _ := storetest.Spec(t, kind)
			clock := &fixedClock{t: time.Date(2026, 11, 29, 0, 0, 1, 0, time.UTC)}
			hosts := []*testhost.Host{testhost.Start(t, testhost.Options{Store: spec, Now: clock.Now}, sdPkg)}
			if kind == "postgres" { // a second host on the same database
				hosts = append(hosts, testhost.Start(t, testhost.Options{Store: spec, Now: clock.Now}, sdPkg))
			}
			// one caller: its address (the wallet it names, unproven, is
			// only its word: counted against the address too)
			body := precheckBody(callerWallet)

			got := burst(t, hosts, 1000, body)
			if got[200] != 1 || got[429] != 999 {
				t.Fatalf("a burst of 1,000 from one caller: %v, want exactly one admitted", got)
			}
			// the rest of a simulated day: 99 more, each exactly 5,000 ms
			// after the last, alternating hosts; then the allowance is spent
			for i := 2; i <= 100; i++ {
				clock.Add(5 * time.Second)
				if r := post(t, hosts[i%len(hosts)].URL+"/stream-divergence/precheck", body); r.status != 200 {
					t.Fatalf("spaced call %d: %d %s", i, r.status, r.raw)
				}
			}
			clock.Add(5 * time.Second)
			r := post(t, hosts[0].URL+"/stream-divergence/precheck", body)
			if r.status != http.StatusPaymentRequired || errorCode(r) != "free_allowance_spent" {
				t.Fatalf("call 101: %d %s", r.status, r.raw)
			}
			verified(t, hosts[0], r)
			// inside the interval: 429 with Retry-After in whole seconds
			clock.Add(24 * time.Hour)
			if r := post(t, hosts[0].URL+"/stream-divergence/precheck", body); r.status != 200 {
				t.Fatalf("next day: %d", r.status)
			}
			clock.Add(1200 * time.Millisecond)
			r = post(t, hosts[len(hosts)-1].URL+"/stream-divergence/precheck", body)
			e, _ := r.json["error"].(map[string]any)
			if r.status != 429 || r.header.Get("Retry-After") != "4" || e["retry_after_ms"] != float64(3800) || e["min_interval_ms"] != float64(5000) {
				t.Fatalf("inside the interval: %d %s %s", r.status, r.header.Get("Retry-After"), r.raw)
			}
		})
	}
}

func TestFreeTierKeysAndCounts(t *testing.T) {
	clock := &fixedClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	h := testhost.Start(t, testhost.Options{Now: clock.Now}, sdPkg)
	url := h.URL + "/stream-divergence/precheck"
	// a refused pre-check counts as a call (keyed by the client address)
	if r := post(t, url, []byte(`[]`)); r.status != 400 || errorCode(r) != "body_not_object" {
		t.Fatalf("refused pre-check: %d", r.status)
	}
	if r := post(t, url, precheckBody("")); r.status != 429 {
		t.Errorf("same address inside the interval: %d", r.status)
	}
	// a proven wallet is its own key; a wallet the body names without a
	// proof is the address's; a malformed caller is refused and counted
	// against the address
	key, wallet := walletOf(9)
	if r := provenPost(t, url, precheckBody(wallet), key); r.status != 200 || freeTierOf(r)["counted"] != "wallet" {
		t.Errorf("proven wallet: %d %.200s", r.status, r.raw)
	}
	if r := post(t, url, precheckBody(callerWallet)); r.status != 429 || freeTierOf(r)["counted"] != "address" {
		t.Errorf("a wallet named without a proof, inside the address's interval: %d %.200s", r.status, r.raw)
	}
	clock.Add(5 * time.Second)
	if r := post(t, url, precheckBody("not-a-wallet")); r.status != 400 || errorCode(r) != "caller_invalid" {
		t.Errorf("malformed caller: %d %s", r.status, r.raw)
	}
	if r := post(t, url, []byte(`{"caller":7}`)); r.status != 429 {
		t.Errorf("a non-string caller is keyed by the address: %d", r.status)
	}
	for _, l := range []string{"/metrics", "/stream-divergence/metrics"} {
		metricsWith(t, h.URL+l,
			`assay_calls_total{service="stream-divergence",tier="free"} 3`,
			`assay_free_tier_refusals_total{reason="interval",service="stream-divergence"} 3`,
			`assay_refusals_total{code="caller_invalid",service="stream-divergence"} 1`,
			`assay_refusals_total{code="body_not_object",service="stream-divergence"} 1`,
			`assay_refusals_total{code="siwx_challenge",service="stream-divergence"} 1`,
			`assay_requests_total{route="precheck",service="stream-divergence",status="429"} 3`)
	}
}

// A submission the family refuses is answered with the family's refusal
// even when its caller is malformed too (context-composition's order puts
// caller_invalid, R-6, after the family's ); it still counts,
// against the client address.
func TestFamilyRefusalBeforeCallerInvalid(t *testing.T) {
	clock := &fixedClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	h := testhost.Start(t, testhost.Options{Now: clock.Now}, sdPkg)
	url := h.URL + "/stream-divergence/precheck"
	bad := []byte(`{"caller":"not-a-wallet","streamed_capture":{"chunks":["!!"]},"reference_output":{"chunks":[]}}`)
	if r := post(t, url, bad); r.status != 400 || errorCode(r) != "chunk_not_base64" {
		t.Fatalf("refused submission, malformed caller: %d %s", r.status, r.raw)
	}
	if r := post(t, url, precheckBody("")); r.status != 429 {
		t.Errorf("the refused pre-check did not count against the address: %d", r.status)
	}
	clock.Add(5 * time.Second)
	if r := post(t, url, precheckBody("not-a-wallet")); r.status != 400 || errorCode(r) != "caller_invalid" {
		t.Errorf("an accepted submission with a malformed caller: %d %s", r.status, r.raw)
	}
}
