package server_test

import (
	"context"
	"encoding/json"
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

// An answer that fails the pre-signing self-check is withheld (500,
// nothing charged) and raised to the operator: counted by rule in
// /metrics, named in the log and in /readyz's service entry. The service
// keeps serving: whether an answer is withheld can depend on what a caller
// sent, so one caller must not stop the service for everyone (#42); no
// stop row is written.
func TestAWithheldAnswerLeavesTheServiceServing(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Board: true}, testPkg)
	r := post(t, h.URL+"/test-family/measure", []byte(`{"forbidden_word":true}`))
	if r.status != 500 || errorCode(r) != "self_check_failed" {
		t.Fatalf("forged report: %d %s", r.status, r.raw)
	}
	if r = post(t, h.URL+"/test-family/measure", []byte(`{}`)); r.status != 200 {
		t.Fatalf("after the withheld answer: %d %s", r.status, r.raw)
	}
	if events, err := h.Store.ServiceEvents(context.Background()); err != nil || len(events) != 0 {
		t.Fatalf("service events %+v %v, want none", events, err)
	}
	m := do(t, "GET", h.URL+"/metrics", nil, nil)
	if !strings.Contains(string(m.raw), `assay_self_check_failures_total{rule="forbidden_member_name",service="test-family"} 1`) {
		t.Errorf("the metric by rule:\n%s", m.raw)
	}
	var ready struct {
		Services []struct {
			Service  string `json:"service"`
			State    string `json:"state"`
			Withheld *struct {
				Count    int    `json:"count"`
				LastRule string `json:"last_rule"`
			} `json:"withheld"`
		} `json:"services"`
	}
	rz := do(t, "GET", h.URL+"/readyz", nil, nil)
	if err := json.Unmarshal(rz.raw, &ready); err != nil || len(ready.Services) != 1 {
		t.Fatalf("/readyz: %d %s", rz.status, rz.raw)
	}
	if sv := ready.Services[0]; sv.State != "serving" || sv.Withheld == nil || sv.Withheld.Count != 1 || sv.Withheld.LastRule != "forbidden_member_name" {
		t.Errorf("/readyz's service entry: %s", rz.raw)
	}
	if l := h.Log.String(); !strings.Contains(l, "answer withheld by self-check") {
		t.Errorf("no log line for the withheld answer:\n%s", l)
	}
}
