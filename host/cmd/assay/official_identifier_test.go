package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/x402"
)

// exchange is one paid request the proxy forwarded and the host's full
// answer to it.
type exchange struct {
	signature string
	status    int
	header    http.Header
	body      []byte
	// dropped: the client never got it (its connection was closed)
	dropped bool
}

// dropFirstPaid is a reverse proxy (loopback) in front of a host: the
// first request carrying PAYMENT-SIGNATURE is forwarded, the host's answer
// read in full and kept, and the client's connection is then closed
// without it (a dropped first answer). Everything else is relayed as is.
type dropFirstPaid struct {
	target  string // the host's base URL
	tr      *http.Transport
	mu      sync.Mutex
	dropped bool
	paid    []exchange
}

// hopByHop are the headers a proxy does not relay (RFC 9110 7.6.1), and
// Content-Length, which the relaying side sets again.
var hopByHop = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

func (p *dropFirstPaid) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	for k, vs := range r.Header {
		if !hopByHop[k] {
			out.Header[k] = vs
		}
	}
	out.Host = r.Host
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	sig := r.Header.Get(x402.HeaderSignature)
	p.mu.Lock()
	drop := sig != "" && !p.dropped
	if sig != "" {
		p.paid = append(p.paid, exchange{signature: sig, status: resp.StatusCode, header: resp.Header.Clone(), body: answer, dropped: drop})
		p.dropped = true
	}
	p.mu.Unlock()
	if drop {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	for k, vs := range resp.Header {
		if !hopByHop[k] {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// exchanges is a copy of the paid requests forwarded so far.
func (p *dropFirstPaid) exchanges() []exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]exchange(nil), p.paid...)
}

// officialRun is what pay.mjs said: its exit code, its one JSON line (when
// it exited 0) and its stderr.
type officialRun struct {
	exit   int
	stderr string
	out    struct {
		Status          int             `json:"status"`
		Body            json.RawMessage `json:"body"`
		PaymentResponse map[string]any  `json:"paymentResponse"`
	}
}

// officialPayWithID pays url with pay.mjs (the official x402 client)
// carrying the payment-identifier id, posting body and saving the
// PAYMENT-SIGNATURE it sent to saveTo; a client that threw is returned,
// not a failure.
func officialPayWithID(t *testing.T, c *chainHost, url, body, id, saveTo string) officialRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "pay.mjs", "--url", url, "--body", body, "--wallet", c.payerFile, "--rpc", c.chain.URL,
		"--payment-id", id, "--save-payment", saveTo)
	cmd.Dir = interopDir(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	r := officialRun{stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.exit = exit.ExitCode()
		return r
	case err != nil:
		t.Fatalf("official client: %v\n%s", err, r.stderr)
	}
	if err := json.Unmarshal(raw, &r.out); err != nil {
		t.Fatalf("official client's output: %v\n%s", err, raw)
	}
	return r
}

// savedPayment is the PAYMENT-SIGNATURE pay.mjs saved and its payload.
func savedPayment(t *testing.T, file string) (string, *x402.PaymentPayload, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		t.Fatalf("the saved payment %s: %v", filepath.Base(file), err)
	}
	sig := strings.TrimSpace(string(raw))
	p, err := x402.DecodePayment(sig)
	if err != nil {
		t.Fatalf("the saved payment %s: %v", filepath.Base(file), err)
	}
	var generic map[string]any
	js, _ := base64.StdEncoding.DecodeString(sig)
	_ = json.Unmarshal(js, &generic)
	return sig, p, generic
}

// txIDOf is the id the payment's transaction has once the fee payer signs
// it (Ed25519 is deterministic: the very id the host would broadcast).
func txIDOf(t *testing.T, c *chainHost, p *x402.PaymentPayload) string {
	t.Helper()
	wire, err := base64.StdEncoding.DecodeString(p.Payload.Transaction)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.DecodeTransaction(wire)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SignAs(c.feePayer); err != nil {
		t.Fatal(err)
	}
	return solana.EncodeBase58(tx.Signatures[0][:])
}

// The official client's retry after a dropped first answer, with its
// payment-identifier: the host issued the report (ledger line, claim,
// sealed answer) before it wrote it, a proxy lost that answer, and the
// official client, run again with the same id, gets a new 402 and builds a
// fresh payment (a new transaction) carrying the id. The host answers it
// 200 with the very bytes it wrote the first time and the first payment's
// PAYMENT-RESPONSE; the fresh payment is never verified nor settled: the
// seller gained one price, the payer lost one, one ledger line, and the
// fresh transaction is not on the chain. The same id with another body is
// 409 payment_conflict and moves nothing.
func TestTheOfficialClientsRetryWithItsPaymentIdentifierGetsTheSameAnswer(t *testing.T) {
	c := newChainHost(t)
	h := c.start(t)
	proxy := &dropFirstPaid{target: h.url(), tr: &http.Transport{}}
	defer proxy.tr.CloseIdleConnections()
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	url := srv.URL + "/stream-divergence/compare"
	id, err := x402.NewIdentifier()
	if err != nil {
		t.Fatal(err)
	}
	moved := func(when string) {
		t.Helper()
		if got := c.chain.Tokens(t, address(c.seller)); got != sdPrice {
			t.Errorf("%s the seller holds %d, want one price (%d)", when, got, sdPrice)
		}
		if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000-sdPrice {
			t.Errorf("%s the payer holds %d, want %d", when, got, 1_000_000-sdPrice)
		}
	}
	// what the host asked of the chain: a payment verified is simulated,
	// one settled is sent
	chainCalls := func() (simulated, sent int) {
		reqs := c.chain.Requests(t)
		return strings.Count(reqs, "simulateTransaction"), strings.Count(reqs, "sendTransaction")
	}

	// 1. paid, issued, and the answer dropped on the way
	firstFile := filepath.Join(c.dir, "first.b64")
	r := officialPayWithID(t, c, url, c.body, id, firstFile)
	if r.exit != 1 {
		t.Fatalf("the official client whose answer was dropped: exit %d %+v\n%s\nhost:\n%s", r.exit, r.out, r.stderr, h.log())
	}
	t.Logf("the official client without its answer: %s", strings.TrimSpace(r.stderr))
	ex := proxy.exchanges()
	if len(ex) != 1 || !ex[0].dropped || ex[0].status != http.StatusOK || !bytes.Contains(ex[0].body, []byte(`"kind":"report"`)) {
		t.Fatalf("the first paid answer: %+v\nhost:\n%s", ex, h.log())
	}
	kept, keptResponse := ex[0].body, ex[0].header.Get(x402.HeaderResponse)
	if keptResponse == "" {
		t.Fatal("the first paid answer has no PAYMENT-RESPONSE")
	}
	moved("after the first payment")
	simulated, sent := chainCalls()

	// 2. the official client's retry: a new 402, a fresh payment, the same id
	secondFile := filepath.Join(c.dir, "second.b64")
	r = officialPayWithID(t, c, url, c.body, id, secondFile)
	if r.exit != 0 || r.out.Status != http.StatusOK {
		t.Fatalf("the official client's retry: exit %d, status %d %s\n%s\nhost:\n%s", r.exit, r.out.Status, r.out.Body, r.stderr, h.log())
	}
	ex = proxy.exchanges()
	if len(ex) != 2 || ex[1].dropped {
		t.Fatalf("paid requests through the proxy: %d", len(ex))
	}
	if !bytes.Equal(ex[1].body, kept) {
		t.Errorf("the retry's answer differs from the one the host wrote first:\nfirst: %s\nretry: %s", kept, ex[1].body)
	}
	var want, got any
	_ = json.Unmarshal(kept, &want)
	if err := json.Unmarshal(r.out.Body, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("the official client read another answer: %s (%v)", r.out.Body, err)
	}
	if ex[1].header.Get(x402.HeaderResponse) != keptResponse {
		t.Errorf("the retry's PAYMENT-RESPONSE %q, the first payment's %q", ex[1].header.Get(x402.HeaderResponse), keptResponse)
	}
	if r.out.PaymentResponse["success"] != true {
		t.Errorf("the official client's PAYMENT-RESPONSE: %v", r.out.PaymentResponse)
	}

	sig1, p1, g1 := savedPayment(t, firstFile)
	sig2, p2, g2 := savedPayment(t, secondFile)
	if sig1 != ex[0].signature || sig2 != ex[1].signature {
		t.Errorf("pay.mjs saved other payments than the ones it sent")
	}
	if sig1 == sig2 || p1.Payload.Transaction == p2.Payload.Transaction {
		t.Errorf("the retry sent the same payment again, not a fresh one")
	}
	for i, p := range []*x402.PaymentPayload{p1, p2} {
		if got, err := p.Identifier(); err != nil || got != id {
			t.Errorf("payment %d carries identifier %q (%v), want %q; extensions %v", i+1, got, err, id, p.Extensions)
		}
	}
	// what the official client changed between the two payments
	for _, k := range []string{"x402Version", "resource", "accepted", "extensions"} {
		if !reflect.DeepEqual(g1[k], g2[k]) {
			a, _ := json.Marshal(g1[k])
			b, _ := json.Marshal(g2[k])
			t.Logf("the retry's %s differs:\n first: %s\n retry: %s", k, a, b)
		}
	}
	ext, _ := json.Marshal(g2["extensions"])
	t.Logf("the retry's extensions: %s", ext)

	moved("after the retry")
	lines := c.lines(t, 1)
	tx1, tx2 := txIDOf(t, c, p1), txIDOf(t, c, p2)
	if lines[0].TxID == nil || *lines[0].TxID != tx1 || r.out.PaymentResponse["transaction"] != tx1 {
		t.Errorf("the ledger line %v, the first payment's transaction %s, the retry's PAYMENT-RESPONSE %v", lines[0].TxID, tx1, r.out.PaymentResponse["transaction"])
	}
	if s, err := c.chain.RPC.SignatureStatus(context.Background(), tx1); err != nil || !s.Succeeded() {
		t.Errorf("the first payment's transaction on the chain: %+v %v", s, err)
	}
	if s, err := c.chain.RPC.SignatureStatus(context.Background(), tx2); err != nil || s != nil {
		t.Errorf("the retry's fresh transaction %s is known to the chain: %+v %v", tx2, s, err)
	}
	if s, n := chainCalls(); s != simulated || n != sent {
		t.Errorf("the retry's payment reached the chain: simulateTransaction %d→%d, sendTransaction %d→%d", simulated, s, sent, n)
	}

	// 3. the same id with another submission: a conflict, nothing moves
	other := filepath.Join(c.dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"streamed_capture":{"chunks":["YWJj"]},"reference_output":{"chunks":["YWJk"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	thirdFile := filepath.Join(c.dir, "third.b64")
	r = officialPayWithID(t, c, url, other, id, thirdFile)
	var refusal struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(r.out.Body, &refusal)
	if r.exit != 0 || r.out.Status != http.StatusConflict || refusal.Error.Code != x402.CodeConflict {
		t.Errorf("the same id with another body: exit %d, status %d %s\n%s", r.exit, r.out.Status, r.out.Body, r.stderr)
	}
	_, p3, _ := savedPayment(t, thirdFile)
	if got, _ := p3.Identifier(); got != id {
		t.Errorf("the third payment carries identifier %q", got)
	}
	moved("after the conflict")
	c.lines(t, 1)
	if s, err := c.chain.RPC.SignatureStatus(context.Background(), txIDOf(t, c, p3)); err != nil || s != nil {
		t.Errorf("the conflicting payment's transaction is known to the chain: %+v %v", s, err)
	}
	if s, n := chainCalls(); s != simulated || n != sent {
		t.Errorf("the conflicting payment reached the chain: simulateTransaction %d→%d, sendTransaction %d→%d", simulated, s, sent, n)
	}
	c.noTrace(t, h)
}
