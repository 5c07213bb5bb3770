package x402

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var reqs = Requirements{Scheme: "exact", Network: SolanaDevnet, Amount: "50000", Asset: USDCDevnet,
	PayTo: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", MaxTimeoutSeconds: 300,
	Extra: map[string]any{"feePayer": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"}}

func TestDecodePaymentIsStrict(t *testing.T) {
	good := PaymentPayload{X402Version: 2, Accepted: reqs, Payload: SVMPayload{Transaction: "AQID"}}
	h, _ := EncodeHeader(good)
	p, err := DecodePayment(h)
	if err != nil || p.Payload.Transaction != "AQID" || !reqs.Matches(p.Accepted) {
		t.Fatalf("good header: %v", err)
	}
	raw, _ := json.Marshal(good)
	v1, _ := EncodeHeader(map[string]any{"x402Version": 1, "payload": map[string]any{"transaction": "AQID"}})
	noTx, _ := EncodeHeader(PaymentPayload{X402Version: 2, Accepted: reqs})
	for name, c := range map[string]struct {
		h   string
		err error
	}{
		"url-safe alphabet": {strings.NewReplacer("+", "-", "/", "_").Replace(base64.StdEncoding.EncodeToString(append(raw, 0xfb, 0xff))), ErrHeaderEncoding},
		"unpadded":          {strings.TrimRight(base64.StdEncoding.EncodeToString(append(raw, ' ')), "="), ErrHeaderEncoding},
		"not JSON":          {base64.StdEncoding.EncodeToString([]byte("{nope")), ErrHeaderJSON},
		"trailing data":     {base64.StdEncoding.EncodeToString(append(append([]byte{}, raw...), []byte(" {}")...)), ErrHeaderJSON},
		"version 1":         {v1, ErrHeaderVersion},
		"no transaction":    {noTx, ErrHeaderJSON},
		"too large":         {strings.Repeat("A", MaxHeaderBytes+4), ErrHeaderSize},
	} {
		if _, err := DecodePayment(c.h); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", name, err, c.err)
		}
	}
}

func TestRequirementsMatching(t *testing.T) {
	got := reqs
	got.Extra = map[string]any{"feePayer": reqs.Extra["feePayer"], "recentBlockhash": "other"}
	if !reqs.Matches(got) {
		t.Error("a changed dynamic extra key must still match")
	}
	for name, mutate := range map[string]func(*Requirements){
		"amount":   func(r *Requirements) { r.Amount = "49999" },
		"payTo":    func(r *Requirements) { r.PayTo = "x" },
		"asset":    func(r *Requirements) { r.Asset = USDCMainnet },
		"network":  func(r *Requirements) { r.Network = SolanaMainnet },
		"timeout":  func(r *Requirements) { r.MaxTimeoutSeconds = 60 },
		"feePayer": func(r *Requirements) { r.Extra = map[string]any{"feePayer": "other"} },
		"feePayer not a string": func(r *Requirements) {
			r.Extra = map[string]any{"feePayer": []any{[]any{reqs.Extra["feePayer"]}}}
		},
		"feePayer absent": func(r *Requirements) { r.Extra = map[string]any{} },
	} {
		r := reqs
		r.Extra = map[string]any{"feePayer": reqs.Extra["feePayer"]}
		mutate(&r)
		if reqs.Matches(r) {
			t.Errorf("%s changed but matched", name)
		}
	}
}

func FuzzDecodePayment(f *testing.F) {
	h, _ := EncodeHeader(PaymentPayload{X402Version: 2, Accepted: reqs, Payload: SVMPayload{Transaction: "AQID"}})
	f.Add(h)
	f.Add("")
	f.Add("e30=")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePayment(s)
		if (p == nil) == (err == nil) {
			t.Fatal("exactly one of payload and error")
		}
		if err == nil && (p.X402Version != 2 || p.Payload.Transaction == "") {
			t.Fatal("accepted an incomplete payload")
		}
	})
}

// facilitatorStub speaks the spec's JSON; behaviour is per path.
type facilitatorStub struct {
	verify, settle func(w http.ResponseWriter, body facilitatorRequest)
	calls          map[string]*atomic.Int64
}

func newStub(t *testing.T) (*facilitatorStub, *httptest.Server) {
	s := &facilitatorStub{calls: map[string]*atomic.Int64{"/verify": {}, "/settle": {}, "/supported": {}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls[r.URL.Path].Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/supported":
			_, _ = w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"` + SolanaDevnet + `","extra":{"feePayer":"FeePayer111"}}],"extensions":[],"signers":{"solana:*":["Other111"]}}`))
			return
		}
		var body facilitatorRequest
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.X402Version != 2 || body.PaymentPayload == nil {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"bad request"}`))
			return
		}
		if r.URL.Path == "/verify" {
			s.verify(w, body)
		} else {
			s.settle(w, body)
		}
	}))
	t.Cleanup(srv.Close)
	return s, srv
}

func TestRemoteFacilitator(t *testing.T) {
	ctx := context.Background()
	stub, srv := newStub(t)
	r, err := NewRemote(ctx, srv.URL, SolanaDevnet, "")
	if err != nil || r.FeePayer() != "FeePayer111" || r.Offline() {
		t.Fatalf("supported: %v %q", err, r.FeePayer())
	}
	r.Retries = 2
	p := &PaymentPayload{X402Version: 2, Accepted: reqs, Payload: SVMPayload{Transaction: "AQID"}}

	stub.verify = func(w http.ResponseWriter, _ facilitatorRequest) {
		_, _ = w.Write([]byte(`{"isValid":true,"payer":"Payer111"}`))
	}
	if v, err := r.Verify(ctx, p, reqs); err != nil || v.Reason != "" || v.Payer != "Payer111" {
		t.Errorf("valid: %+v %v", v, err)
	}
	// invalid answered with 400 and the verdict body: an answer, not an error
	stub.verify = func(w http.ResponseWriter, _ facilitatorRequest) {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"isValid":false,"invalidReason":"invalid_exact_svm_payload_amount_mismatch","payer":"Payer111"}`))
	}
	if v, err := r.Verify(ctx, p, reqs); err != nil || v.Reason != "invalid_exact_svm_payload_amount_mismatch" {
		t.Errorf("invalid: %+v %v", v, err)
	}
	// a 5xx on verify is retried (safe); a 4xx without a verdict is an error
	n := stub.calls["/verify"].Load()
	stub.verify = func(w http.ResponseWriter, _ facilitatorRequest) { w.WriteHeader(502) }
	if _, err := r.Verify(ctx, p, reqs); !errors.Is(err, ErrFacilitator) || stub.calls["/verify"].Load()-n != 3 {
		t.Errorf("5xx verify: %v after %d calls", err, stub.calls["/verify"].Load()-n)
	}
	stub.verify = func(w http.ResponseWriter, _ facilitatorRequest) {
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"error":"x"}`))
	}
	if _, err := r.Verify(ctx, p, reqs); !errors.Is(err, ErrFacilitator) {
		t.Errorf("404 verify: %v", err)
	}

	stub.settle = func(w http.ResponseWriter, _ facilitatorRequest) {
		_, _ = w.Write([]byte(`{"success":true,"payer":"Payer111","transaction":"5sig","network":"` + SolanaDevnet + `"}`))
	}
	if s, err := r.Settle(ctx, p, reqs); err != nil || s.TxID != "5sig" || s.Payer != "Payer111" || s.FeeLamports != nil {
		t.Errorf("settle: %+v %v", s, err)
	}
	stub.settle = func(w http.ResponseWriter, _ facilitatorRequest) {
		_, _ = w.Write([]byte(`{"success":false,"errorReason":"insufficient_funds","payer":"Payer111","transaction":"","network":"` + SolanaDevnet + `"}`))
	}
	if s, err := r.Settle(ctx, p, reqs); err != nil || s.Reason != "insufficient_funds" {
		t.Errorf("settle failure: %+v %v", s, err)
	}
	// sent and not yet confirmed is not a refusal: the outcome is unknown
	stub.settle = func(w http.ResponseWriter, _ facilitatorRequest) {
		_, _ = w.Write([]byte(`{"success":false,"errorReason":"settlement_pending","payer":"Payer111","transaction":"5sig","network":"` + SolanaDevnet + `"}`))
	}
	if s, err := r.Settle(ctx, p, reqs); !errors.Is(err, ErrFacilitator) || s != nil {
		t.Errorf("a pending settlement: %+v %v", s, err)
	}
	// a settle that may have arrived is never sent twice
	n = stub.calls["/settle"].Load()
	stub.settle = func(w http.ResponseWriter, _ facilitatorRequest) { w.WriteHeader(500) }
	if _, err := r.Settle(ctx, p, reqs); !errors.Is(err, ErrFacilitator) || stub.calls["/settle"].Load()-n != 1 {
		t.Errorf("5xx settle: %v after %d calls", err, stub.calls["/settle"].Load()-n)
	}
	// a facilitator that hangs: the call's own timeout ends it
	r.SettleTimeout = 200 * time.Millisecond
	// (it answers only after Settle returns, so a missing timeout hangs
	// the test instead of passing on a slow answer)
	release := make(chan struct{})
	stub.settle = func(w http.ResponseWriter, _ facilitatorRequest) { <-release }
	_, err = r.Settle(ctx, p, reqs)
	close(release)
	if !errors.Is(err, ErrFacilitator) {
		t.Errorf("hanging settle: %v", err)
	}
	// a refused connection is provably unsent: settle may retry it
	dead := &Remote{BaseURL: "http://127.0.0.1:1", Client: &http.Client{}, VerifyTimeout: time.Second, SettleTimeout: time.Second, Retries: 1}
	if _, err := dead.Settle(ctx, p, reqs); !errors.Is(err, ErrFacilitator) {
		t.Errorf("refused connection: %v", err)
	}
	if _, err := NewRemote(ctx, srv.URL, SolanaMainnet, ""); err != nil {
		t.Errorf("signers fallback: %v", err)
	}
}

// A facilitator that never answers /supported holds the host's start for
// SupportedWithin at most, retries included, and is named plainly.
func TestAFacilitatorThatNeverAnswersIsBoundedAtStart(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	done := make(chan error, 1)
	go func() {
		_, err := NewRemote(context.Background(), srv.URL, SolanaDevnet, "")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no answer to /supported within") || strings.Contains(err.Error(), srv.URL) {
			t.Fatalf("a silent facilitator: %v", err)
		}
	case <-time.After(3 * SupportedWithin):
		t.Fatal("the start was held past three times SupportedWithin")
	}
}
