package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
)

// A house gate on a store stamped as settling on a chain takes no
// payment: a paid call without a payment and a new payment are both
// answered 503 payment_identity_mismatch, naming the store's identity and
// the host's (house), nothing verified or taken, no claim or line
// written; a payment whose report was issued before the stamp is still
// redelivered (nothing moves for it), and the free pre-check serves.
func TestAHouseGateOnAStampedStoreTakesNoPayment(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab"}, []string{"ab"})
	issued := freshPayment(t, url, body)
	first := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": issued})
	if first.status != 200 {
		t.Fatalf("a house proof before the stamp: %d %.300s", first.status, first.raw)
	}
	fresh := freshPayment(t, url, body) // built from a 402 before the stamp
	stamp := store.PaymentIdentity{Network: x402.SolanaDevnet, Asset: x402.USDCDevnet, PayTo: h.payTo, StampedAt: time.Now().UTC()}
	if _, err := h.Store.StampPaymentIdentity(context.Background(), stamp); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the gate reads an unstamped store's stamp again after a second
	for _, sig := range []string{"", fresh} {
		hdr := map[string]string{}
		if sig != "" {
			hdr["PAYMENT-SIGNATURE"] = sig
		}
		r := do(t, "POST", url, body, hdr)
		e, _ := r.json["error"].(map[string]any)
		stored, _ := e["store_identity"].(map[string]any)
		host, _ := e["host_identity"].(map[string]any)
		p, _ := r.json["payment"].(map[string]any)
		if r.status != 503 || errorCode(r) != x402.CodeIdentityMismatch || e["reason"] != x402.ReasonTakesNoMoney ||
			stored["pay_to"] != h.payTo || stored["network"] != x402.SolanaDevnet || host["mode"] != "house" || p["charged"] != false {
			t.Fatalf("a paid call (payment %t) on a stamped store: %d %.600s", sig != "", r.status, r.raw)
		}
		verified(t, h.Host, r)
	}
	again := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": issued})
	if again.status != 200 || string(again.raw) != string(first.raw) {
		t.Fatalf("the issued report re-sent on a stamped store: %d %.300s", again.status, again.raw)
	}
	if r := post(t, h.URL+"/stream-divergence/precheck", precheckBody(base58([]byte("0123456789abcdef0123456789abcdef")))); r.status != 200 {
		t.Fatalf("a pre-check on a stamped store: %d %.300s", r.status, r.raw)
	}
	var claims int
	if err := h.Store.DB().QueryRow(`SELECT COUNT(*) FROM payment_claims`).Scan(&claims); err != nil || claims != 1 {
		t.Errorf("%d claims (%v), want the first payment's alone", claims, err)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Errorf("%d lines, want 1", len(lines))
	}
}

// A gate held by its host (the payment path has not answered) answers a
// paid call 503 payment_unavailable with a Retry-After, nothing verified;
// lifted, it asks for payment.
func TestAHeldGateAnswersPaymentUnavailable(t *testing.T) {
	var gate *x402.Gate
	h := startPaidWrapped(t, testhost.Options{}, func(g *x402.Gate) payment.Gate { gate = g; return g }, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab"}, []string{"ab"})
	sig := freshPayment(t, url, body)
	gate.SetHold(x402.UnreachableHold())
	r := do(t, "POST", url, body, map[string]string{"PAYMENT-SIGNATURE": sig})
	e, _ := r.json["error"].(map[string]any)
	if r.status != 503 || errorCode(r) != "payment_unavailable" || e["reason"] != x402.ReasonPathUnreachable || r.header.Get("Retry-After") != "5" {
		t.Fatalf("a paid call to a held gate: %d %s %.300s", r.status, r.header.Get("Retry-After"), r.raw)
	}
	gate.SetHold(nil)
	if r := post(t, url, body); r.status != 402 || errorCode(r) != "payment_required" {
		t.Fatalf("the hold lifted: %d %.300s", r.status, r.raw)
	}
}
