package server_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// paidHost runs a host whose paid routes take x402 payments through the
// embedded local facilitator.
type paidHost struct {
	*testhost.Host
	payTo    string
	feePayer string
	clock    *fixedClock
	fac      *x402.Local
}

// gate is another host's gate on this host's store (the same facilitator,
// seller and clock), as a second host on one database would have.
func (h *paidHost) gate(t testing.TB, hostID string) *x402.Gate {
	g, err := x402.NewGate(context.Background(), x402.Config{Facilitator: h.fac, Store: h.Store, Network: x402.SolanaDevnet,
		Asset: x402.USDCDevnet, PayTo: h.payTo, Now: h.clock.Now, HostID: hostID})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func startPaid(t *testing.T, pkgs ...string) *paidHost { return startPaidB(t, pkgs...) }

func startPaidB(t testing.TB, pkgs ...string) *paidHost {
	return startPaidWith(t, testhost.Options{}, pkgs...)
}

// startPaidWith is startPaid with further host options (adapters).
func startPaidWith(t testing.TB, opts testhost.Options, pkgs ...string) *paidHost {
	return startPaidWrapped(t, opts, nil, pkgs...)
}

// startPaidWrapped is startPaidWith whose gate is wrap's (when given)
// around the x402 gate.
func startPaidWrapped(t testing.TB, opts testhost.Options, wrap func(*x402.Gate) payment.Gate, pkgs ...string) *paidHost {
	dir := t.TempDir()
	ph := &paidHost{clock: &fixedClock{t: time.Now()}}
	fee, err := wallet.New(filepath.Join(dir, "fee.json"))
	if err != nil {
		t.Fatal(err)
	}
	seller, err := wallet.New(filepath.Join(dir, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	ph.payTo = solana.EncodeBase58(seller.Public().(ed25519.PublicKey))
	fac := x402.NewLocal(fee, x402.SolanaDevnet)
	ph.feePayer, ph.fac = fac.FeePayer(), fac
	opts.Now, opts.CallTimeout = ph.clock.Now, 10*time.Second
	opts.Gate = func(tb testing.TB, st *store.Store) payment.Gate {
		g, err := x402.NewGate(context.Background(), x402.Config{Facilitator: fac, Store: st, Network: x402.SolanaDevnet,
			Asset: x402.USDCDevnet, PayTo: ph.payTo, Now: ph.clock.Now})
		if err != nil {
			tb.Fatal(err)
		}
		if wrap != nil {
			return wrap(g)
		}
		return g
	}
	ph.Host = testhost.Start(t, opts, pkgs...)
	return ph
}

func newPayer(t *testing.T) (*x402.Payer, string) {
	w, err := wallet.New(filepath.Join(t.TempDir(), "payer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return &x402.Payer{Wallet: w}, solana.EncodeBase58(w.Public().(ed25519.PublicKey))
}

func decodeHeader(t *testing.T, h string, v any) {
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		t.Fatalf("header not base64: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("header not JSON: %v", err)
	}
}

func TestPaidCallEndToEnd(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	body := sdBody([]string{"ab", "cd"}, []string{"abXd"})

	// unpaid: 402 with PAYMENT-REQUIRED, and the signed JSON body says the same
	r := post(t, url, body)
	if r.status != 402 || errorCode(r) != "payment_required" {
		t.Fatalf("unpaid: %d %s", r.status, r.raw)
	}
	verified(t, h.Host, r)
	var pr x402.PaymentRequired
	decodeHeader(t, r.header.Get("PAYMENT-REQUIRED"), &pr)
	if pr.X402Version != 2 || len(pr.Accepts) != 1 || pr.Resource.URL != url || pr.Resource.MimeType != "application/json" {
		t.Fatalf("payment required %+v", pr)
	}
	a := pr.Accepts[0]
	if a.Scheme != "exact" || a.Network != "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1" || a.Asset != "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" ||
		a.Amount != "50000" || a.PayTo != h.payTo || a.MaxTimeoutSeconds != 300 || a.Extra["feePayer"] != h.feePayer {
		t.Errorf("requirements %+v", a)
	}
	// a host whose facilitator settles nothing (no chain: house mode) says
	// so before anyone signs, in the requirements and the resource
	if a.Extra["house"] != x402.HouseNote || !strings.HasSuffix(pr.Resource.Description, "("+x402.HouseNote+")") {
		t.Errorf("house mode unsaid in the 402: %v, %q", a.Extra["house"], pr.Resource.Description)
	}
	if inBody, _ := json.Marshal(r.json["x402"]); !strings.Contains(string(inBody), `"amount":"50000"`) {
		t.Errorf("the 402 body does not carry the requirements: %s", inBody)
	}

	// pay (recording the payment header, to replay it below)
	payer, addr := newPayer(t)
	rec := &recorder{next: http.DefaultTransport}
	payer.Client = &http.Client{Transport: rec}
	res, err := payer.Call(context.Background(), url, body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || res.Settlement == nil || !res.Settlement.Success || res.Settlement.Payer != addr || res.Settlement.Network != x402.SolanaDevnet {
		t.Fatalf("paid call: %d %+v %.300s", res.Status, res.Settlement, res.Body)
	}
	rep := reply{status: res.Status, raw: res.Body}
	_ = json.Unmarshal(res.Body, &rep.json)
	verified(t, h.Host, rep)
	pay, _ := rep.json["payment"].(map[string]any)
	if rep.json["byte_equal"] != false || pay["charged"] != true || pay["transaction"] != res.Settlement.Transaction || pay["payer"] != addr || pay["price_usdc_units"] != float64(50000) {
		t.Errorf("report payment member %v", pay)
	}
	if pay["house"] != x402.HouseNote {
		t.Errorf("house mode unsaid in the report: %v", pay)
	}

	// the ledger line: payer, tx, price, fee (2 signatures × 5,000 + ceil(1 µlamport × 20,000 CU)), house (local facilitator)
	lines := h.Lines(t, 1)
	if len(lines) != 1 {
		t.Fatalf("ledger: %d lines", len(lines))
	}
	l := lines[0]
	if *l.Payer != addr || *l.TxID != res.Settlement.Transaction || l.PriceUSDCUnits != 50000 || l.FeeLamports == nil || *l.FeeLamports != 10001 || !l.House ||
		!strings.HasPrefix(l.FamilyFields, `{"byte_equal":false,"op":"compare","verdict_line":"STREAM-CAPTURE DIVERGENCE — byte-equal: NO · streamed chunks: 2 · reference chunks: 1 · first divergence: OFFSET`) {
		t.Errorf("ledger line %+v", l)
	}

	// the same payment and submission again: the issued answer itself,
	// nothing settled, no line; another submission: 409; past the
	// redelivery window: a replay
	resentUntilTheWindowEnds(t, h, url, body, sdBody([]string{"ab", "c"}, []string{"abd"}), map[string]string{"PAYMENT-SIGNATURE": rec.sig}, rep)
	if lines, _ = h.Store.Lines(context.Background()); len(lines) != 1 {
		t.Errorf("a re-send wrote a ledger line")
	}
}

// resentUntilTheWindowEnds sends an issued payment again (header): with
// its own submission, the issued answer byte for byte; with another, 409
// payment_conflict; once the redelivery window has ended, a replay.
func resentUntilTheWindowEnds(t *testing.T, h *paidHost, url string, body, other []byte, header map[string]string, issued reply) {
	t.Helper()
	again := do(t, "POST", url, body, header)
	if again.status != 200 || !bytes.Equal(again.raw, issued.raw) {
		t.Fatalf("re-send of an issued payment: %d %.300s", again.status, again.raw)
	}
	if again.header.Get("PAYMENT-RESPONSE") == "" {
		t.Error("the redelivered answer has no PAYMENT-RESPONSE")
	}
	conflict := do(t, "POST", url, other, header)
	if conflict.status != 409 || errorCode(conflict) != "payment_conflict" {
		t.Fatalf("the issued payment with another submission: %d %s", conflict.status, conflict.raw)
	}
	verified(t, h.Host, conflict)
	if p, _ := conflict.json["payment"].(map[string]any); p["charged"] != false {
		t.Errorf("conflict's payment member %v", p)
	}
	h.clock.Add(x402.DefaultRedelivery + time.Second)
	late := do(t, "POST", url, body, header)
	if late.status != 402 || (errorCode(late) != "payment_replayed" && errorCode(late) != "marker_spent") {
		if late.status != 400 || errorCode(late) != "marker_spent" {
			t.Fatalf("re-send past the redelivery window: %d %s", late.status, late.raw)
		}
	}
	verified(t, h.Host, late)
}

type recorder struct {
	next http.RoundTripper
	sig  string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if s := req.Header.Get("PAYMENT-SIGNATURE"); s != "" {
		r.sig = s
	}
	return r.next.RoundTrip(req)
}

func TestRefusedSubmissionNeverTouchesThePayment(t *testing.T) {
	h := startPaid(t, sdPkg)
	url := h.URL + "/stream-divergence/compare"
	payer, _ := newPayer(t)
	rec := &recorder{next: http.DefaultTransport}
	payer.Client = &http.Client{Transport: rec}
	if res, err := payer.Call(context.Background(), url, sdBody([]string{"a"}, []string{"a"})); err != nil || res.Status != 200 {
		t.Fatalf("first paid call: %v", err)
	}
	// a fresh payment, built but not yet used
	sig := unusedPayment(t, payer, url, sdBody([]string{"a"}, []string{"a"}))
	bad := []byte(`{"streamed_capture":{"chunks":["QQ"]},"reference_output":{"chunks":[]}}`)
	r := do(t, "POST", url, bad, map[string]string{"PAYMENT-SIGNATURE": sig})
	p, _ := r.json["payment"].(map[string]any)
	if r.status != 400 || errorCode(r) != "chunk_not_base64" || p["examined"] != false || p["charged"] != false {
		t.Fatalf("invalid submission with a payment: %d %s", r.status, r.raw)
	}
	// the payment was not consumed: it still buys a report
	ok := do(t, "POST", url, sdBody([]string{"a"}, []string{"b"}), map[string]string{"PAYMENT-SIGNATURE": sig})
	if ok.status != 200 {
		t.Fatalf("the untouched payment: %d %s", ok.status, ok.raw)
	}
	// a payment with a wrong amount is refused with a fresh PAYMENT-REQUIRED naming why
	var pp x402.PaymentPayload
	decodeHeader(t, sig, &pp)
	pp.Accepted.Amount = "1"
	forged, _ := x402.EncodeHeader(pp)
	r = do(t, "POST", url, sdBody([]string{"a"}, []string{"b"}), map[string]string{"PAYMENT-SIGNATURE": forged})
	var pr x402.PaymentRequired
	decodeHeader(t, r.header.Get("PAYMENT-REQUIRED"), &pr)
	if r.status != 402 || errorCode(r) != "payment_invalid" || pr.Error != solana.ReasonAmountMismatch {
		t.Errorf("mismatched requirements: %d %s / %q", r.status, r.raw, pr.Error)
	}
	lines := h.Lines(t, 2)
	if len(lines) != 2 {
		t.Errorf("ledger lines %d, want 2", len(lines))
	}
	// the refused submission's settlement, begun while the family
	// validated, was withdrawn: two claims, both the reports'
	if n := claimCount(t, h); n != 2 {
		t.Errorf("%d claims, want 2 (one per report)", n)
	}
}

func claimCount(t *testing.T, h *paidHost) int {
	t.Helper()
	var n int
	if err := h.Store.DB().QueryRow(`SELECT COUNT(*) FROM payment_claims`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// unusedPayment is a payment for url built and captured, never sent.
func unusedPayment(t *testing.T, payer *x402.Payer, url string, body []byte) string {
	t.Helper()
	fresh := &recorder{next: failAfterRequired{}}
	payer.Client = &http.Client{Transport: fresh}
	_, _ = payer.Call(context.Background(), url, body)
	if fresh.sig == "" {
		t.Fatal("no payment captured")
	}
	return fresh.sig
}

// settleSpy is the x402 gate, marking when a settlement begins by
// creating a file the test family's measurement waits for.
type settleSpy struct {
	*x402.Gate
	mark string
}

func (g settleSpy) Settle(ctx context.Context, req payment.Request, a *payment.Admission) (*payment.Receipt, *payment.Demand, error) {
	if f, err := os.Create(g.mark); err == nil {
		f.Close()
	}
	return g.Gate.Settle(ctx, req, a)
}

// With the embedded facilitator and no chain, the claim is opened while
// the family measures, not after: the family holds its report until the
// settlement has begun, and sees it begin.
func TestAnOfflinePaymentSettlesWhileTheFamilyMeasures(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "settling")
	h := startPaidWrapped(t, testhost.Options{}, func(g *x402.Gate) payment.Gate { return settleSpy{Gate: g, mark: mark} }, testPkg)
	payer, _ := newPayer(t)
	body, _ := json.Marshal(map[string]any{"wait_file": mark})
	res, err := payer.Call(context.Background(), h.URL+"/test-family/measure", body)
	if err != nil || res.Status != 200 {
		t.Fatalf("paid call: %v %d %s", err, res.Status, res.Body)
	}
	var answer map[string]any
	_ = json.Unmarshal(res.Body, &answer)
	if answer["file_seen"] != true {
		t.Fatalf("the settlement had not begun when the family reported: %s", res.Body)
	}
	if lines := h.Lines(t, 1); len(lines) != 1 {
		t.Fatalf("ledger lines %d, want 1", len(lines))
	}
}

// A paid report the host withholds (the self-check, a ledger line outside
// the closed list) leaves its payment as it was, though the settlement
// began while the family measured: no claim stays, and the payment still
// buys a report.
func TestAWithheldPaidReportLeavesThePaymentUntouched(t *testing.T) {
	h := startPaid(t, testPkg)
	url := h.URL + "/test-family/measure"
	payer, _ := newPayer(t)
	for _, body := range []string{`{"forbidden_word":true}`, `{"bad_ledger":true}`} {
		sig := unusedPayment(t, payer, url, []byte(`{}`))
		before := claimCount(t, h)
		r := do(t, "POST", url, []byte(body), map[string]string{"PAYMENT-SIGNATURE": sig})
		p, _ := r.json["payment"].(map[string]any)
		if r.status != 500 || errorCode(r) != "self_check_failed" || p["charged"] != false {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
		if n := claimCount(t, h); n != before {
			t.Fatalf("%s: %d claims after the withheld report, want %d", body, n, before)
		}
		if ok := do(t, "POST", url, []byte(`{}`), map[string]string{"PAYMENT-SIGNATURE": sig}); ok.status != 200 {
			t.Fatalf("%s: the untouched payment: %d %s", body, ok.status, ok.raw)
		}
	}
}

// failAfterRequired answers every paid retry with a transport error, so a
// test can capture a payment without spending it.
type failAfterRequired struct{}

func (failAfterRequired) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("PAYMENT-SIGNATURE") != "" {
		return nil, syscall.ECONNREFUSED
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestDeliveryMarkerRedeemsOncePaymentOnce(t *testing.T) {
	h := startPaid(t, testPkg)
	url := h.URL + "/test-family/measure"
	payer, addr := newPayer(t)
	payer.MarkerRetries = -1 // this test redeems by hand
	// the plugin dies in the measurement, after the payment check
	body := []byte(`{"exit_in_measure":true}`)
	res, err := payer.Call(context.Background(), url, body)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 503 || res.Marker == "" {
		t.Fatalf("crash after the payment check: %d %s", res.Status, res.Body)
	}
	var crashed map[string]any
	_ = json.Unmarshal(res.Body, &crashed)
	p, _ := crashed["payment"].(map[string]any)
	dm, _ := p["delivery_marker"].(map[string]any)
	if p["charged"] != false || dm["token"] != res.Marker || dm["header"] != "ASSAY-DELIVERY-MARKER" {
		t.Fatalf("503 payment member %v", p)
	}
	lines, _ := h.Store.Lines(context.Background())
	if len(lines) != 0 {
		t.Fatal("an undelivered report wrote a ledger line")
	}
	if strings.Contains(dm["token"].(string), "exit") {
		t.Fatal("the marker carries submission content")
	}
	// redeem: same submission, the marker instead of a payment (the plugin restarts meanwhile)
	r := doPast503(t, url, []byte(`{}`), map[string]string{"ASSAY-DELIVERY-MARKER": res.Marker})
	if r.status != 200 {
		t.Fatalf("redeem: %d %s", r.status, r.raw)
	}
	var settle x402.SettleResponse
	decodeHeader(t, r.header.Get("PAYMENT-RESPONSE"), &settle)
	if !settle.Success || settle.Payer != addr {
		t.Errorf("settlement %+v", settle)
	}
	lines = h.Lines(t, 1)
	if len(lines) != 1 || *lines[0].Payer != addr || *lines[0].TxID != settle.Transaction {
		t.Fatalf("ledger after redeeming: %+v", lines)
	}
	var settled int
	_ = h.Store.DB().QueryRow(`SELECT COUNT(*) FROM payment_claims WHERE state <> 'settling'`).Scan(&settled)
	if settled != 1 {
		t.Errorf("%d settlements, want exactly 1", settled)
	}
	// forged; redeemed again: the issued answer, then spent once the
	// redelivery window has ended
	id, _, _ := strings.Cut(res.Marker, ".")
	if r := do(t, "POST", url, []byte(`{}`), map[string]string{"ASSAY-DELIVERY-MARKER": id + ".AAAA"}); r.status != 400 || errorCode(r) != "marker_invalid" {
		t.Errorf("forged marker: %d %s", r.status, r.raw)
	}
	resentUntilTheWindowEnds(t, h, url, []byte(`{}`), []byte(`{"pad":"other"}`), map[string]string{"ASSAY-DELIVERY-MARKER": res.Marker}, r)
	if lines, _ := h.Store.Lines(context.Background()); len(lines) != 1 {
		t.Errorf("%d ledger lines after the marker's re-sends, want 1", len(lines))
	}
	if r := do(t, "POST", h.URL+"/test-family/measure", []byte(`{}`), map[string]string{"ASSAY-DELIVERY-MARKER": "x"}); r.status != 400 || errorCode(r) != "marker_invalid" {
		t.Errorf("garbage marker: %d", r.status)
	}
	// a second undelivered payment whose marker outlives its expiry
	res2, err := payer.Call(context.Background(), url, body)
	if err != nil || res2.Status != 503 || res2.Marker == "" {
		t.Fatalf("second crash: %v %d", err, res2.Status)
	}
	h.clock.Add(301 * time.Second)
	if r := doPast503(t, url, []byte(`{}`), map[string]string{"ASSAY-DELIVERY-MARKER": res2.Marker}); r.status != 400 || errorCode(r) != "marker_expired" {
		t.Errorf("expired marker: %d %s", r.status, r.raw)
	}
}

// doPast503 re-sends while the host answers 503 (a plugin restarting), as a
// client following Retry-After would.
func doPast503(t *testing.T, url string, body []byte, header map[string]string) reply {
	var r reply
	for i := 0; i < 100; i++ {
		if r = do(t, "POST", url, body, header); r.status != 503 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return r
}

// A could-not-measure kind found at validation answers 422 at once: signed,
// never asked for payment, never charged.
func TestCouldNotMeasureAnswersUnpaid(t *testing.T) {
	h := startPaid(t, testPkg)
	r := post(t, h.URL+"/test-family/measure", []byte(`{"could_not_measure":true}`))
	p, _ := r.json["payment"].(map[string]any)
	if r.status != 422 || r.json["kind"] != "could_not_measure" || r.header.Get("PAYMENT-REQUIRED") != "" || p["charged"] != false || p["examined"] != false {
		t.Fatalf("could not measure: %d %s", r.status, r.raw)
	}
	verified(t, h.Host, r)
	m := do(t, "GET", h.URL+"/test-family/metrics", nil, nil)
	if !strings.Contains(string(m.raw), `assay_could_not_measure_total{kind="too_many_entries",service="test-family"} 1`) {
		t.Error("the could-not-measure kind is not counted")
	}
	if lines, _ := h.Store.Lines(context.Background()); len(lines) != 0 {
		t.Error("a could-not-measure answer wrote a ledger line")
	}
}
