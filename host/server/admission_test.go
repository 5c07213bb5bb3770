package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/admission"
	"github.com/assay-audit/assay/host/internal/testhost"
)

// held is a request measuring in the test family until its caller gives
// up: it keeps a working place for as long as a test needs.
type held struct {
	cancel context.CancelFunc
	status chan int
}

func hold(t *testing.T, url string) held {
	t.Helper()
	return holdWith(t, url, `{"sleep_ms":60000}`)
}

// holdWith is hold with a body of the test's.
func holdWith(t *testing.T, url, body string) held {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	h := held{cancel: cancel, status: make(chan int, 1)}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			h.status <- 0 // given up by the test
			return
		}
		resp.Body.Close()
		h.status <- resp.StatusCode
	}()
	return h
}

// until polls cond: the host's state changes in its own goroutines.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i == 1000 {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gauge is the value of an admission gauge of the test family's paid ops
// (kind "op") or pre-checks.
func gauge(t *testing.T, h *testhost.Host, name, kind string) string {
	t.Helper()
	m := do(t, "GET", h.URL+"/test-family/metrics", nil, nil)
	prefix := name + `{kind="` + kind + `",service="test-family"} `
	for _, line := range strings.Split(string(m.raw), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line[len(prefix):]
		}
	}
	return "absent"
}

// posted POSTs body in the background; the status arrives on the channel
// (0 when the request failed).
func posted(url string, body []byte) chan reply {
	out := make(chan reply, 1)
	go func() {
		resp, err := http.Post(url, "application/json", strings.NewReader(string(body)))
		if err != nil {
			out <- reply{}
			return
		}
		resp.Body.Close()
		out <- reply{status: resp.StatusCode}
	}()
	return out
}

// With every working place taken and the queue full, a request is refused
// at once with a signed 503 service_busy and Retry-After; a queued request
// is measured when a place frees; the gauges follow.
func TestBusyServiceRefusesPastItsQueue(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true, Admission: admission.Limits{Working: 1, Waiting: 1, Wait: time.Minute}}, testPkg)
	url := h.URL + "/test-family/measure"
	fam := h.Families["test-family"]
	a := hold(t, url)
	until(t, "the first request measuring", func() bool { return fam.Measuring() == 1 })
	queued := posted(url, []byte(`{}`))
	until(t, "the second request waiting", func() bool { return gauge(t, h, "assay_requests_waiting", "op") == "1" })
	if w := gauge(t, h, "assay_requests_working", "op"); w != "1" {
		t.Errorf("working gauge %s, want 1", w)
	}
	c := newCanary(t)
	r := do(t, "POST", url+"?q="+c.value, []byte(`{"pad":"`+c.value+`"}`), map[string]string{"X-Note": c.value})
	if r.status != 503 || errorCode(r) != "service_busy" || r.header.Get("Retry-After") != "60" {
		t.Fatalf("past the queue: %d %s (Retry-After %q: the wait, 1 min)", r.status, r.raw, r.header.Get("Retry-After"))
	}
	verified(t, h, r)
	c.find(t, "the busy answer", r.raw)
	if p, _ := r.json["payment"].(map[string]any); p == nil || p["charged"] == true {
		t.Errorf("busy answer's payment member: %v", r.json["payment"])
	}
	if fam.Measuring() != 1 {
		t.Errorf("the refused request reached the plugin: %d measuring", fam.Measuring())
	}
	select {
	case q := <-queued:
		t.Fatalf("the queued request was answered while the place was held: %d", q.status)
	default:
	}
	a.cancel()
	if q := <-queued; q.status != 200 {
		t.Fatalf("the queued request: %d", q.status)
	}
	<-a.status
	until(t, "the gauges back to 0", func() bool {
		return gauge(t, h, "assay_requests_working", "op") == "0" && gauge(t, h, "assay_requests_waiting", "op") == "0"
	})
	m := do(t, "GET", h.URL+"/metrics", nil, nil)
	if !strings.Contains(string(m.raw), `assay_refusals_total{code="service_busy",service="test-family"} 1`) {
		t.Error("the busy refusal is not counted in /metrics")
	}
	c.find(t, "/metrics", m.raw)
	c.find(t, "the host log", []byte(h.Log.String()))
}

// A queued request whose wait runs out is refused busy; pre-checks have
// places of their own, so they are answered while paid ops wait.
func TestQueuedRequestsWaitRunsOut(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true, Admission: admission.Limits{Working: 1, Waiting: 4, Wait: 100 * time.Millisecond}}, testPkg)
	fam := h.Families["test-family"]
	a := hold(t, h.URL+"/test-family/measure")
	defer a.cancel()
	until(t, "the first request measuring", func() bool { return fam.Measuring() == 1 })
	if r := post(t, h.URL+"/test-family/measure", []byte(`{}`)); r.status != 503 || errorCode(r) != "service_busy" || r.header.Get("Retry-After") != "1" {
		t.Errorf("an op while the place is held: %d %s", r.status, r.raw)
	}
	if g := gauge(t, h, "assay_requests_waiting", "op"); g != "0" {
		t.Errorf("waiting gauge after the wait ran out: %s", g)
	}
	if r := post(t, h.URL+"/test-family/precheck", []byte(`{}`)); r.status != 200 {
		t.Errorf("a pre-check while the paid place is held: %d %s", r.status, r.raw)
	}
	a.cancel()
	<-a.status
	until(t, "the place freed", func() bool { return gauge(t, h, "assay_requests_working", "op") == "0" })
	if r := post(t, h.URL+"/test-family/measure", []byte(`{}`)); r.status != 200 {
		t.Errorf("after the place freed: %d %s", r.status, r.raw)
	}
}

// A paid request refused busy never reaches the payment gate: the payment
// it carried is not settled and still buys a report afterwards.
func TestBusyRefusalLeavesThePaymentUntouched(t *testing.T) {
	h := startPaidWith(t, testhost.Options{Admission: admission.Limits{Working: 1, Waiting: 0, Wait: time.Minute}}, testPkg)
	url := h.URL + "/test-family/measure"
	sig := freshPayment(t, url, []byte(`{}`))
	// another caller's paid request measures until it gives up
	fam := h.Families["test-family"]
	other, _ := newPayer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		_, _ = other.Call(ctx, url, []byte(`{"sleep_ms":60000}`))
	}()
	until(t, "the other paid request measuring", func() bool { return fam.Measuring() == 1 })
	r := do(t, "POST", url, []byte(`{}`), map[string]string{"PAYMENT-SIGNATURE": sig})
	p, _ := r.json["payment"].(map[string]any)
	if r.status != 503 || errorCode(r) != "service_busy" || p["charged"] != false {
		t.Fatalf("a paid request while busy: %d %s", r.status, r.raw)
	}
	if r.header.Get("PAYMENT-RESPONSE") != "" || r.header.Get("ASSAY-DELIVERY-MARKER") != "" {
		t.Error("a busy refusal carries payment headers")
	}
	cancel()
	<-gone
	until(t, "the place freed", func() bool { return gauge(t, h.Host, "assay_requests_working", "op") == "0" })
	var settled int
	_ = h.Store.DB().QueryRow(`SELECT COUNT(*) FROM payment_claims WHERE state <> 'settling'`).Scan(&settled)
	if settled != 0 {
		t.Fatalf("%d settlements after a busy refusal", settled)
	}
	if ok := do(t, "POST", url, []byte(`{}`), map[string]string{"PAYMENT-SIGNATURE": sig}); ok.status != 200 {
		t.Fatalf("the untouched payment afterwards: %d %s", ok.status, ok.raw)
	}
	// the session closes once its ledger line is committed, just after the
	// answer went out
	until(t, "no request measuring at the end", func() bool { return fam.Measuring() == 0 })
}

// A caller that goes away while waiting frees its place in the queue and
// is counted as never answered (499), not as a 200.
func TestCallerGoneWhileWaiting(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true, Admission: admission.Limits{Working: 1, Waiting: 1, Wait: time.Minute}}, testPkg)
	url := h.URL + "/test-family/measure"
	a := hold(t, url)
	defer a.cancel()
	until(t, "the first request measuring", func() bool { return h.Families["test-family"].Measuring() == 1 })
	b := hold(t, url)
	until(t, "the second request waiting", func() bool { return gauge(t, h, "assay_requests_waiting", "op") == "1" })
	b.cancel()
	<-b.status
	until(t, "the queue empty", func() bool { return gauge(t, h, "assay_requests_waiting", "op") == "0" })
	until(t, "the request counted", func() bool {
		m := do(t, "GET", h.URL+"/metrics", nil, nil)
		return strings.Contains(string(m.raw), `assay_requests_total{route="measure",service="test-family",status="499"} 1`)
	})
	if r := posted(url, []byte(`{}`)); gauge(t, h, "assay_requests_working", "op") != "1" {
		t.Error("the first request lost its place")
	} else {
		a.cancel()
		if got := <-r; got.status != 200 {
			t.Errorf("the next request: %d", got.status)
		}
	}
}

// Small requests (bodies sent to the plugin inline) have working places
// of their own: two of them measure at once beside a large one holding
// the one working place, a third small one waits for a small place (not
// the large one's), and each kind's gauges say so.
func TestSmallRequestsHavePlacesOfTheirOwn(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true, Admission: admission.Limits{Working: 1, Waiting: 0, SmallWorking: 2, Wait: time.Minute}}, testPkg)
	url := h.URL + "/test-family/measure"
	fam := h.Families["test-family"]
	large := holdWith(t, url, `{"sleep_ms":60000,"pad":"`+strings.Repeat("x", 70<<10)+`"}`)
	until(t, "the large request measuring", func() bool { return fam.Measuring() == 1 })
	a, b := hold(t, url), hold(t, url)
	until(t, "two small requests measuring beside it", func() bool { return fam.Measuring() == 3 })
	if w, s := gauge(t, h, "assay_requests_working", "op"), gauge(t, h, "assay_requests_working", "op_small"); w != "1" || s != "2" {
		t.Errorf("working gauges: op %s, op_small %s; want 1 and 2", w, s)
	}
	queued := posted(url, []byte(`{}`))
	until(t, "a third small request waiting for a small place", func() bool { return gauge(t, h, "assay_requests_waiting", "op_small") == "1" })
	// the large kind has no waiting room at all: another large one is busy
	r := do(t, "POST", url, []byte(`{"pad":"`+strings.Repeat("y", 70<<10)+`"}`), nil)
	if r.status != 503 || errorCode(r) != "service_busy" {
		t.Fatalf("a second large request: %d %s, want 503 service_busy", r.status, r.raw)
	}
	a.cancel()
	if q := <-queued; q.status != 200 {
		t.Fatalf("the queued small request: %d", q.status)
	}
	b.cancel()
	large.cancel()
	<-a.status
	<-b.status
	<-large.status
}
