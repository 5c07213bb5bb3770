package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/nodedeps"
	"github.com/assay-audit/assay/host/x402"
)

// interopDir is host/internal/testdata/x402-interop with its packages installed (npm ci
// when they are missing). The tests using it start a chain first, which
// skips them without node unless ASSAY_REQUIRE_CHAIN is set; a failed
// install fails the test.
func interopDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../internal/testdata/x402-interop")
	if err != nil {
		t.Fatal(err)
	}
	nodedeps.Install(t, dir, "@x402/svm")
	return dir
}

// official is facilitator.mjs (the official x402 facilitator over HTTP)
// as one process; restart runs it again on the same port.
type official struct {
	t                  *testing.T
	dir, feePayer, rpc string
	port               string
	cmd                *exec.Cmd
	stdin              io.WriteCloser
	done               chan struct{}
	mu                 sync.Mutex
	logs               bytes.Buffer
}

func (f *official) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logs.Write(b)
}

func (f *official) log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logs.String()
}

func (f *official) url() string { return "http://127.0.0.1:" + f.port }

// startOfficial runs the official facilitator signing with feePayer and
// settling on rpc; the test's end stops it.
func startOfficial(t *testing.T, feePayer, rpc string) *official {
	f := &official{t: t, dir: interopDir(t), feePayer: feePayer, rpc: rpc, port: "0"}
	f.start()
	t.Cleanup(f.stop)
	return f
}

func (f *official) start() {
	f.t.Helper()
	f.cmd = exec.Command("node", "facilitator.mjs", "--fee-payer", f.feePayer, "--rpc", f.rpc, "--port", f.port)
	f.cmd.Dir = f.dir
	f.cmd.Stderr = f
	var err error
	if f.stdin, err = f.cmd.StdinPipe(); err != nil {
		f.t.Fatal(err)
	}
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
	}()
	f.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(f.cmd, f.done)
	select {
	case f.port = <-port:
	case <-f.done:
		f.t.Fatalf("the official facilitator exited:\n%s", f.log())
	case <-time.After(30 * time.Second):
		f.t.Fatalf("the official facilitator did not start within 30 s:\n%s", f.log())
	}
}

// stop closes its input (it exits, dropping its in-memory replay cache)
// and waits; a kill after 5 s.
func (f *official) stop() {
	select {
	case <-f.done:
		return
	default:
	}
	_ = f.stdin.Close()
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		<-f.done
	}
}

// restart kills it (SIGKILL: its replay cache dies with it) and runs it
// again on the same port.
func (f *official) restart() {
	f.t.Helper()
	_ = f.cmd.Process.Kill()
	<-f.done
	f.start()
}

// settle posts a payment to the facilitator's /settle directly, as a
// resource server would, and returns its answer.
func (f *official) settle(sig string) x402.SettleResponse {
	f.t.Helper()
	p, err := x402.DecodePayment(sig)
	if err != nil {
		f.t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"x402Version": p.X402Version, "paymentPayload": p, "paymentRequirements": p.Accepted})
	resp, err := http.Post(f.url()+"/settle", "application/json", bytes.NewReader(raw))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var s x402.SettleResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK {
		f.t.Fatalf("/settle: %d %v\n%s", resp.StatusCode, err, f.log())
	}
	return s
}

// remoteHost starts `assay serve` paying through the facilitator at url.
func (c *chainHost) remoteHost(t *testing.T, url string, args ...string) *proc {
	h := launch(t, c.bin, nil, append([]string{"--config", c.cfg, "--data-dir", c.data, "--payments", url, "--pay-to", address(c.seller)}, args...)...)
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	return h
}

// The official x402 facilitator, run as the host's remote facilitator,
// settles for real: paid calls by `assay call` move exactly the price
// from the payer's token account to the seller's, the fee payer the
// facilitator names on /supported pays the chain's fees, and each ledger
// line names a transaction that succeeded on the chain.
func TestTheOfficialFacilitatorSettlesOnAChain(t *testing.T) {
	c := newChainHost(t)
	f := startOfficial(t, filepath.Join(c.dir, "fee-payer.json"), c.chain.URL)
	h := c.remoteHost(t, f.url())
	url := h.url() + "/stream-divergence/compare"
	feeBefore, _ := c.chain.RPC.Balance(context.Background(), address(c.feePayer))

	const n = 3
	for i := 0; i < n; i++ {
		var out strings.Builder
		if err := run([]string{"call", "--wallet", c.payerFile, "--solana-rpc", c.chain.URL, "--out", filepath.Join(c.dir, "report.json"), url, c.body}, &out, &out); err != nil {
			t.Fatalf("paid call %d: %v\n%s\nhost:\n%s\nfacilitator:\n%s", i, err, out.String(), h.log(), f.log())
		}
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != n*sdPrice {
		t.Errorf("the seller holds %d, want %d", got, n*sdPrice)
	}
	if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000-n*sdPrice {
		t.Errorf("the payer holds %d, want %d", got, 1_000_000-n*sdPrice)
	}
	lines := c.lines(t, n)
	var fees int64
	seen := map[string]bool{}
	for _, l := range lines {
		if l.House || l.TxID == nil || seen[*l.TxID] || l.PriceUSDCUnits != sdPrice || l.Payer == nil || *l.Payer != address(c.payer) {
			t.Fatalf("line %+v", l)
		}
		seen[*l.TxID] = true
		tx, err := c.chain.RPC.GetTransaction(context.Background(), *l.TxID)
		if err != nil || tx == nil {
			t.Fatalf("line %s: the chain has %+v (%v)", *l.TxID, tx, err)
		}
		if s, err := c.chain.RPC.SignatureStatus(context.Background(), *l.TxID); err != nil || !s.Succeeded() {
			t.Fatalf("line %s: status on the chain %+v (%v)", *l.TxID, s, err)
		}
		fees += tx.FeeLamports
	}
	if feeAfter, _ := c.chain.RPC.Balance(context.Background(), address(c.feePayer)); fees <= 0 || feeBefore-feeAfter != uint64(fees) {
		t.Errorf("the facilitator's fee payer paid %d lamports, the transactions' fees are %d", feeBefore-feeAfter, fees)
	}
}

// officialPay pays url with pay.mjs (the official x402 client) and saves
// the PAYMENT-SIGNATURE it sent to saveTo.
func officialPay(t *testing.T, c *chainHost, url, saveTo string) (status int, paymentResponse map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "pay.mjs", "--url", url, "--body", c.body, "--wallet", c.payerFile, "--rpc", c.chain.URL, "--save-payment", saveTo)
	cmd.Dir = interopDir(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("official client: %v\n%s", err, stderr.String())
	}
	var res struct {
		Status          int            `json:"status"`
		PaymentResponse map[string]any `json:"paymentResponse"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("official client's output: %v\n%s", err, out)
	}
	return res.Status, res.PaymentResponse
}

// The official client's payment sent again is answered from the host's
// own claim (the issued report again) and moves no money: at once, while the
// official facilitator still remembers it (duplicate_settlement from its
// replay cache), and after that facilitator restarted on the same port
// and forgot it (the cache is in memory only: what it answers then is up
// to the chain, and a node may answer an already-landed transaction's
// re-send with its old signature, i.e. success). The seller gained one
// price, the payer lost one, one ledger line names the payment's
// transaction; the same host then settles a new payment through the
// restarted facilitator.
func TestTheOfficialClientsPaymentSentTwiceMovesMoneyOnce(t *testing.T) {
	c := newChainHost(t)
	f := startOfficial(t, filepath.Join(c.dir, "fee-payer.json"), c.chain.URL)
	h := c.remoteHost(t, f.url())
	url := h.url() + "/stream-divergence/compare"
	saved := filepath.Join(c.dir, "payment.b64")

	status, pr := officialPay(t, c, url, saved)
	if status != http.StatusOK || pr["success"] != true || pr["transaction"] == "" {
		t.Fatalf("the official client's paid call: %d %v\nhost:\n%s\nfacilitator:\n%s", status, pr, h.log(), f.log())
	}
	raw, err := os.ReadFile(saved)
	if err != nil || len(raw) == 0 {
		t.Fatalf("the saved payment: %v", err)
	}
	sig := strings.TrimSpace(string(raw))
	body, _ := os.ReadFile(c.body)
	resend := func(when string) {
		t.Helper()
		status, code, raw := postCode(t, url, body, map[string]string{x402.HeaderSignature: sig})
		if status != http.StatusOK || code != "" || !strings.Contains(string(raw), `"kind":"report"`) {
			t.Errorf("the payment sent again %s: %d %s", when, status, raw)
		}
	}
	moved := func(when string, prices uint64) {
		t.Helper()
		if got := c.chain.Tokens(t, address(c.seller)); got != prices*sdPrice {
			t.Errorf("%s the seller holds %d, want %d", when, got, prices*sdPrice)
		}
		if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000-prices*sdPrice {
			t.Errorf("%s the payer holds %d, want %d", when, got, 1_000_000-prices*sdPrice)
		}
	}
	moved("after the payment", 1)

	resend("at once")
	moved("after it was sent again", 1)
	if s := f.settle(sig); s.Success || s.ErrorReason != "duplicate_settlement" {
		t.Errorf("the facilitator remembers the payment: %+v", s)
	}

	f.restart()
	if s := f.settle(sig); s.ErrorReason == "duplicate_settlement" {
		t.Errorf("the restarted facilitator still remembers the payment: %+v", s)
	}
	moved("after the restarted facilitator was given it", 1)
	resend("after the facilitator restarted")
	moved("after it was sent again to the host", 1)

	st := c.store(t)
	lines := c.lines(t, 1)
	if lines[0].TxID == nil || *lines[0].TxID != pr["transaction"] {
		t.Fatalf("the ledger line %+v, the payment's transaction %v", lines[0], pr["transaction"])
	}
	if s, err := c.chain.RPC.SignatureStatus(context.Background(), *lines[0].TxID); err != nil || !s.Succeeded() {
		t.Errorf("the line's transaction on the chain: %+v %v", s, err)
	}

	// the host goes on settling through the restarted facilitator
	if status, pr := officialPay(t, c, url, filepath.Join(c.dir, "second.b64")); status != http.StatusOK || pr["success"] != true {
		t.Fatalf("a new payment after the restart: %d %v\nhost:\n%s\nfacilitator:\n%s", status, pr, h.log(), f.log())
	}
	moved("after a new payment", 2)
	eventually(t, "two ledger lines", 10*time.Second, func() bool { lines, _ = st.Lines(context.Background()); return len(lines) == 2 })
}

// Beside the official facilitator, an RPC node lets the host know what the
// chain knows: its 402 carries a live blockhash (`assay call` needs no RPC
// of its own), and a host killed with SIGKILL while the facilitator was
// settling (the transaction landed, no answer came back) finds the claim
// on the chain by its memo when it starts again, so the payment sent again
// delivers the report once and the price moved once.
func TestARemoteHostKilledDuringSettlementResolvesByItsMemo(t *testing.T) {
	c := newChainHost(t)
	f := startOfficial(t, filepath.Join(c.dir, "fee-payer.json"), c.chain.URL)
	h := c.remoteHost(t, f.url(), "--solana-rpc", c.chain.URL)
	c.chain.HoldConfirmations(t, true)
	saved := c.payUntilKilled(t, h, func() bool { return c.chain.Tokens(t, address(c.seller)) == sdPrice })
	c.chain.HoldConfirmations(t, false)

	h = c.remoteHost(t, f.url(), "--solana-rpc", c.chain.URL)
	c.resentDeliversOnce(t, h, saved)
	var out strings.Builder
	st := c.store(t)
	lines := c.lines(t, 1)
	if s, err := c.chain.RPC.SignatureStatus(context.Background(), *lines[0].TxID); err != nil || !s.Succeeded() {
		t.Errorf("the line's transaction on the chain: %+v %v", s, err)
	}
	// a paid call beside it: its line's fee is the chain's
	if err := run([]string{"call", "--wallet", c.payerFile, "--out", filepath.Join(c.dir, "next.json"), h.url() + "/stream-divergence/compare", c.body}, &out, &out); err != nil {
		t.Fatalf("a paid call: %v\n%s", err, h.log())
	}
	eventually(t, "two ledger lines", 10*time.Second, func() bool { lines, _ = st.Lines(context.Background()); return len(lines) == 2 })
	for _, l := range lines {
		tx, err := c.chain.RPC.GetTransaction(context.Background(), *l.TxID)
		if err != nil || tx == nil || l.FeeLamports == nil || *l.FeeLamports != tx.FeeLamports {
			t.Errorf("line %d: fee %v, the chain's transaction %+v %v", l.ID, l.FeeLamports, tx, err)
		}
	}
	if said, err := c.reconcile(); err != nil || !strings.Contains(said, "2 paid lines checked") {
		t.Errorf("the books after the crash: %v\n%s", err, said)
	}
	c.noTrace(t, h)
}

// On a re-send too, beside the official facilitator, the chain decides
// before the facilitator is asked: a claim the restarted host could not
// resolve at start (its transaction not yet visible) is found by its memo
// when the payment comes again, and delivered once; the facilitator, whose
// replay cache still holds the transaction, would have refused it as a
// duplicate.
func TestARemoteClaimIsResolvedFromTheChainOnAResend(t *testing.T) {
	c := newChainHost(t)
	f := startOfficial(t, filepath.Join(c.dir, "fee-payer.json"), c.chain.URL)
	h := c.remoteHost(t, f.url(), "--solana-rpc", c.chain.URL)
	c.chain.HoldConfirmations(t, true)
	saved := c.payUntilKilled(t, h, func() bool { return c.chain.Tokens(t, address(c.seller)) == sdPrice })

	// restarted while the chain does not show the transaction yet
	h = c.remoteHost(t, f.url(), "--solana-rpc", c.chain.URL)
	if l := h.log(); !strings.Contains(l, "looked up on the chain: landed_now_settled=0 never_landed_released=0 still_unknown=1") {
		t.Errorf("the claim should be unknown at start:\n%s", l)
	}
	c.chain.HoldConfirmations(t, false)
	var out strings.Builder
	if err := run([]string{"call", "--payment", saved, "--out", filepath.Join(c.dir, "again.json"), h.url() + "/stream-divergence/compare", c.body}, &out, &out); err != nil {
		t.Fatalf("the payment sent again: %v\n%s", err, h.log())
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != sdPrice {
		t.Errorf("the seller holds %d, want one price (%d)", got, sdPrice)
	}
	lines := c.lines(t, 1)
	if s, err := c.chain.RPC.SignatureStatus(context.Background(), *lines[0].TxID); err != nil || !s.Succeeded() {
		t.Errorf("the line's transaction on the chain: %+v %v", s, err)
	}
	if got := c.undelivered(t); got != "" {
		t.Errorf("undelivered claims after the re-send: %q", got)
	}
}
