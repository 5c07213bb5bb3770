package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/canaryproof"
	"github.com/assay-audit/assay/host/internal/chaintest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

const sdPrice = 50000 // stream-divergence's price in USDC atomic units

func address(priv ed25519.PrivateKey) string {
	return solana.EncodeBase58(priv.Public().(ed25519.PublicKey))
}

// expireOn402 is a client transport that ends the chain's blockhash right
// after a 402 arrives: the payment built from it is stale when it comes
// back.
type expireOn402 struct {
	t       *testing.T
	chain   *chaintest.Chain
	expired bool
}

func (e *expireOn402) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusPaymentRequired && !e.expired {
		e.chain.ExpireBlockhash(e.t)
		e.expired = true
	}
	return resp, err
}

// The embedded facilitator with an RPC node settles for real: paid calls
// by `assay call` move exactly the price from the payer's token account
// to the seller's, each ledger line names a transaction the chain has and
// the fee the chain charged, and no payment is a house proof. A payer
// without the tokens, one without a token account and a payment whose
// blockhash expired are refused with the official reasons before
// anything is measured, and nothing moves.
func TestTheEmbeddedFacilitatorSettlesOnAChain(t *testing.T) {
	chain := chaintest.Start(t)
	chain.Mint(t, x402.USDCDevnet)
	dir := t.TempDir()
	feePayer, err := wallet.New(filepath.Join(dir, "fee-payer.json"))
	if err != nil {
		t.Fatal(err)
	}
	chain.Airdrop(t, address(feePayer), 5_000_000_000)
	seller, _ := wallet.New(filepath.Join(dir, "seller.json"))
	chain.TokenAccount(t, address(seller), 0)
	payerFile := filepath.Join(dir, "payer.json")
	payer, _ := wallet.New(payerFile)
	chain.TokenAccount(t, address(payer), 1_000_000)
	dataDir := t.TempDir()
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	h := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", dataDir, "--payments", "local", "--solana-rpc", chain.URL,
		"--pay-to", address(seller), "--fee-payer-key", filepath.Join(dir, "fee-payer.json"))
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	body := filepath.Join(dir, "body.json")
	_ = os.WriteFile(body, []byte(`{"streamed_capture":{"chunks":["YWJj"]},"reference_output":{"chunks":["YWJk"]}}`), 0o600)
	url := h.url() + "/stream-divergence/compare"
	feeBefore, _ := chain.RPC.Balance(context.Background(), address(feePayer))

	const n = 3
	for i := 0; i < n; i++ {
		var out strings.Builder
		if err := run([]string{"call", "--wallet", payerFile, "--out", filepath.Join(dir, "report.json"), url, body}, &out, &out); err != nil {
			t.Fatalf("paid call %d: %v\n%s", i, err, h.log())
		}
	}
	if got := chain.Tokens(t, address(seller)); got != n*sdPrice {
		t.Errorf("the seller holds %d, want %d", got, n*sdPrice)
	}
	if got := chain.Tokens(t, address(payer)); got != 1_000_000-n*sdPrice {
		t.Errorf("the payer holds %d, want %d", got, 1_000_000-n*sdPrice)
	}
	st, err := store.OpenExisting(context.Background(), "sqlite", dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var lines []store.Line
	eventually(t, "three ledger lines", 10*time.Second, func() bool { lines, _ = st.Lines(context.Background()); return len(lines) == n })
	var fees int64
	for _, l := range lines {
		if l.House || l.TxID == nil || l.FeeLamports == nil || l.PriceUSDCUnits != sdPrice || l.Payer == nil || *l.Payer != address(payer) {
			t.Fatalf("line %+v", l)
		}
		tx, err := chain.RPC.GetTransaction(context.Background(), *l.TxID)
		if err != nil || tx == nil || *l.FeeLamports != tx.FeeLamports || tx.FeeLamports <= 0 {
			t.Fatalf("line %s: the chain has %+v (%v), the line a fee of %d", *l.TxID, tx, err, *l.FeeLamports)
		}
		fees += tx.FeeLamports
	}
	if feeAfter, _ := chain.RPC.Balance(context.Background(), address(feePayer)); feeBefore-feeAfter != uint64(fees) {
		t.Errorf("the fee payer paid %d lamports, the lines say %d", feeBefore-feeAfter, fees)
	}

	refused := func(who ed25519.PrivateKey, client *http.Client) string {
		t.Helper()
		p := &x402.Payer{Wallet: who, Client: client}
		res, err := p.Call(context.Background(), url, []byte(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`))
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Error struct{ Code, Reason string } `json:"error"`
		}
		_ = json.Unmarshal(res.Body, &a)
		if res.Status != 402 || a.Error.Code != "payment_invalid" {
			t.Fatalf("want 402 payment_invalid: %d %s", res.Status, res.Body)
		}
		return a.Error.Reason
	}
	broke, _ := wallet.New(filepath.Join(dir, "broke.json"))
	chain.TokenAccount(t, address(broke), sdPrice-1)
	if r := refused(broke, nil); r != x402.ReasonSimulationFailed {
		t.Errorf("a payer short of the price: %s", r)
	}
	none, _ := wallet.New(filepath.Join(dir, "none.json"))
	if r := refused(none, nil); r != x402.ReasonSenderATAMissing {
		t.Errorf("a payer without a token account: %s", r)
	}
	if r := refused(payer, &http.Client{Transport: &expireOn402{t: t, chain: chain}}); r != x402.ReasonSimulationFailed {
		t.Errorf("an expired blockhash: %s", r)
	}
	if got := chain.Tokens(t, address(seller)); got != n*sdPrice {
		t.Errorf("after the refusals the seller holds %d, want %d", got, n*sdPrice)
	}
	if got := chain.Tokens(t, address(broke)); got != sdPrice-1 {
		t.Errorf("the short payer holds %d", got)
	}
	// the host reads a fresh blockhash after the expired one: paying works
	var out strings.Builder
	if err := run([]string{"call", "--wallet", payerFile, "--out", filepath.Join(dir, "report.json"), url, body}, &out, &out); err != nil {
		t.Fatalf("a paid call after the expiry: %v", err)
	}
	if got := chain.Tokens(t, address(seller)); got != (n+1)*sdPrice {
		t.Errorf("the seller holds %d, want %d", got, (n+1)*sdPrice)
	}

	// what an operator watches: four settled, none refused or unknown, four
	// claims spent, the fee payer's balance as the chain has it
	m := scrape(t, h.url()+"/metrics")
	// the claim figures are the store's, labelled with its id
	labelled := regexp.MustCompile(`,store="[0-9a-f]{32}"`)
	for series, v := range m {
		if strings.HasPrefix(series, "assay_payment_claims{") && labelled.MatchString(series) {
			m[labelled.ReplaceAllString(series, "")] = v
		}
	}
	lamports, _ := chain.RPC.Balance(context.Background(), address(feePayer))
	for series, want := range map[string]float64{
		`assay_settlements_total{outcome="settled",service="stream-divergence"}`:                 n + 1,
		`assay_settlement_duration_seconds_count{outcome="settled",service="stream-divergence"}`: n + 1,
		`assay_payment_claims{state="issued"}`:                                                   n + 1,
		`assay_payment_claims{state="settling"}`:                                                 0,
		`assay_payment_claims{state="settled"}`:                                                  0,
		`assay_fee_payer_lamports`:                                                               float64(lamports),
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	for series := range m {
		if strings.HasPrefix(series, "assay_settlements_total{") && !strings.Contains(series, `outcome="settled"`) {
			t.Errorf("a settlement not settled: %s %v", series, m[series])
		}
	}
}

// scrape reads a Prometheus text page into series → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	raw, _ := get(t, url)
	m := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// A fee payer without the SOL for a transaction's fee: the host refuses to
// co-sign with 503 payment_unavailable (nothing signed, nothing taken), says
// why in its log, and shows the balance on /metrics; once the operator
// funds it, the next call is paid.
func TestAnUnfundedFeePayerIsRefusedBeforeCoSigning(t *testing.T) {
	c := newChainHost(t)
	unfunded := filepath.Join(c.dir, "unfunded-fee-payer.json")
	fp, _ := wallet.New(unfunded)
	h := launch(t, c.bin, nil, "--config", c.cfg, "--data-dir", c.data, "--payments", "local", "--solana-rpc", c.chain.URL,
		"--pay-to", address(c.seller), "--fee-payer-key", unfunded)
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	url := h.url() + "/stream-divergence/compare"
	p := &x402.Payer{Wallet: c.payer}
	res, err := p.Call(context.Background(), url, []byte(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(res.Body, &a)
	if res.Status != http.StatusServiceUnavailable || a.Error.Code != "payment_unavailable" {
		t.Fatalf("want 503 payment_unavailable: %d %s", res.Status, res.Body)
	}
	if l := h.log(); !strings.Contains(l, x402.ErrFeePayerShort.Error()) || !strings.Contains(l, address(fp)+" holds 0 lamports") {
		t.Errorf("the log does not say the fee payer is short:\n%s", l)
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != 0 {
		t.Errorf("the seller holds %d", got)
	}
	if got := scrape(t, h.url()+"/metrics")["assay_fee_payer_lamports"]; got != 0 {
		t.Errorf("assay_fee_payer_lamports = %v", got)
	}
	c.chain.Airdrop(t, address(fp), 1_000_000_000)
	var out strings.Builder
	if err := run([]string{"call", "--wallet", c.payerFile, "--out", filepath.Join(c.dir, "report.json"), url, c.body}, &out, &out); err != nil {
		t.Fatalf("a paid call once funded: %v\n%s", err, h.log())
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != sdPrice {
		t.Errorf("the seller holds %d, want %d", got, sdPrice)
	}
}

// `assay call --solana-rpc` checks the wallet on the chain before it signs
// anything: a wallet short of the price is told which wallet, what it
// holds and what the call costs, and no payment is sent; a 402 with no
// recentBlockhash (a remote facilitator's) is paid with the chain's.
func TestAssayCallChecksTheWalletOnTheChain(t *testing.T) {
	chain := chaintest.Start(t)
	chain.Mint(t, x402.USDCDevnet)
	dir := t.TempDir()
	short := filepath.Join(dir, "short.json")
	w, _ := wallet.New(short)
	chain.TokenAccount(t, address(w), 1234)
	seller, _ := wallet.New(filepath.Join(dir, "seller.json"))
	fee, _ := wallet.New(filepath.Join(dir, "fee.json"))
	// a seller whose 402 carries no blockhash, as a remote facilitator's
	var signed []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if sig := r.Header.Get(x402.HeaderSignature); sig != "" {
			mu.Lock()
			signed = append(signed, sig)
			mu.Unlock()
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: x402.Version, Resource: x402.Resource{URL: "http://" + r.Host + r.URL.Path},
			Accepts: []x402.Requirements{{Scheme: "exact", Network: x402.SolanaDevnet, Amount: "50000", Asset: x402.USDCDevnet,
				PayTo: address(seller), MaxTimeoutSeconds: 300, Extra: map[string]any{"feePayer": address(fee)}}}})
		rw.Header().Set(x402.HeaderRequired, h)
		rw.WriteHeader(http.StatusPaymentRequired)
	}))
	defer srv.Close()
	body := filepath.Join(dir, "body.json")
	_ = os.WriteFile(body, []byte(`{}`), 0o600)
	var out strings.Builder
	err := run([]string{"call", "--wallet", short, "--solana-rpc", chain.URL, "--out", filepath.Join(dir, "r.json"), srv.URL + "/svc/op", body}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), x402.ErrShort.Error()) || !strings.Contains(err.Error(), "wallet "+address(w)) || !strings.Contains(err.Error(), "holds $0.001234 (1234 atomic units)") ||
		!strings.Contains(err.Error(), "the call costs $0.05 (50000)") {
		t.Fatalf("a short wallet: %v", err)
	}
	if len(signed) != 0 {
		t.Fatal("a short wallet sent a payment")
	}
	t.Setenv("SOLANA_RPC_URL", chain.URL)
	chain.TokenAccount(t, address(w), 1_000_000)
	_ = run([]string{"call", "--wallet", short, "--out", filepath.Join(dir, "r.json"), srv.URL + "/svc/op", body}, &out, &out)
	mu.Lock()
	defer mu.Unlock()
	if len(signed) == 0 {
		t.Fatal("no payment was sent")
	}
	p, err := x402.DecodePayment(signed[0])
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(p.Payload.Transaction)
	tx, err := solana.DecodeTransaction(raw)
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := chain.RPC.LatestBlockhash(context.Background())
	if got := solana.EncodeBase58(tx.Message.RecentBlockhash[:]); got != latest.Hash {
		t.Errorf("signed with blockhash %s, the chain's is %s", got, latest.Hash)
	}
}

// chainHost is a host whose embedded facilitator settles on chain, the
// seller and fee payer funded, with a payer holding 1 USDC.
type chainHost struct {
	chain                   *chaintest.Chain
	bin, cfg, data, dir     string
	seller, payer, feePayer ed25519.PrivateKey
	payerFile, body         string
	storeSpec               string // "" for the data dir's SQLite
	st                      *store.Store
	canary                  *canaryproof.Canary
}

func newChainHost(t *testing.T) *chainHost {
	c := &chainHost{chain: chaintest.Start(t), bin: testhost.Binary(t, "host/cmd/assay", "assay"), cfg: sdConfig(t), data: t.TempDir(), dir: t.TempDir()}
	c.chain.Mint(t, x402.USDCDevnet)
	c.feePayer, _ = wallet.New(filepath.Join(c.dir, "fee-payer.json"))
	c.chain.Airdrop(t, address(c.feePayer), 5_000_000_000)
	c.seller, _ = wallet.New(filepath.Join(c.dir, "seller.json"))
	c.chain.TokenAccount(t, address(c.seller), 0)
	c.payerFile = filepath.Join(c.dir, "payer.json")
	c.payer, _ = wallet.New(c.payerFile)
	c.chain.TokenAccount(t, address(c.payer), 1_000_000)
	// the submission carries a canary: no form of it, nor of the body,
	// may reach the chain, the host's log or the ledger (noTrace)
	var err error
	if c.canary, err = canaryproof.New(); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"streamed_capture":{"chunks":["` + base64.StdEncoding.EncodeToString([]byte(c.canary.Value)) + `"]},"reference_output":{"chunks":["YWJk"]}}`)
	c.canary.Add("body", body)
	c.body = filepath.Join(c.dir, "body.json")
	_ = os.WriteFile(c.body, body, 0o600)
	return c
}

// noTrace checks that nothing of the submissions reached what left the
// host for the chain, the host's log or the ledger's lines.
func (c *chainHost) noTrace(t *testing.T, h *proc) {
	t.Helper()
	lines, _ := c.store(t).Lines(context.Background())
	ledger, _ := json.Marshal(lines)
	for what, data := range map[string]string{"the RPC requests": c.chain.Requests(t), "the host log": h.log(), "the ledger": string(ledger)} {
		if found := c.canary.Find([]byte(data)); len(found) > 0 {
			t.Errorf("%s hold %v of the submission", what, found)
		}
	}
	if !strings.Contains(c.chain.Requests(t), "sendTransaction") {
		t.Error("no transaction was sent: the custody check saw nothing")
	}
}

func (c *chainHost) start(t *testing.T) *proc {
	h := launch(t, c.bin, nil, "--config", c.cfg, "--data-dir", c.data, "--payments", "local", "--solana-rpc", c.chain.URL,
		"--pay-to", address(c.seller), "--fee-payer-key", filepath.Join(c.dir, "fee-payer.json"))
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	return h
}

// resentDeliversOnce checks that a restarted host resolved the payment's
// claim from the chain as landed, and that the payment sent again delivers
// its report with the price moved once.
func (c *chainHost) resentDeliversOnce(t *testing.T, h *proc, saved string) {
	t.Helper()
	if l := h.log(); !strings.Contains(l, "looked up on the chain: landed_now_settled=1 never_landed_released=0 still_unknown=0") {
		t.Errorf("the restarted host did not resolve the claim:\n%s", l)
	}
	// the ledger report lists the report owed as settled, nothing unknown
	if got := c.undelivered(t); got != "settled" {
		t.Errorf("assay ledger report's undelivered claims before the re-send: %q", got)
	}
	var out strings.Builder
	if err := run([]string{"call", "--payment", saved, "--out", filepath.Join(c.dir, "again.json"), h.url() + "/stream-divergence/compare", c.body}, &out, &out); err != nil {
		t.Fatalf("the payment sent again: %v\n%s", err, h.log())
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != sdPrice {
		t.Errorf("the seller holds %d, want one price (%d)", got, sdPrice)
	}
}

// undelivered is the states of the claims `assay ledger report` lists as
// undelivered, joined by commas.
func (c *chainHost) undelivered(t *testing.T) string {
	t.Helper()
	var out, errs strings.Builder
	if err := run([]string{"ledger", "report", "--json", "--data-dir", c.data}, &out, &errs); err != nil {
		t.Fatalf("assay ledger report: %v\n%s", err, errs.String())
	}
	var r struct {
		NotIssued []struct{ State string } `json:"paid_claims_not_issued"`
	}
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("assay ledger report --json: %v\n%s", err, out.String())
	}
	states := make([]string, len(r.NotIssued))
	for i, u := range r.NotIssued {
		states[i] = u.State
	}
	return strings.Join(states, ",")
}

// store is the host's store, open until the test ends.
func (c *chainHost) store(t *testing.T) *store.Store {
	if c.st == nil {
		st, err := store.OpenExisting(context.Background(), "sqlite", c.data)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c.st = st
	}
	return c.st
}

// lines waits for the host's ledger to hold n lines and returns them.
func (c *chainHost) lines(t *testing.T, n int) []store.Line {
	t.Helper()
	var lines []store.Line
	eventually(t, fmt.Sprintf("%d ledger lines", n), 10*time.Second, func() bool { lines, _ = c.store(t).Lines(context.Background()); return len(lines) == n })
	return lines
}

// reconcile runs `assay ledger reconcile` on the host's books.
func (c *chainHost) reconcile() (string, error) {
	var out strings.Builder
	err := run([]string{"ledger", "reconcile", "--data-dir", c.data, "--pay-to", address(c.seller), "--solana-rpc", c.chain.URL}, &out, &out)
	return out.String(), err
}

// payUntilKilled starts `assay call` and kills the host with SIGKILL once
// ready() says the payment reached the chain; it returns the payment the
// call saved, unanswered.
func (c *chainHost) payUntilKilled(t *testing.T, h *proc, ready func() bool) string {
	out := filepath.Join(c.dir, "report.json")
	done := make(chan error, 1)
	go func() {
		var said strings.Builder
		done <- run([]string{"call", "--wallet", c.payerFile, "--out", out, h.url() + "/stream-divergence/compare", c.body}, &said, &said)
	}()
	eventually(t, "the payment on its way to the chain", 20*time.Second, ready)
	_ = h.cmd.Process.Kill()
	<-h.done
	if err := <-done; err == nil || !strings.Contains(err.Error(), "send it again with: assay call --payment") {
		t.Fatalf("the call to the killed host: %v", err)
	}
	return out + ".payment"
}

// A host killed with SIGKILL after its payment's transaction landed and
// before it learned so (or delivered): started again, it looks the claim
// up on the chain (landed: settled, its report owed), and the payment
// sent again delivers the report once; the price moved once.
func TestAHostKilledBetweenBroadcastAndDeliveryResolvesFromTheChain(t *testing.T) {
	c := newChainHost(t)
	h := c.start(t)
	c.chain.HoldConfirmations(t, true)
	saved := c.payUntilKilled(t, h, func() bool { return c.chain.Tokens(t, address(c.seller)) == sdPrice })
	c.chain.HoldConfirmations(t, false)

	h = c.start(t)
	c.resentDeliversOnce(t, h, saved)
	var out strings.Builder
	if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000-sdPrice {
		t.Errorf("the payer holds %d", got)
	}
	lines := c.lines(t, 1)
	if s, err := c.chain.RPC.SignatureStatus(context.Background(), *lines[0].TxID); err != nil || !s.Succeeded() {
		t.Errorf("the line's transaction on the chain: %+v %v", s, err)
	}
	// and once more: the same report again, nothing more moved, no line
	if err := run([]string{"call", "--payment", saved, "--out", filepath.Join(c.dir, "third.json"), h.url() + "/stream-divergence/compare", c.body}, &out, &out); err != nil {
		t.Errorf("a third send: %v", err)
	}
	if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000-sdPrice {
		t.Errorf("after a third send the payer holds %d", got)
	}
	c.lines(t, 1)
	if said, err := c.reconcile(); err != nil || !strings.Contains(said, "1 paid lines checked, 1 transactions of the token account read: 0 lines not matching") {
		t.Errorf("the books after the crash: %v\n%s", err, said)
	}
	c.noTrace(t, h)
}

// A host killed while its payment's transaction was lost on the way (it
// never landed): once the blockhash expired, the restarted host learns
// from the chain that it never can land, releases the claim (nothing was
// taken), and the payment sent again is refused; no token moved.
func TestAHostKilledWithATransactionThatNeverLandedReleasesTheClaim(t *testing.T) {
	c := newChainHost(t)
	h := c.start(t)
	c.chain.DropSends(t, true)
	st := c.store(t)
	saved := c.payUntilKilled(t, h, func() bool {
		claims, _ := st.Claims(context.Background(), store.ClaimSettling)
		return len(claims) == 1
	})
	c.chain.DropSends(t, false)
	c.chain.ExpireBlockhash(t)

	h = c.start(t)
	if l := h.log(); !strings.Contains(l, "looked up on the chain: landed_now_settled=0 never_landed_released=1 still_unknown=0") {
		t.Errorf("the restarted host did not release the claim:\n%s", l)
	}
	if claims, _ := st.Claims(context.Background(), store.ClaimSettling); len(claims) != 0 {
		t.Errorf("claims left settling: %+v", claims)
	}
	if got := c.undelivered(t); got != "" {
		t.Errorf("assay ledger report lists undelivered claims of a payment never taken: %q", got)
	}
	var out strings.Builder
	err := run([]string{"call", "--payment", saved, "--out", filepath.Join(c.dir, "again.json"), h.url() + "/stream-divergence/compare", c.body}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "402 payment_invalid") {
		t.Errorf("the expired payment sent again: %v", err)
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != 0 {
		t.Errorf("the seller holds %d", got)
	}
	if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000 {
		t.Errorf("the payer holds %d", got)
	}
	if lines, _ := st.Lines(context.Background()); len(lines) != 0 {
		t.Errorf("%d ledger lines", len(lines))
	}
}

// `assay ledger reconcile` holds the ledger against the chain: after paid
// calls it passes; a transfer to pay_to carrying this host's memo with no
// line (its line lost) and a line whose transaction the chain does not
// have are each listed, and the command fails.
func TestLedgerReconcileHoldsTheBooksAgainstTheChain(t *testing.T) {
	c := newChainHost(t)
	h := c.start(t)
	url := h.url() + "/stream-divergence/compare"
	for i := 0; i < 2; i++ {
		var out strings.Builder
		if err := run([]string{"call", "--wallet", c.payerFile, "--out", filepath.Join(c.dir, "report.json"), url, c.body}, &out, &out); err != nil {
			t.Fatalf("paid call %d: %v\n%s", i, err, h.log())
		}
	}
	st := c.store(t)
	lines := c.lines(t, 2)
	if out, err := c.reconcile(); err != nil || !strings.Contains(out, "2 paid lines checked, 2 transactions of the token account read: 0 lines not matching, 0 transfers without a line") {
		t.Fatalf("reconcile after two paid calls: %v\n%s", err, out)
	}

	// a payment the host's 402 asked for, settled on the chain with no line
	var pr x402.PaymentRequired
	body, _ := os.ReadFile(c.body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	raw, _ := base64.StdEncoding.DecodeString(resp.Header.Get(x402.HeaderRequired))
	if err := json.Unmarshal(raw, &pr); err != nil || len(pr.Accepts) != 1 {
		t.Fatalf("a 402: %v %s", err, raw)
	}
	sig, err := (&x402.Payer{Wallet: c.payer}).Sign(pr.Accepts[0], pr.Resource)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := x402.DecodePayment(sig)
	wire, _ := base64.StdEncoding.DecodeString(p.Payload.Transaction)
	tx, err := solana.DecodeTransaction(wire)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SignAs(c.feePayer); err != nil {
		t.Fatal(err)
	}
	unrecorded, err := c.chain.RPC.Send(context.Background(), tx.Serialize())
	if err != nil {
		t.Fatal(err)
	}
	// a line whose transaction never reached the chain
	lost := lines[0]
	fake := solana.EncodeBase58(make([]byte, 64))
	lost.TxID = &fake
	lostID, err := st.AppendLine(context.Background(), lost)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.reconcile()
	if err == nil || !strings.Contains(err.Error(), "1 lines not matching the chain, 1 transfers without a line") {
		t.Errorf("reconcile after a lost line and an unrecorded transfer: %v", err)
	}
	for _, want := range []string{
		fmt.Sprintf("line %d (stream-divergence): transaction %s is not on the chain, the line says %d", lostID, fake, sdPrice),
		fmt.Sprintf("transfer %s (slot", unrecorded), fmt.Sprintf("moved %d to pay_to with this host's memo and has no ledger line", sdPrice),
		"3 paid lines checked, 3 transactions of the token account read"} {
		if !strings.Contains(out, want) {
			t.Errorf("reconcile does not say %q:\n%s", want, out)
		}
	}
	c.noTrace(t, h)
}
