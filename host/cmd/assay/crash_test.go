package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/chaintest"
	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// killable is an `assay serve` process the test kills with SIGKILL and
// starts again on the same address, data dir and store.
type killable struct {
	t                          *testing.T
	bin, cfg, dir, store, addr string
	// extra are more serve flags (a chain to settle on)
	extra []string
	mu    sync.Mutex
	cmd   *exec.Cmd
	logs  bytes.Buffer
}

func (k *killable) start() {
	k.t.Helper()
	k.mu.Lock()
	cmd := exec.Command(k.bin, append([]string{"serve", "--config", k.cfg, "--listen", k.addr, "--data-dir", k.dir, "--store", k.store, "--payments", paymentsFor(k.extra)}, k.extra...)...)
	cmd.Stderr = &lockedWriter{mu: &k.mu, w: &k.logs}
	k.cmd = cmd
	k.mu.Unlock()
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	if startOver("http://"+k.addr, 20*time.Second, nil) {
		return
	}
	k.t.Fatalf("host did not start:\n%s", k.log())
}

func (k *killable) kill() {
	k.mu.Lock()
	cmd := k.cmd
	k.mu.Unlock()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func (k *killable) log() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.logs.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// outcome is what a paying client saw for one payment.
type outcome struct {
	payment string
	tx      string // the transaction of a delivered report ("" when none)
}

// Paid calls from four clients while the host is killed with SIGKILL at
// random moments and started again, on both stores. As the clients stop,
// every report a client received has its line and its issued claim (the
// line commits before the answer is written). Then every payment a client
// got no report for is sent again: each delivers its report, and a
// further re-send is the same answer. No claim is left unissued, no
// payment has two transactions, and the lines are exactly the reports.
func TestPaymentsSurviveHostKills(t *testing.T) {
	serve := killableServe(t)
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			k := serve(t, kind, nil)
			commits, writes := crashLoad(t, k, k.dir, k.store, nil)
			// on SQLite the kills landed while writes shared commits (the
			// group commit), so the exactness above holds for grouped writes
			if kind == "sqlite" && writes <= commits {
				t.Errorf("no group commit held more than one write (%v commits, %v writes): the kills never met the grouped path", commits, writes)
			}
		})
	}
}

// The same kills with every payment settled on a chain (the embedded
// facilitator broadcasting to a LiteSVM runtime), on both stores: after
// the re-sends, the ledger's lines are exactly the reports the clients
// hold, and the seller received exactly one price per line.
func TestPaymentsSurviveHostKillsOnTheChain(t *testing.T) {
	serve := killableServe(t)
	for _, kind := range storetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			chain := chaintest.Start(t)
			chain.Mint(t, x402.USDCDevnet)
			dir := t.TempDir()
			fee, _ := wallet.New(filepath.Join(dir, "fee-payer.json"))
			chain.Airdrop(t, address(fee), 50_000_000_000)
			seller, _ := wallet.New(filepath.Join(dir, "seller.json"))
			chain.TokenAccount(t, address(seller), 0)
			k := serve(t, kind, []string{"--solana-rpc", chain.URL, "--pay-to", address(seller), "--fee-payer-key", filepath.Join(dir, "fee-payer.json")})
			// the load pays for as long as the kills last, so how many
			// payments a client makes is the machine's speed: fund far more
			// than any machine pays, or a drained wallet's payments are
			// refused (InsufficientFunds) and can never be delivered
			const funds = 1_000_000 * sdPrice
			var payers []string
			t.Cleanup(func() { // runs before the chain stops, and after a failed re-send
				for _, p := range payers {
					if chain.Tokens(t, p) < sdPrice {
						t.Errorf("a payer ran out of tokens (%d funded): the load outran its funds", uint64(funds))
					}
				}
			})
			crashLoad(t, k, k.dir, k.store, func(addr string) { payers = append(payers, addr); chain.TokenAccount(t, addr, funds) })
			st, err := store.Open(context.Background(), k.store, k.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			lines := allLines(t, st)
			if got := chain.Tokens(t, address(seller)); got != uint64(len(lines))*sdPrice {
				t.Errorf("the seller received %d, the ledger has %d lines of %d", got, len(lines), sdPrice)
			}
		})
	}
}

// paymentsFor is the embedded facilitator's mode for those flags: local
// on the chain they name, house without one.
func paymentsFor(extra []string) string {
	for _, a := range extra {
		if strings.HasPrefix(a, "--solana-rpc") {
			return "local"
		}
	}
	return "house"
}

// killableServe builds the host and the stream-divergence plugin once;
// what it returns starts a killable `assay serve` of them on a store of
// the kind, with extra serve flags.
func killableServe(t *testing.T) func(t *testing.T, kind string, extra []string) *killable {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	plugin := testhost.Plugin(t, "plugins/stream-divergence")
	sum, err := pluginhost.PinOf(plugin)
	if err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, kind string, extra []string) *killable {
		cfg := filepath.Join(t.TempDir(), "assay.hcl")
		_ = os.WriteFile(cfg, []byte(fmt.Sprintf("plugin_dir = %q\nplugin \"stream-divergence\" {\n  path = %q\n  sha256 = %q\n}\n",
			filepath.Dir(plugin), filepath.Base(plugin), sum)), 0o600)
		spec, dataDir := storetest.Spec(t, kind)
		k := &killable{t: t, bin: bin, cfg: cfg, dir: dataDir, store: spec, addr: freePort(t), extra: extra}
		k.start()
		t.Cleanup(k.kill)
		return k
	}
}

// groupFigures reads a host's group-commit counters from /metrics.
func groupFigures(addr string) (commits, writes float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "assay_store_group_commits_total":
			commits = v
		case "assay_store_group_writes_total":
			writes = v
		}
	}
	return commits, writes
}

// crashLoad runs the paying load through kills and checks the books; it
// returns the group-commit counters the hosts showed just before each kill.
// With a chain, the payers' wallets are funded there (fund) and the books
// are checked against it too.
func crashLoad(t *testing.T, k *killable, dataDir, spec string, fund func(addr string)) (commits, writes float64) {
	url := "http://" + k.addr + "/stream-divergence/compare"
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	load := startPaying(t, url, 4, -1, fund)
	// kill at random moments for a bounded time
	const kills = 12
	began := time.Now()
	var down time.Duration
	for i := 0; i < kills; i++ {
		time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond)
		c, w := groupFigures(k.addr)
		commits, writes = commits+c, writes+w
		killed := time.Now()
		k.kill()
		k.start()
		down += time.Since(killed)
	}
	time.Sleep(300 * time.Millisecond)
	seen := load.stop()
	// how much of the run the host served: what a restart costs (figures
	// for the operator's notes, never asserted: timing is the machine's)
	t.Logf("served %.0f%% of %.1f s (%d restarts, %.0f ms each on average); %d of %d attempts paid", 100*(1-down.Seconds()/time.Since(began).Seconds()),
		time.Since(began).Seconds(), kills, float64(down.Milliseconds())/kills, len(seen), load.attempts.Load())
	st, err := store.Open(context.Background(), spec, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	answered, unanswered, resent := resendUndelivered(t, st, url, seen, k.log)
	t.Logf("%d kills: %d payments, %d reports delivered at once, %d without an answer, %d re-sent", kills, len(seen), answered, unanswered, resent)
	if answered == 0 || unanswered == 0 {
		t.Errorf("the load did not exercise both outcomes (%d delivered, %d unanswered)", answered, unanswered)
	}
	return commits, writes
}

var payBody = func() []byte {
	chunk := base64.StdEncoding.EncodeToString([]byte("a streamed answer"))
	return []byte(`{"streamed_capture":{"chunks":["` + chunk + `"]},"reference_output":{"chunks":["` + chunk + `"]}}`)
}()

// paying is a load of paying clients, each paying for one compare after
// another until stopped.
type paying struct {
	// attempts counts every call the clients made, paid or not
	attempts atomic.Int64
	mu       sync.Mutex
	seen     []outcome
	done     chan struct{}
	clients  sync.WaitGroup
}

// startPaying starts n clients paying at url (retries: the clients'
// MarkerRetries: -1 none, 0 the default three); fund, when set, gives
// each client's wallet its tokens on a chain.
func startPaying(t *testing.T, url string, n, retries int, fund func(addr string)) *paying {
	p := &paying{done: make(chan struct{})}
	for c := 0; c < n; c++ {
		priv, err := wallet.New(filepath.Join(t.TempDir(), "payer.json"))
		if err != nil {
			t.Fatal(err)
		}
		if fund != nil {
			fund(address(priv))
		}
		payer := &x402.Payer{Wallet: priv, MarkerRetries: retries, Client: &http.Client{Timeout: 20 * time.Second}}
		p.clients.Add(1)
		go func() {
			defer p.clients.Done()
			for {
				select {
				case <-p.done:
					return
				default:
				}
				p.attempts.Add(1)
				res, _ := payer.Call(context.Background(), url, payBody)
				if res == nil || res.Payment == "" {
					time.Sleep(20 * time.Millisecond) // the host is down: nothing was paid
					continue
				}
				o := outcome{payment: res.Payment}
				if res.Status == 200 && res.Settlement != nil {
					o.tx = res.Settlement.Transaction
				}
				p.mu.Lock()
				p.seen = append(p.seen, o)
				p.mu.Unlock()
			}
		}()
	}
	return p
}

// delivered counts the reports delivered so far.
func (p *paying) delivered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, o := range p.seen {
		if o.tx != "" {
			n++
		}
	}
	return n
}

func (p *paying) stop() []outcome {
	close(p.done)
	p.clients.Wait()
	return p.seen
}

// resendUndelivered checks the books as the clients stop, then sends
// again every payment a client got no report for. A report is issued (its
// line committed, its claim issued) before it is written, so every report
// a client received already has its issued claim and exactly one line,
// whatever the kills did: no waiting, no re-send needed for the books. A
// payment with no report is sent again: each then has its report (issued
// now, or the answer a killed host issued and never wrote), and a further
// re-send is that same answer again, with no second line. At the end no
// claim is left settling or settled, no payment has two transactions,
// and the lines are exactly the reports.
func resendUndelivered(t *testing.T, st *store.Store, url string, seen []outcome, logs func() string) (answered, unanswered, resent int) {
	delivered := map[string]string{} // payment -> tx of a report a client holds
	var resend []string
	for _, o := range seen {
		if o.tx != "" {
			answered++
			if prev, ok := delivered[o.payment]; ok && prev != o.tx {
				t.Errorf("one payment delivered under two transactions")
			}
			delivered[o.payment] = o.tx
		}
	}
	linesNow := lineCounts(t, st)
	for _, o := range seen {
		if o.tx == "" {
			unanswered++
			resend = append(resend, o.payment)
			continue
		}
		pp, err := x402.DecodePayment(o.payment)
		if err != nil {
			t.Fatal(err)
		}
		id, err := x402.PaymentID(pp)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := st.GetClaim(context.Background(), id); err != nil || c.State != store.ClaimIssued {
			t.Errorf("a report a client holds has its claim %q (%v), want issued", c.State, err)
		}
		if linesNow[o.tx] != 1 {
			t.Errorf("a report a client holds has %d ledger lines as the clients stop, want 1", linesNow[o.tx])
		}
	}
	resender := &x402.Payer{MarkerRetries: 3, Client: &http.Client{Timeout: 20 * time.Second}}
	for _, p := range resend {
		res, err := resender.Resend(context.Background(), url, payBody, p)
		if err != nil || res.Status != 200 || res.Settlement == nil {
			t.Fatalf("re-sending a payment the host left undelivered: %v %+v\n%s", err, res, logs())
		}
		if prev, ok := delivered[p]; ok && prev != res.Settlement.Transaction {
			t.Errorf("a re-sent payment delivered under another transaction")
		}
		delivered[p] = res.Settlement.Transaction
		again, err := resender.Resend(context.Background(), url, payBody, p)
		if err != nil || again.Status != 200 || !bytes.Equal(again.Body, res.Body) {
			t.Errorf("an issued payment sent again is not its answer again: %v %+v", err, again)
		}
	}
	for _, state := range []string{store.ClaimSettling, store.ClaimSettled} {
		if left, _ := st.Claims(context.Background(), state); len(left) != 0 {
			t.Errorf("%d claims left %s after every payment was re-sent", len(left), state)
		}
	}
	lines := allLines(t, st)
	reports := map[string]bool{}
	for _, tx := range delivered {
		reports[tx] = true
	}
	linesOf := map[string]int{}
	for _, l := range lines {
		if l.TxID == nil || !reports[*l.TxID] {
			t.Errorf("a ledger line with no delivered report")
			continue
		}
		linesOf[*l.TxID]++
	}
	for tx := range reports {
		if linesOf[tx] != 1 {
			t.Errorf("a delivered report has %d ledger lines, want 1", linesOf[tx])
		}
	}
	if len(reports) != len(delivered) {
		t.Errorf("%d payments delivered under %d transactions", len(delivered), len(reports))
	}
	return answered, unanswered, len(resend)
}

func allLines(t *testing.T, st *store.Store) []store.Line {
	t.Helper()
	lines, err := st.Lines(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// lineCounts is how many ledger lines each transaction has.
func lineCounts(t *testing.T, st *store.Store) map[string]int {
	out := map[string]int{}
	for _, l := range allLines(t, st) {
		if l.TxID != nil {
			out[*l.TxID]++
		}
	}
	return out
}
