package x402

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/assay-audit/assay/host/solana"
)

// scripted is a seller that answers the n-th request with the n-th step
// and records the payment and marker headers each request carried.
type scripted struct {
	mu    sync.Mutex
	steps []func(w http.ResponseWriter)
	seen  []map[string]string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, map[string]string{HeaderSignature: r.Header.Get(HeaderSignature), HeaderMarker: r.Header.Get(HeaderMarker)})
	step := s.steps[min(len(s.seen), len(s.steps))-1]
	w.Header().Set("Retry-After", "1")
	step(w)
}

func required(t *testing.T) func(w http.ResponseWriter) {
	key := func() string {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		return solana.EncodeBase58(pub)
	}
	pr := PaymentRequired{X402Version: Version, Resource: Resource{URL: "http://seller/op"}, Accepts: []Requirements{{
		Scheme: "exact", Network: SolanaDevnet, Amount: "1000", Asset: USDCDevnet, PayTo: key(), MaxTimeoutSeconds: 60,
		Extra: map[string]any{"feePayer": key(), "recentBlockhash": key()}}}}
	raw, err := json.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := EncodeHeader(json.RawMessage(raw))
	return func(w http.ResponseWriter) { w.Header().Set(HeaderRequired, h); w.WriteHeader(402) }
}

func status(code int, marker string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if marker != "" {
			w.Header().Set(HeaderMarker, marker)
		}
		w.WriteHeader(code)
	}
}

func payer(t *testing.T) *Payer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Payer{Wallet: priv}
}

// A paid request the host answers 503 without a marker (busy: it never
// looked at the payment) is sent again with the same payment; a 503 with
// a marker is redeemed with it, and a busy answer to the redemption keeps
// the marker and sends it again.
func TestPayerResendsWhatTheHostDidNotSpend(t *testing.T) {
	seller := &scripted{steps: []func(http.ResponseWriter){
		required(t), status(503, ""), status(503, "m1"), status(503, ""), status(200, ""),
	}}
	srv := httptest.NewServer(seller)
	defer srv.Close()
	paid, err := payer(t).Call(context.Background(), srv.URL, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if paid.Status != 200 || paid.Marker != "" {
		t.Fatalf("status %d marker %q (a delivered answer leaves nothing to redeem)", paid.Status, paid.Marker)
	}
	if len(seller.seen) != 5 {
		t.Fatalf("%d requests, want 5", len(seller.seen))
	}
	sig := seller.seen[1][HeaderSignature]
	if seller.seen[0][HeaderSignature] != "" || sig == "" || seller.seen[2][HeaderSignature] != sig {
		t.Error("the payment refused busy was not sent again as it was")
	}
	for _, i := range []int{3, 4} {
		if seller.seen[i][HeaderMarker] != "m1" || seller.seen[i][HeaderSignature] != "" {
			t.Errorf("request %d: %v, want the marker alone", i+1, seller.seen[i])
		}
	}
}

// Re-sends stop at the bound, and the answer keeps the marker to redeem
// later; an unpaid request's 503 is not re-sent.
func TestPayerStopsResending(t *testing.T) {
	seller := &scripted{steps: []func(http.ResponseWriter){required(t), status(503, "m1"), status(503, "")}}
	srv := httptest.NewServer(seller)
	defer srv.Close()
	p := payer(t)
	p.MarkerRetries = 1
	paid, err := p.Call(context.Background(), srv.URL, []byte(`{}`))
	if err != nil || paid.Status != 503 || paid.Marker != "m1" || len(seller.seen) != 3 {
		t.Fatalf("%v: status %d marker %q after %d requests", err, paid.Status, paid.Marker, len(seller.seen))
	}
	busy := &scripted{steps: []func(http.ResponseWriter){status(503, "")}}
	srv2 := httptest.NewServer(busy)
	defer srv2.Close()
	if paid, err := p.Call(context.Background(), srv2.URL, []byte(`{}`)); err != nil || paid.Status != 503 || len(busy.seen) != 1 {
		t.Fatalf("unpaid 503: %v %d after %d requests", err, paid.Status, len(busy.seen))
	}
}

// Redeem sends the marker instead of a payment, re-sends it past a busy
// answer, and keeps it in the answer.
func TestPayerRedeems(t *testing.T) {
	seller := &scripted{steps: []func(http.ResponseWriter){status(503, ""), status(200, "")}}
	srv := httptest.NewServer(seller)
	defer srv.Close()
	paid, err := payer(t).Redeem(context.Background(), srv.URL, []byte(`{}`), "m7")
	if err != nil || paid == nil || paid.Status != 200 || paid.Marker != "" || len(seller.seen) != 2 {
		t.Fatalf("%v: %+v after %d requests", err, paid, len(seller.seen))
	}
	for i, h := range seller.seen {
		if h[HeaderMarker] != "m7" || h[HeaderSignature] != "" {
			t.Errorf("request %d: %v", i+1, h)
		}
	}
}

// A redemption that stays busy keeps the marker it sent; one the host
// refuses (spent, expired, invalid) leaves no marker to try again.
func TestRedeemKeepsOnlyARedeemableMarker(t *testing.T) {
	busy := &scripted{steps: []func(http.ResponseWriter){status(503, "")}}
	srv := httptest.NewServer(busy)
	defer srv.Close()
	p := payer(t)
	p.MarkerRetries = 1
	if paid, err := p.Redeem(context.Background(), srv.URL, []byte(`{}`), "m7"); err != nil || paid == nil || paid.Status != 503 || paid.Marker != "m7" {
		t.Fatalf("busy: %v %+v", err, paid)
	}
	spent := &scripted{steps: []func(http.ResponseWriter){status(400, "")}}
	srv2 := httptest.NewServer(spent)
	defer srv2.Close()
	if paid, err := p.Redeem(context.Background(), srv2.URL, []byte(`{}`), "m7"); err != nil || paid == nil || paid.Status != 400 || paid.Marker != "" {
		t.Fatalf("spent: %v %+v", err, paid)
	}
}

// identifierOf is the payment-identifier id a PAYMENT-SIGNATURE carries,
// read as the spec lays the extension out (info.id beside its schema),
// failing the test when the extension is missing or not the spec's shape.
func identifierOf(t *testing.T, header string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		t.Fatalf("payment header: %v", err)
	}
	var p struct {
		Extensions map[string]struct {
			Info   map[string]any `json:"info"`
			Schema map[string]any `json:"schema"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("payment header: %v", err)
	}
	ext, ok := p.Extensions["payment-identifier"]
	if !ok {
		t.Fatalf("no payment-identifier extension in %s", raw)
	}
	id, _ := ext.Info["id"].(string)
	if ext.Info["required"] != false || ext.Schema["type"] != "object" || !ValidIdentifier(id) ||
		!strings.HasPrefix(id, "pay_") || len(id) != len("pay_")+32 {
		t.Fatalf("payment-identifier extension: %+v", ext)
	}
	pp, err := DecodePayment(header)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pp.Identifier(); err != nil || got != id {
		t.Fatalf("PaymentPayload.Identifier: %q %v, the header holds %q", got, err, id)
	}
	return id
}

// Every payment a Payer builds carries a payment-identifier id, the same
// on every re-send of it (in the call, or later with Resend), so a host
// that already answered it answers again instead of charging; two calls
// carry two ids.
func TestPaymentsCarryAnIdentifier(t *testing.T) {
	seller := &scripted{steps: []func(http.ResponseWriter){required(t), status(503, ""), status(200, "")}}
	srv := httptest.NewServer(seller)
	defer srv.Close()
	p := payer(t)
	paid, err := p.Call(context.Background(), srv.URL, []byte(`{}`))
	if err != nil || paid.Status != 200 || len(seller.seen) != 3 {
		t.Fatalf("%v: %+v after %d requests", err, paid, len(seller.seen))
	}
	id := identifierOf(t, seller.seen[1][HeaderSignature])
	if again := identifierOf(t, seller.seen[2][HeaderSignature]); again != id {
		t.Errorf("the re-send in the call carries %q, the payment %q", again, id)
	}
	if paid.Identifier != id || paid.Payment != seller.seen[1][HeaderSignature] {
		t.Errorf("Paid names id %q and a payment other than the one sent (id %q)", paid.Identifier, id)
	}

	later := &scripted{steps: []func(http.ResponseWriter){status(200, "")}}
	srv2 := httptest.NewServer(later)
	defer srv2.Close()
	resent, err := p.Resend(context.Background(), srv2.URL, []byte(`{}`), paid.Payment)
	if err != nil || resent.Status != 200 {
		t.Fatalf("resend: %v %+v", err, resent)
	}
	if got := identifierOf(t, later.seen[0][HeaderSignature]); got != id || resent.Identifier != id {
		t.Errorf("the resend carries %q (Paid says %q), the payment %q", got, resent.Identifier, id)
	}

	next := &scripted{steps: []func(http.ResponseWriter){required(t), status(200, "")}}
	srv3 := httptest.NewServer(next)
	defer srv3.Close()
	if _, err := p.Call(context.Background(), srv3.URL, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if other := identifierOf(t, next.seen[1][HeaderSignature]); other == id {
		t.Errorf("two calls carried the same id %q", id)
	}
	r, res := requirements(t)
	a, errA := p.Sign(r, res)
	b, errB := p.Sign(r, res)
	if errA != nil || errB != nil || identifierOf(t, a) == identifierOf(t, b) {
		t.Errorf("two payments Sign built share an id: %v %v", errA, errB)
	}
}

// A Payer given an id builds fresh payments (new transactions) that all
// carry it: the official client's retry, which the host answers with the
// report issued for the id. An id the spec does not allow builds nothing.
func TestPayerIdentifierIsKeptAcrossFreshPayments(t *testing.T) {
	const id = "pay_0123456789abcdef0123456789abcdef"
	seller := &scripted{steps: []func(http.ResponseWriter){required(t), status(200, "")}}
	srv := httptest.NewServer(seller)
	defer srv.Close()
	p := payer(t)
	p.Identifier = id
	var sent []string
	for i := 0; i < 2; i++ {
		seller.mu.Lock()
		seller.seen = nil
		seller.mu.Unlock()
		paid, err := p.Call(context.Background(), srv.URL, []byte(`{}`))
		if err != nil || paid.Status != 200 || paid.Identifier != id {
			t.Fatalf("call %d: %v %+v", i+1, err, paid)
		}
		if got := identifierOf(t, seller.seen[1][HeaderSignature]); got != id {
			t.Fatalf("call %d carries %q", i+1, got)
		}
		pp, _ := DecodePayment(paid.Payment)
		sent = append(sent, pp.Payload.Transaction)
	}
	if sent[0] == sent[1] {
		t.Error("the second payment is the first transaction again, not a fresh one")
	}
	r, res := requirements(t)
	if h, err := p.Sign(r, res); err != nil || identifierOf(t, h) != id {
		t.Errorf("Sign: %v", err)
	}

	bad := &scripted{steps: []func(http.ResponseWriter){required(t), status(200, "")}}
	srv2 := httptest.NewServer(bad)
	defer srv2.Close()
	p.Identifier = "pay_short"
	if _, err := p.Call(context.Background(), srv2.URL, []byte(`{}`)); !errors.Is(err, ErrIdentifier) || len(bad.seen) != 1 {
		t.Errorf("an id of the wrong shape: %v after %d requests", err, len(bad.seen))
	}
}

// requirements are what required's 402 asks for.
func requirements(t *testing.T) (Requirements, Resource) {
	rec := httptest.NewRecorder()
	required(t)(rec)
	raw, err := base64.StdEncoding.DecodeString(rec.Header().Get(HeaderRequired))
	if err != nil {
		t.Fatal(err)
	}
	var pr PaymentRequired
	if err := json.Unmarshal(raw, &pr); err != nil {
		t.Fatal(err)
	}
	return pr.Accepts[0], pr.Resource
}
