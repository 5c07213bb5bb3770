package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/store"
)

var sdKey = servicestate.Key{Service: "stream-divergence", CriteriaID: "stream-divergence/v1", CriteriaRevision: "1.0.0"}

// A stopped service answers its pre-check and its paid op with a signed
// 503 service_stopped carrying the operator's reason, before the payment
// gate (the payment it carried stays unspent); its criteria are still
// served; the catalog and /metrics show the state. Resumed, it serves
// again, and the untouched payment buys a report.
func TestAStoppedServiceRefusesBeforeThePaymentGate(t *testing.T) {
	h := startPaidWith(t, testhost.Options{Board: true}, sdPkg)
	ctx := context.Background()
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab"}, []string{"ab"})
	sig := freshPayment(t, url, body)
	const reason = "criteria audit in progress (ticket 41)"
	if err := h.Board.Stop(ctx, sdKey, reason, "operator:test"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/stream-divergence/precheck", "/stream-divergence/compare", "/precheck", "/compare"} {
		r := do(t, "POST", h.URL+path, body, map[string]string{"PAYMENT-SIGNATURE": sig})
		e, _ := r.json["error"].(map[string]any)
		if r.status != 503 || errorCode(r) != "service_stopped" || e["reason"] != reason || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s while stopped: %d %s", path, r.status, r.raw)
		}
		verified(t, h.Host, r)
		if p, ok := r.json["payment"].(map[string]any); ok && (p["charged"] != false || p["examined"] != false) {
			t.Errorf("%s: payment member %v", path, p)
		}
	}
	var claims int
	_ = h.Store.DB().QueryRow(`SELECT COUNT(*) FROM payment_claims`).Scan(&claims)
	if claims != 0 {
		t.Fatalf("%d claims while stopped", claims)
	}
	if r := do(t, "GET", h.URL+"/stream-divergence/criteria", nil, nil); r.status != 200 || !strings.Contains(string(r.raw), `"criteria_id"`) {
		t.Errorf("criteria while stopped: %d", r.status)
	}
	cat := do(t, "GET", h.URL+"/", nil, nil)
	if !strings.Contains(string(cat.raw), `"state": "stopped"`) || !strings.Contains(string(cat.raw), reason) {
		t.Errorf("catalog while stopped: %s", cat.raw)
	}
	page := do(t, "GET", h.URL+"/", nil, map[string]string{"Accept": "text/html"})
	if !strings.Contains(string(page.raw), "stopped: "+reason) {
		t.Errorf("catalog page while stopped: %s", page.raw)
	}
	m := do(t, "GET", h.URL+"/metrics", nil, nil)
	if !strings.Contains(string(m.raw), `assay_service_stopped{criteria_id="stream-divergence/v1",criteria_revision="1.0.0",service="stream-divergence"} 1`) {
		t.Errorf("metrics while stopped lack the gauge")
	}

	if _, err := h.Store.AppendServiceEvent(ctx, store.ServiceEvent{At: h.clock.Now(), Service: sdKey.Service, CriteriaID: sdKey.CriteriaID,
		CriteriaRevision: sdKey.CriteriaRevision, Action: store.ServiceResume, Reason: "corpus passed", Actor: "operator:test"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Board.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig}); r.status != 200 {
		t.Fatalf("the untouched payment after the resume: %d %s", r.status, r.raw)
	}
	m = do(t, "GET", h.URL+"/metrics", nil, nil)
	if !strings.Contains(string(m.raw), `assay_service_stopped{criteria_id="stream-divergence/v1",criteria_revision="1.0.0",service="stream-divergence"} 0`) {
		t.Errorf("metrics after the resume")
	}
}

// The first answer that fails the pre-signing self-check is withheld and
// stops its service in the store, the reason naming the rule; another
// host on the store stops serving it at its next refresh.
func TestASelfCheckFailureStopsTheService(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Board: true, StopOnSelfCheck: true}, testPkg)
	r := post(t, h.URL+"/test-family/measure", []byte(`{"forbidden_word":true}`))
	if r.status != 500 || errorCode(r) != "self_check_failed" {
		t.Fatalf("forged report: %d %s", r.status, r.raw)
	}
	r = post(t, h.URL+"/test-family/measure", []byte(`{}`))
	e, _ := r.json["error"].(map[string]any)
	reason, _ := e["reason"].(string)
	if r.status != 503 || errorCode(r) != "service_stopped" || !strings.HasPrefix(reason, "self-check: ") || len(reason) < 20 {
		t.Fatalf("after the self-check failure: %d %s", r.status, r.raw)
	}
	events, err := h.Store.ServiceEvents(context.Background())
	if err != nil || len(events) != 1 || events[0].Action != "stop" || events[0].Actor != "self-check" || events[0].Service != "test-family" ||
		events[0].CriteriaID != "test-family/v1" || events[0].Reason != reason {
		t.Fatalf("store rows %+v %v", events, err)
	}
	other := servicestate.New(h.Store, nil, nil)
	if err := other.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := other.State(servicestate.Key{Service: "test-family", CriteriaID: "test-family/v1", CriteriaRevision: "0.0.1"}); !st.Stopped || st.Reason != reason {
		t.Errorf("another host's board: %+v", st)
	}
}
