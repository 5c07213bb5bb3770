package server_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
)

// freshPayment builds a signed payment for url without spending it.
func freshPayment(t *testing.T, url string, body []byte) string {
	payer, _ := newPayer(t)
	return unusedPayment(t, payer, url, body)
}

// settleOnly is a host that checks and settles a payment and dies before
// it issues the report: what a SIGKILL between settlement and issue
// leaves in the store where settling moved money (a chain, a remote
// facilitator: the claim is written settled before the report). The
// embedded facilitator offline writes nothing until the issue, so its
// pending claim is written here as such a host would have.
func settleOnly(t *testing.T, st *store.Store, g *x402.Gate, url, sig string) *payment.Receipt {
	r := httptest.NewRequest("POST", url, strings.NewReader("{}"))
	r.Header.Set("PAYMENT-SIGNATURE", sig)
	req := payment.Request{HTTP: r, Service: "stream-divergence", Op: "compare", Price: payment.Price{USDCUnits: 50000, Label: "$0.05"}}
	adm, d, err := g.Admit(context.Background(), req)
	if err != nil || d != nil {
		t.Fatalf("admit: %v %+v", err, d)
	}
	rc, d, err := g.Settle(context.Background(), req, adm)
	if err != nil || d != nil || rc.TransactionID == "" || rc.Claim == nil {
		t.Fatalf("settle: %v %+v %+v", err, d, rc)
	}
	if p := rc.Claim.Pending; p != nil {
		if opened, err := st.OpenSettledClaim(context.Background(), *p, p.Created); err != nil || !opened {
			t.Fatalf("the settled claim: %v %v", opened, err)
		}
	}
	return rc
}

// A payment settled by a host that died before delivering is redeemed by
// re-sending the same paid request with the same payment, on another host
// on the store: one report, one ledger line, no second settlement; after
// that it is spent. While the dead host's lease runs, the re-send is told
// to come back (503 payment_in_progress, Retry-After), charged nothing more.
func TestASettledUndeliveredPaymentIsRedeemedOnAnotherHost(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab"}, []string{"ab"})
	sig := freshPayment(t, url, body)
	crashed := settleOnly(t, h.Store, h.gate(t, "hostb"), url, sig)
	if lines, _ := h.Store.Lines(context.Background()); len(lines) != 0 {
		t.Fatal("a settlement without delivery wrote a ledger line")
	}

	r := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig})
	p, _ := r.json["payment"].(map[string]any)
	if r.status != 503 || errorCode(r) != "payment_in_progress" || r.header.Get("Retry-After") == "" || p["charged"] != true {
		t.Fatalf("re-send inside the dead host's lease: %d %s", r.status, r.raw)
	}
	verified(t, h.Host, r)

	h.clock.Add(11 * time.Second) // the lease (10 s with the local facilitator) runs out
	r = do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig})
	if r.status != 200 || r.json["kind"] != "report" {
		t.Fatalf("re-send after the lease: %d %s", r.status, r.raw)
	}
	verified(t, h.Host, r)
	var settle x402.SettleResponse
	decodeHeader(t, r.header.Get("PAYMENT-RESPONSE"), &settle)
	if settle.Transaction != crashed.TransactionID {
		t.Errorf("delivered under transaction %s, settled as %s", settle.Transaction, crashed.TransactionID)
	}
	lines := h.Lines(t, 1)
	if len(lines) != 1 || *lines[0].TxID != crashed.TransactionID {
		t.Fatalf("ledger after redemption: %+v", lines)
	}
	resentUntilTheWindowEnds(t, h, url, body, sdBody([]string{"ab"}, []string{"ac"}), map[string]string{"PAYMENT-SIGNATURE": sig}, r)
	if lines, _ = h.Store.Lines(context.Background()); len(lines) != 1 {
		t.Errorf("%d ledger lines, want 1", len(lines))
	}
}

// A host that restarts releases the leases its earlier run held: the
// payment it settled and did not deliver is redeemable at once.
func TestARestartedHostReleasesItsLeases(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"a"}, []string{"b"})
	sig := freshPayment(t, url, body)
	settleOnly(t, h.Store, h.gate(t, "hostb"), url, sig)
	if g := h.gate(t, "hostb"); g.Unspent != 1 {
		t.Errorf("the restarted host found %d undelivered claims, want 1", g.Unspent)
	}
	if r := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig}); r.status != 200 {
		t.Fatalf("re-send after the restart: %d %s", r.status, r.raw)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Errorf("%d ledger lines, want 1", len(lines))
	}
}

// A payment is claimed for the route it paid: the same payment re-sent to
// another op or service is refused, and its claim is untouched.
func TestAClaimedPaymentIsNotRedeemedOnAnotherRoute(t *testing.T) {
	h := startPaid(t, sdPkg, testPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"a"}, []string{"a"})
	sig := freshPayment(t, url, body)
	settleOnly(t, h.Store, h.gate(t, "hostb"), url, sig)
	h.clock.Add(11 * time.Second)
	r := do(t, "POST", h.URL+"/test-family/measure", []byte(`{}`), map[string]string{"PAYMENT-SIGNATURE": sig})
	if r.status != 402 || (errorCode(r) != "payment_invalid" && errorCode(r) != "payment_replayed") {
		t.Fatalf("another route: %d %s", r.status, r.raw)
	}
	if r := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig}); r.status != 200 {
		t.Fatalf("its own route afterwards: %d %s", r.status, r.raw)
	}
}

// payment_in_progress says one thing per claim state, each with its one
// charged value: while another request settles the payment (its outcome
// not known), charged false and a message that says so; once it settled
// and another request delivers, charged true and a message that says the
// payment was taken.
func TestPaymentInProgressSaysOneThingPerClaimState(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab"}, []string{"ab"})
	sig := freshPayment(t, url, body)
	p, err := x402.DecodePayment(sig)
	if err != nil {
		t.Fatal(err)
	}
	id, err := x402.PaymentID(p)
	if err != nil {
		t.Fatal(err)
	}
	now := h.clock.Now()
	// another host opened the claim and is settling it
	if opened, err := h.Store.OpenClaim(context.Background(), store.Claim{PaymentID: id, Service: "stream-divergence", Op: "compare",
		PriceUSDCUnits: 50000, Owner: "hostb", LeaseUntil: now.Add(30 * time.Second), Created: now}); err != nil || !opened {
		t.Fatalf("open claim: %v %v", opened, err)
	}
	answers := map[string]map[string]any{}
	for i := 0; i < 2; i++ {
		r := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig})
		if r.status != 503 || errorCode(r) != "payment_in_progress" {
			t.Fatalf("re-send while another settles: %d %s", r.status, r.raw)
		}
		e, _ := r.json["error"].(map[string]any)
		pay, _ := r.json["payment"].(map[string]any)
		msg, _ := e["message"].(string)
		answers[msg] = pay
	}
	settling := "another request is settling this payment and its outcome is not known yet; nothing was charged by this request; send it again after Retry-After"
	if len(answers) != 1 || answers[settling] == nil || answers[settling]["charged"] != false {
		t.Fatalf("while settling: %v", answers)
	}

	// the same payment settled by a host that died before delivering
	sig2 := freshPayment(t, url, body)
	settleOnly(t, h.Store, h.gate(t, "hostb"), url, sig2)
	r := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig2})
	e, _ := r.json["error"].(map[string]any)
	pay, _ := r.json["payment"].(map[string]any)
	if r.status != 503 || e["message"] != "this payment was taken and another request is delivering its report; nothing more was charged; send it again after Retry-After" || pay["charged"] != true {
		t.Fatalf("while delivering: %d %s", r.status, r.raw)
	}
}
