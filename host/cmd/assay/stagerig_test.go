package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
	"github.com/assay-audit/assay/plugins/stream-divergence/divergence"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/wire"
)

// stageRig is a chain host whose RPC node is reached through a tap, on a
// store of either kind, with what the test has seen so far.
type stageRig struct {
	*chainHost
	top             *testing.T // the test whose end closes what the rig opens
	tap             *rpcTap
	plugins         string // the held family's dir
	spec, dd        string
	body            []byte
	st              *store.Store
	pg              *sql.Tx // the ledger's table lock, held
	seller0, payer0 uint64
	payer402        *solanarpc.Client
	// release ends the SQLite write lock the test holds
	release func()
	// reports counts the reports delivered; delivered holds their bytes
	// by transaction
	reports   int
	delivered map[string][]byte
}

func newStageRig(t *testing.T, kind string) *stageRig {
	c := newChainHost(t)
	r := &stageRig{chainHost: c, top: t, tap: newRPCTap(t, c.chain.URL), delivered: map[string][]byte{}}
	r.spec, r.dd = storetest.Spec(t, kind)
	r.cfg, r.plugins = heldConfig(t)
	var err error
	if r.body, err = os.ReadFile(c.body); err != nil {
		t.Fatal(err)
	}
	r.seller0, r.payer0 = c.chain.Tokens(t, address(c.seller)), c.chain.Tokens(t, address(c.payer))
	return r
}

// serve starts `assay serve` with the embedded facilitator settling on
// the chain through the tap.
func (r *stageRig) serve(t *testing.T, env ...string) *proc {
	t.Helper()
	h := launch(t, r.bin, env, "--config", r.cfg, "--data-dir", r.dd, "--store", r.spec, "--payments", "local",
		"--solana-rpc", r.tap.url, "--pay-to", address(r.seller), "--fee-payer-key", filepath.Join(r.dir, "fee-payer.json"))
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	return h
}

// remote starts `assay serve` settling through the facilitator at url.
func (r *stageRig) remote(t *testing.T, url string, env ...string) *proc {
	t.Helper()
	h := launch(t, r.bin, env, "--config", r.cfg, "--data-dir", r.dd, "--store", r.spec, "--payments", url, "--pay-to", address(r.seller))
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	return h
}

// store is the host's store, open until the test ends.
func (r *stageRig) store(t *testing.T) *store.Store {
	t.Helper()
	if r.st == nil {
		st, err := store.OpenExisting(context.Background(), r.spec, r.dd)
		if err != nil {
			t.Fatal(err)
		}
		r.top.Cleanup(func() { st.Close() })
		r.st = st
	}
	return r.st
}

func (r *stageRig) dbPath() string { return strings.TrimPrefix(r.spec, "sqlite:") }

// lockLedger takes PostgreSQL's ACCESS EXCLUSIVE lock on the ledger table
// in a transaction of the test's own (unlock ends it): the claims table
// stays writable, so a settlement is recorded and only the line waits.
// waiting says whether the host's line is waiting for it.
func (r *stageRig) lockLedger(t *testing.T) (waiting func() bool) {
	t.Helper()
	db, err := sql.Open("pgx", r.spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`LOCK TABLE ledger IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	r.pg = tx
	t.Cleanup(r.unlock)
	return func() bool {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND l.relation = 'ledger'::regclass AND a.query ILIKE '%INSERT INTO ledger%'`).Scan(&n)
		return err == nil && n == 1
	}
}

func (r *stageRig) unlock() {
	if r.pg != nil {
		_ = r.pg.Rollback()
		r.pg = nil
	}
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// payAsync pays once at url with no re-send of its own; the outcome
// arrives on the channel.
func (r *stageRig) payAsync(url string) <-chan *x402.Paid {
	out := make(chan *x402.Paid, 1)
	go func() {
		p := &x402.Payer{Wallet: r.payer, MarkerRetries: -1, Chain: r.payer402, Client: &http.Client{Timeout: 2 * time.Minute}}
		res, err := p.Call(context.Background(), url, r.body)
		if err == nil && res != nil && res.Status == http.StatusOK {
			res.Payment = "" // a report: nothing to send again
		}
		out <- res
	}()
	return out
}

// arrived waits for a held RPC call to reach the tap.
func arrived(t *testing.T, reached <-chan context.Context, what string) context.Context {
	t.Helper()
	select {
	case ctx := <-reached:
		return ctx
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not reach the chain within 30 s", what)
	}
	return nil
}

// noReport is the payment a call sent that got no report.
func (r *stageRig) noReport(t *testing.T, paid <-chan *x402.Paid, when string) string {
	t.Helper()
	select {
	case res := <-paid:
		if res == nil || res.Payment == "" {
			t.Fatalf("%s: the client got %+v, want no report and its payment", when, res)
		}
		return res.Payment
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the client still waits 30 s after the kill", when)
	}
	return ""
}

// kill ends the host with SIGKILL (its family processes die with it).
func (r *stageRig) kill(h *proc) {
	_ = h.cmd.Process.Kill()
	<-h.done
}

// resendOnce sends a payment again with the same submission: a report
// under a transaction no other report has; then (after between, when
// given) the same payment once more is the same bytes.
func (r *stageRig) resendOnce(t *testing.T, url, payment string, between func(*testing.T)) *x402.Paid {
	t.Helper()
	p := &x402.Payer{MarkerRetries: 3, Client: &http.Client{Timeout: time.Minute}}
	res, err := p.Resend(context.Background(), url, r.body, payment)
	if err != nil || res.Status != http.StatusOK || res.Settlement == nil || res.Settlement.Transaction == "" ||
		!bytes.Contains(res.Body, []byte(`"kind":"report"`)) {
		t.Fatalf("the payment sent again: %v %+v", err, res)
	}
	tx := res.Settlement.Transaction
	if _, ok := r.delivered[tx]; ok {
		t.Fatalf("a second payment delivered under transaction %s", tx)
	}
	r.delivered[tx] = res.Body
	r.reports++
	if between != nil {
		between(t)
	}
	again, err := p.Resend(context.Background(), url, r.body, payment)
	if err != nil || again.Status != http.StatusOK || !bytes.Equal(again.Body, res.Body) {
		t.Errorf("the payment sent once more is not the same answer: %v %+v", err, again)
	}
	return res
}

// booksEqual holds the books against the chain: the seller gained and the
// payer lost one price per report, the ledger has one line per report's
// transaction and no other, each transaction succeeded on the chain, no
// claim is left short of issued, and `assay ledger reconcile` finds the
// token account's transfers and the lines equal.
func (r *stageRig) booksEqual(t *testing.T) {
	t.Helper()
	n := uint64(r.reports)
	if got := r.chain.Tokens(t, address(r.seller)); got != r.seller0+n*sdPrice {
		t.Errorf("after %d reports the seller holds %d, want %d", n, got, r.seller0+n*sdPrice)
	}
	if got := r.chain.Tokens(t, address(r.payer)); got != r.payer0-n*sdPrice {
		t.Errorf("after %d reports the payer holds %d, want %d", n, got, r.payer0-n*sdPrice)
	}
	lines := allLines(t, r.store(t))
	of := map[string]int{}
	for _, l := range lines {
		if l.TxID == nil || l.House || l.PriceUSDCUnits != sdPrice {
			t.Errorf("line %+v", l)
			continue
		}
		of[*l.TxID]++
	}
	if len(lines) != r.reports {
		t.Errorf("%d ledger lines for %d reports", len(lines), r.reports)
	}
	for tx := range r.delivered {
		if of[tx] != 1 {
			t.Errorf("transaction %s has %d ledger lines, want 1", tx, of[tx])
		}
		if s, err := r.chain.RPC.SignatureStatus(context.Background(), tx); err != nil || s == nil || !s.Succeeded() {
			t.Errorf("transaction %s on the chain: %+v %v", tx, s, err)
		}
	}
	for _, state := range []string{store.ClaimSettling, store.ClaimSettled} {
		if left, _ := r.store(t).Claims(context.Background(), state); len(left) != 0 {
			t.Errorf("%d claims %s with every report delivered", len(left), state)
		}
	}
	var out strings.Builder
	err := run([]string{"ledger", "reconcile", "--data-dir", r.dd, "--store", r.spec, "--pay-to", address(r.seller), "--solana-rpc", r.chain.URL}, &out, &out)
	want := fmt.Sprintf("%d paid lines checked, %d transactions of the token account read: 0 lines not matching, 0 transfers without a line", n, n)
	if err != nil || !strings.Contains(out.String(), want) {
		t.Errorf("reconcile after %d reports: %v\n%s", n, err, out.String())
	}
}

// nothingMoved checks that the chain and the ledger are as the reports so
// far left them.
func (r *stageRig) nothingMoved(t *testing.T) {
	t.Helper()
	if got := r.chain.Tokens(t, address(r.seller)); got != r.seller0+uint64(r.reports)*sdPrice {
		t.Fatalf("after %d reports and a payment not taken the seller holds %d", r.reports, got)
	}
	if lines := allLines(t, r.store(t)); len(lines) != r.reports {
		t.Fatalf("%d ledger lines for %d reports", len(lines), r.reports)
	}
}

// requestLines counts the host's request lines for the paid route that
// hold what.
func (r *stageRig) requestLines(h *proc, what string) int {
	n := 0
	for _, l := range strings.Split(h.log(), "\n") {
		if strings.Contains(l, "request") && strings.Contains(l, "/stream-divergence/compare") && strings.Contains(l, what) {
			n++
		}
	}
	return n
}

// claims are the states of the store's claims, in the order of the
// stages that made them, joined by commas.
func (r *stageRig) claims(t *testing.T) string {
	t.Helper()
	var all []store.Claim
	for _, state := range []string{store.ClaimSettling, store.ClaimSettled, store.ClaimIssued} {
		c, err := r.store(t).Claims(context.Background(), state)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Created.Before(all[j].Created) })
	states := make([]string, len(all))
	for i, c := range all {
		states[i] = c.State
	}
	return strings.Join(states, ",")
}

// paidOutcomes counts the host's request lines for paid requests that
// sent a payment (the 402s' lines left out: one may still be on its way
// to the log as its client reads it).
func (r *stageRig) paidOutcomes(h *proc) int {
	return r.requestLines(h, "payment=") - r.requestLines(h, "payment=required")
}

// holdMeasuring has the family hold its next measurement.
func (r *stageRig) holdMeasuring(t *testing.T) {
	t.Helper()
	_ = os.Remove(filepath.Join(r.plugins, "measuring"))
	if err := os.WriteFile(filepath.Join(r.plugins, "hold"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// measuring waits until the family holds a measurement.
func (r *stageRig) measuring(t *testing.T, h *proc) {
	t.Helper()
	waitFile(t, filepath.Join(r.plugins, "measuring"), h)
}

// waitFile waits for a file a hook makes (the family's, or the host's
// once a report is issued).
func waitFile(t *testing.T, path string, h *proc) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30 s:\n%s", filepath.Base(path), h.log())
		}
	}
}

// paidVia is a client transport that hands the paid request (the one
// with PAYMENT-SIGNATURE) to send, and answers the client with a broken
// connection: the client gets nothing from it. Every other request goes
// to the host as usual.
type paidVia func(req *http.Request)

func (p paidVia) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(x402.HeaderSignature) == "" {
		return http.DefaultTransport.RoundTrip(req)
	}
	p(req)
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, errors.New("the connection was closed before an answer")
}

// forward writes the whole request to the host on a connection of its
// own, left open for the caller.
func forward(t *testing.T, req *http.Request) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	return conn
}

// cutBody sends the request's head and half its body, then closes.
func cutBody(t *testing.T, req *http.Request) {
	t.Helper()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", req.URL.RequestURI(), req.URL.Host, len(body))
	_ = req.Header.Write(&head)
	head.WriteString("\r\n")
	head.Write(body[:len(body)/2])
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// rpcTap is a JSON-RPC proxy in front of the chain: the test can hold
// the host's next call of a method once the chain has answered it.
type rpcTap struct {
	target, url string
	mu          sync.Mutex
	holds       map[string]*rpcHold
}

type rpcHold struct {
	reached chan context.Context
	resume  chan struct{}
	written chan struct{}
}

func newRPCTap(t *testing.T, target string) *rpcTap {
	p := &rpcTap{target: target, holds: map[string]*rpcHold{}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// pause holds the host's next call of method: reached gives the host's
// request context once the chain has answered (done when the host gave
// the call up), and the answer goes to the host when resume is called,
// which returns once it has been written.
func (p *rpcTap) pause(t *testing.T, method string) (reached <-chan context.Context, resume func()) {
	hold := &rpcHold{reached: make(chan context.Context, 1), resume: make(chan struct{}), written: make(chan struct{})}
	p.mu.Lock()
	p.holds[method] = hold
	p.mu.Unlock()
	once := sync.OnceFunc(func() { close(hold.resume) })
	t.Cleanup(once)
	return hold.reached, func() {
		once()
		select {
		case <-hold.written:
		case <-time.After(20 * time.Second):
			t.Errorf("the held %s answer was not written within 20 s", method)
		}
	}
}

func (p *rpcTap) serve(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	var call struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(raw, &call)
	// the chain answers whatever the host does meanwhile: a transfer
	// lands as it would on a node the host stopped listening to
	resp, err := http.Post(p.target, "application/json", bytes.NewReader(raw))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.mu.Lock()
	hold := p.holds[call.Method]
	delete(p.holds, call.Method)
	p.mu.Unlock()
	if hold != nil {
		hold.reached <- req.Context()
		select {
		case <-hold.resume:
		case <-time.After(30 * time.Second):
		}
		defer close(hold.written)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// heldPlugin is this test binary's name when a host runs it as its
// stream-divergence plugin (heldConfig): the real family, whose
// measurement a test can hold (heldFamily).
const heldPlugin = "assay-held-stream-divergence"

// init serves the held family when a host started this binary as its
// plugin (init runs before the test main, which then never runs); in any
// other run it does nothing. The family is the real engine, so the host's
// launch self-test passes and the window is the one a paid call meets.
func init() {
	if filepath.Base(os.Args[0]) != heldPlugin || os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		return
	}
	f, err := divergence.New()
	if err != nil {
		os.Exit(1)
	}
	sdk.ServeFamily(heldFamily{Family: f, dir: filepath.Dir(os.Args[0])})
	os.Exit(0)
}

// heldFamily is stream-divergence whose next measurement, once a test
// puts a "hold" file beside the plugin, says so with a "measuring" file
// and waits there until its request ends (the client gone, or the host
// killed: the plugin dies with it) or 30 s pass: the host is then in the
// family's round trip for certain, which no probe from outside can tell.
// The launch self-test's measurements, never held, run the real corpus.
type heldFamily struct {
	sdk.Family
	dir string
}

func (f heldFamily) Check(ctx context.Context, req sdk.Request) sdk.Checked {
	c := f.Family.Check(ctx, req)
	if c.Measures() {
		measure := c.Measure
		return sdk.Accept(func(ctx context.Context, clock func() time.Time) (sdk.Report, error) {
			if os.Remove(filepath.Join(f.dir, "hold")) == nil {
				_ = os.WriteFile(filepath.Join(f.dir, "measuring"), nil, 0o600)
				select {
				case <-ctx.Done():
					return sdk.Report{}, ctx.Err()
				case <-time.After(30 * time.Second):
				}
			}
			return measure(ctx, clock)
		})
	}
	return c
}

// heldConfig writes a config whose stream-divergence plugin is this test
// binary (a link to it, or a copy) serving heldFamily, and returns it
// with the plugin's dir.
func heldConfig(t *testing.T) (cfg, dir string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	path := filepath.Join(dir, heldPlugin)
	if err := os.Link(exe, path); err != nil {
		raw, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := pluginhost.PinOf(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(t.TempDir(), "assay.hcl")
	conf := fmt.Sprintf("plugin_dir = %q\nplugin \"stream-divergence\" {\n  path = %q\n  sha256 = %q\n}\n", dir, heldPlugin, sum)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, dir
}
