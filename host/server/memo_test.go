package server_test

import (
	"testing"

	"github.com/assay-audit/assay/host/x402"
)

// Each 402 asks for a memo of the host's own ("assay:" and 32 hex digits),
// a fresh one each time, so two payments of one price under one blockhash
// never collide and the host can tell its transfers on the chain. A
// payment carrying another memo, or a transaction whose memo is not the
// one its accepted requirements name, is refused before anything is
// measured, and nothing is charged.
func TestEachPaymentCarriesTheHostsMemo(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab"}, []string{"ab"})
	memos := map[string]bool{}
	var reqs x402.Requirements
	for i := 0; i < 3; i++ {
		var pr x402.PaymentRequired
		decodeHeader(t, post(t, url, body).header.Get("PAYMENT-REQUIRED"), &pr)
		reqs = pr.Accepts[0]
		m, _ := reqs.Extra["memo"].(string)
		if !x402.IsHostMemo(m) || len(m) != len("assay:")+32 {
			t.Fatalf("a 402's memo: %q", m)
		}
		memos[m] = true
	}
	if len(memos) != 3 {
		t.Errorf("three 402s gave %d memos", len(memos))
	}

	payer, _ := newPayer(t)
	res := x402.Resource{URL: url}
	refused := func(what string, r x402.Requirements, accepted x402.Requirements) {
		t.Helper()
		sig, err := payer.Sign(r, res)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := x402.DecodePayment(sig)
		p.Accepted = accepted
		sig, _ = x402.EncodeHeader(p)
		got := do(t, "POST", url, body, map[string]string{x402.HeaderSignature: sig})
		e, _ := got.json["error"].(map[string]any)
		if got.status != 402 || errorCode(got) != "payment_invalid" || e["reason"] != "invalid_exact_svm_payload_memo_mismatch" {
			t.Errorf("%s: %d %s", what, got.status, got.raw)
		}
	}
	other := withExtra(reqs, "memo", "pay me")
	refused("a memo not the host's", other, other)
	refused("a transaction whose memo is not its requirements'", withExtra(reqs, "memo", x402.MemoPrefix+"00000000000000000000000000000000"), reqs)
	noMemo := withExtra(reqs, "memo", nil)
	refused("no memo", noMemo, noMemo)
	if n := len(h.Lines(t, 0)); n != 0 {
		t.Errorf("%d ledger lines", n)
	}
	// and the payment the 402 asked for is served
	if paid, err := payer.Call(t.Context(), url, body); err != nil || paid.Status != 200 {
		t.Fatalf("a paid call: %v %+v", err, paid)
	}
}

func withExtra(r x402.Requirements, k string, v any) x402.Requirements {
	extra := map[string]any{}
	for key, val := range r.Extra {
		extra[key] = val
	}
	if v == nil {
		delete(extra, k)
	} else {
		extra[k] = v
	}
	r.Extra = extra
	return r
}
