package server_test

import (
	"testing"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/x402"
)

// A payment is its route's: one made from a route's 402 and sent to
// another route (even at the same price, with that route's requirements
// and resource copied in) is refused before anything is verified or
// settled, naming route_mismatch, and still buys its own route's report
// afterwards. Another amount, pay_to, asset, network or fee payer each
// has its own reason, the exact scheme's where it has one.
func TestAPaymentBuysOnlyItsOwnRoute(t *testing.T) {
	h := startPaid(t, sdPkg, testPkg)
	own := h.URL + "/stream-divergence/compare"
	other := h.URL + "/test-family/measure"
	body := sdBody([]string{"a"}, []string{"a"})
	sig := freshPayment(t, own, body)
	var pp x402.PaymentPayload
	decodeHeader(t, sig, &pp)

	// the other route's own 402: its requirements and resource
	unpaid := do(t, "POST", other, []byte(`{}`), nil)
	var theirs x402.PaymentRequired
	decodeHeader(t, unpaid.header.Get("PAYMENT-REQUIRED"), &theirs)
	if unpaid.status != 402 || len(theirs.Accepts) != 1 {
		t.Fatalf("the other route's 402: %d %s", unpaid.status, unpaid.raw)
	}
	refused := func(what, url string, p x402.PaymentPayload, reqBody []byte, want string) {
		t.Helper()
		forged, err := x402.EncodeHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		r := do(t, "POST", url, reqBody, map[string]string{"PAYMENT-SIGNATURE": forged})
		var pr x402.PaymentRequired
		decodeHeader(t, r.header.Get("PAYMENT-REQUIRED"), &pr)
		if r.status != 402 || errorCode(r) != "payment_invalid" || pr.Error != want {
			t.Errorf("%s: %d %s / %q, want 402 payment_invalid %q", what, r.status, r.raw, pr.Error, want)
		}
		if p, _ := r.json["payment"].(map[string]any); p["charged"] != false {
			t.Errorf("%s: payment member %v", what, p)
		}
	}
	// made as the other route asks (its price, pay_to, resource), but from
	// this route's 402: the memo in the signed transaction names this one
	copied := pp
	copied.Accepted = theirs.Accepts[0]
	copied.Accepted.Extra = map[string]any{}
	for k, v := range theirs.Accepts[0].Extra {
		copied.Accepted.Extra[k] = v
	}
	copied.Accepted.Extra["memo"] = pp.Accepted.Extra["memo"]
	copied.Resource = &theirs.Resource
	refused("this route's payment sent to another route", other, copied, []byte(`{}`), x402.ReasonRouteMismatch)
	// the other route's resource named, on this route
	named := pp
	named.Resource = &theirs.Resource
	refused("another route's resource named", own, named, body, x402.ReasonRouteMismatch)

	for _, c := range []struct {
		what, want string
		change     func(r *x402.Requirements)
	}{
		{"another amount", solana.ReasonAmountMismatch, func(r *x402.Requirements) { r.Amount = "1" }},
		{"another pay_to", solana.ReasonRecipientMismatch, func(r *x402.Requirements) { r.PayTo = "11111111111111111111111111111111" }},
		{"another asset", solana.ReasonMintMismatch, func(r *x402.Requirements) { r.Asset = x402.USDCMainnet }},
		{"another network", x402.ReasonInvalidNetwork, func(r *x402.Requirements) { r.Network = x402.SolanaMainnet }},
		{"another scheme", x402.ReasonUnsupportedScheme, func(r *x402.Requirements) { r.Scheme = "upto" }},
		{"another fee payer", solana.ReasonFeePayerMismatch, func(r *x402.Requirements) {
			extra := map[string]any{}
			for k, v := range r.Extra {
				extra[k] = v
			}
			extra["feePayer"] = "11111111111111111111111111111111"
			r.Extra = extra
		}},
	} {
		p := pp
		c.change(&p.Accepted)
		refused(c.what, own, p, body, c.want)
	}
	// nothing was claimed, settled or written
	if n := claimCount(t, h); n != 0 {
		t.Errorf("%d claims after the refusals, want 0", n)
	}
	// the same payment still buys its own route's report
	if r := do(t, "POST", own, body, map[string]string{"PAYMENT-SIGNATURE": sig}); r.status != 200 {
		t.Fatalf("the payment on its own route afterwards: %d %s", r.status, r.raw)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Errorf("ledger lines %d, want 1", len(lines))
	}
}
