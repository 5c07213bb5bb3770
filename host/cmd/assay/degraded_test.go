package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/chaintest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// serveAt serves h on addr (a port the test reserved and nothing held
// since), stopped when the test ends: a node or facilitator that appears
// where a host was told to find it.
func serveAt(t *testing.T, addr string, h http.Handler) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// errorOf is an answer's error member.
func errorOf(raw []byte) (code, reason string, e map[string]any) {
	var a struct {
		Error map[string]any `json:"error"`
	}
	_ = json.Unmarshal(raw, &a)
	code, _ = a.Error["code"].(string)
	reason, _ = a.Error["reason"].(string)
	return code, reason, a.Error
}

// A host whose Solana node does not answer at start starts anyway
// (`serve --check` still fails on it): ready, its pre-checks served, its
// paid calls answered 503 payment_unavailable with nothing taken, the
// preflight in /readyz showing the node unanswered without refusing a
// start. Once a node answers at that address, the host takes payments
// with nothing restarted: a paid call settles on the chain.
func TestAHostStartsWithItsNodeDown(t *testing.T) {
	chain := chaintest.Start(t)
	chain.Mint(t, x402.USDCDevnet)
	dir := t.TempDir()
	feeFile := filepath.Join(dir, "fee-payer.json")
	fee, err := wallet.New(feeFile)
	if err != nil {
		t.Fatal(err)
	}
	chain.Airdrop(t, address(fee), 5_000_000_000)
	seller, _ := wallet.New(filepath.Join(dir, "seller.json"))
	chain.TokenAccount(t, address(seller), 0)
	payer, _ := wallet.New(filepath.Join(dir, "payer.json"))
	chain.TokenAccount(t, address(payer), 1_000_000)
	node := freePort(t) // nothing listens there yet
	cfg := sdConfig(t)
	args := []string{"--config", cfg, "--data-dir", t.TempDir(), "--payments", "local", "--solana-rpc", "http://" + node,
		"--pay-to", address(seller), "--fee-payer-key", feeFile}

	var out bytes.Buffer
	if err := run(append([]string{"serve", "--check"}, args...), &out, &out); err == nil || !strings.Contains(out.String(), "FAIL payments: the Solana node answers: no answer to getGenesisHash") {
		t.Fatalf("serve --check on a node that does not answer: %v\n%s", err, out.String())
	}

	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	h := launch(t, bin, nil, args...)
	if !h.up() {
		t.Fatalf("the host did not start with its node down:\n%s", h.log())
	}
	waitReady(t, h.url())
	if !strings.Contains(h.log(), "the payment path did not answer at start") {
		t.Errorf("the start does not say it is degraded:\n%s", h.log())
	}
	if status, code := precheckCode(t, h.url(), 0); status != 200 {
		t.Fatalf("a pre-check with the node down: %d %s", status, code)
	}
	route := h.url() + "/stream-divergence/compare"
	p := &x402.Payer{Wallet: payer}
	res, err := p.Call(context.Background(), route, payBody)
	if code, reason, _ := errorOf(res.Body); err != nil || res.Status != 503 || code != "payment_unavailable" || reason != x402.ReasonPathUnreachable {
		t.Fatalf("a paid call with the node down: %v %d %s", err, res.Status, res.Body)
	}
	var ready readiness.Report
	if code := getJSON(t, h.url()+"/readyz", &ready); code != 200 || ready.Payments == nil || ready.Payments.OK {
		t.Fatalf("/readyz with the node down: %d %+v", code, ready.Payments)
	}
	for _, c := range ready.Payments.Checks {
		if c.Check == "the Solana node answers" && (c.OK || c.RefusesStart) {
			t.Errorf("/readyz's node check: %+v", c)
		}
	}

	target, err := url.Parse(chain.URL)
	if err != nil {
		t.Fatal(err)
	}
	serveAt(t, node, httputil.NewSingleHostReverseProxy(target))
	eventually(t, "a paid call once the node answers", time.Minute, func() bool {
		res, err = p.Call(context.Background(), route, payBody)
		if err != nil || res.Status == 503 {
			time.Sleep(time.Second) // a held call asks the node again, at most every 5 s
			return false
		}
		return true
	})
	if res.Status != 200 {
		t.Fatalf("a paid call once the node answers: %d %s\n%s", res.Status, res.Body, h.log())
	}
	if got := chain.Tokens(t, address(seller)); got != sdPrice {
		t.Errorf("the seller holds %d, want %d", got, sdPrice)
	}
	if !strings.Contains(h.log(), "the payment path answers: paid calls are taken") {
		t.Errorf("the recovery is not logged:\n%s", h.log())
	}
}

// A host whose remote facilitator does not answer at start (and whose
// fee payer it has not been told) starts: its paid calls are answered 503
// payment_unavailable until the facilitator answers, then ask for a
// payment naming the fee payer the facilitator's /supported gives.
func TestAHostStartsWithItsFacilitatorDown(t *testing.T) {
	const feePayer = "B3CniwmZ3yY2BHch8rDPni9LWKdWNkszkWdXYioaCztN"
	fac := freePort(t)
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	h := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", t.TempDir(), "--payments", "http://"+fac)
	if !h.up() {
		t.Fatalf("the host did not start with its facilitator down:\n%s", h.log())
	}
	waitReady(t, h.url())
	route := h.url() + "/stream-divergence/compare"
	if status, code, raw := postCode(t, route, payBody, nil); status != 503 || code != "payment_unavailable" {
		t.Fatalf("a paid call with the facilitator down: %d %s", status, raw)
	}
	serveAt(t, fac, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/supported" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"kinds":[{"x402Version":2,"scheme":"exact","network":%q,"extra":{"feePayer":%q}}],"extensions":[],"signers":{}}`, x402.SolanaDevnet, feePayer)
	}))
	var raw []byte
	eventually(t, "a 402 once the facilitator answers", time.Minute, func() bool {
		var status int
		status, _, raw = postCode(t, route, payBody, nil)
		if status != 402 {
			time.Sleep(time.Second)
		}
		return status == 402
	})
	if !strings.Contains(string(raw), `"feePayer":"`+feePayer+`"`) {
		t.Errorf("the 402 does not name the facilitator's fee payer: %s", raw)
	}
}

// A store that settles on a chain knows it: `--payments local` settles a
// paid call and the store carries its payment identity (network, asset,
// pay_to) and the floor row every older build since ebf7df0 refuses. A
// host in house mode, one paying another pay_to and one with payments
// off, each started on that store, say so at start and answer a paid
// call 503 payment_identity_mismatch naming both identities (nothing
// verified or taken), while their pre-checks are served. `assay ledger
// reconcile` lists a house line written on the store since it settles.
func TestAStoreThatSettlesTakesNoHouseProofs(t *testing.T) {
	chain := chaintest.Start(t)
	chain.Mint(t, x402.USDCDevnet)
	dir := t.TempDir()
	feeFile := filepath.Join(dir, "fee-payer.json")
	fee, _ := wallet.New(feeFile)
	chain.Airdrop(t, address(fee), 5_000_000_000)
	seller, _ := wallet.New(filepath.Join(dir, "seller.json"))
	chain.TokenAccount(t, address(seller), 0)
	other, _ := wallet.New(filepath.Join(dir, "other.json"))
	chain.TokenAccount(t, address(other), 0)
	payer, _ := wallet.New(filepath.Join(dir, "payer.json"))
	chain.TokenAccount(t, address(payer), 1_000_000)
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	cfg, data := sdConfig(t), t.TempDir()
	start := func(extra ...string) *proc {
		t.Helper()
		h := launch(t, bin, nil, append([]string{"--config", cfg, "--data-dir", data, "--fee-payer-key", feeFile}, extra...)...)
		if !h.up() {
			t.Fatalf("the host did not start:\n%s", h.log())
		}
		waitReady(t, h.url())
		return h
	}
	p := &x402.Payer{Wallet: payer}
	h := start("--payments", "local", "--solana-rpc", chain.URL, "--pay-to", address(seller))
	if res, err := p.Call(context.Background(), h.url()+"/stream-divergence/compare", payBody); err != nil || res.Status != 200 {
		t.Fatalf("a paid call on the chain: %v %+v\n%s", err, res, h.log())
	}
	h.stop()
	st, err := store.OpenExisting(context.Background(), "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	id, ok, err := st.PaymentIdentity(context.Background())
	var floor int
	_ = st.DB().QueryRow(`SELECT MAX(version) FROM schema_migrations`).Scan(&floor)
	st.Close()
	want := store.PaymentIdentity{Network: x402.SolanaDevnet, Asset: x402.USDCDevnet, PayTo: address(seller)}
	if err != nil || !ok || !id.Same(want) || floor != store.FloorVersion {
		t.Fatalf("the store after a settlement: stamp %+v %v %v, MAX(version) %d", id, ok, err, floor)
	}

	for i, c := range []struct {
		args []string
		host map[string]any
	}{
		{[]string{"--payments", "house"}, map[string]any{"mode": "house"}},
		{[]string{"--payments", "local", "--solana-rpc", chain.URL, "--pay-to", address(other)},
			map[string]any{"network": x402.SolanaDevnet, "asset": x402.USDCDevnet, "pay_to": address(other)}},
		{[]string{"--payments", "off"}, map[string]any{"mode": "off"}},
	} {
		h := start(c.args...)
		status, _, raw := postCode(t, h.url()+"/stream-divergence/compare", payBody, nil)
		code, _, e := errorOf(raw)
		stored, _ := e["store_identity"].(map[string]any)
		hostID, _ := e["host_identity"].(map[string]any)
		if status != 503 || code != x402.CodeIdentityMismatch || stored["pay_to"] != address(seller) || fmt.Sprint(hostID) != fmt.Sprint(c.host) {
			t.Errorf("%v: a paid call on a store that settles: %d %s", c.args, status, raw)
		}
		if s, code := precheckCode(t, h.url(), i); s != 200 {
			t.Errorf("%v: a pre-check: %d %s", c.args, s, code)
		}
		if !strings.Contains(h.log(), "this store settles on a chain as another payment identity") || !strings.Contains(h.log(), address(seller)) {
			t.Errorf("%v: the start does not name the mismatch:\n%s", c.args, h.log())
		}
		h.stop()
	}
	if got := chain.Tokens(t, address(seller)); got != sdPrice {
		t.Errorf("the seller holds %d, want the one payment's %d", got, sdPrice)
	}
	var check bytes.Buffer
	err = run([]string{"serve", "--check", "--config", cfg, "--data-dir", data, "--payments", "house"}, &check, &check)
	if err == nil || !strings.Contains(check.String(), "FAIL payments: the store's payment identity: the store settles to pay_to "+address(seller)) {
		t.Errorf("serve --check in house mode on a store that settles: %v\n%s", err, check.String())
	}

	// a house proof's line as a build from before the stamp's triggers
	// would have written it (its claim aside): reconcile lists it
	st, err = store.OpenExisting(context.Background(), "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	proof := "5houseProof1111111111111111111111111111111111111111111111111111111111111111111111111"
	_, err = st.AppendLine(context.Background(), store.Line{Service: "stream-divergence", CriteriaID: "stream-divergence/v1", CriteriaRevision: "1.0.0",
		At: time.Now().UTC(), Day: time.Now().UTC().Format("2006-01-02"), PriceUSDCUnits: sdPrice, TxID: &proof, House: true, FamilyFields: "{}"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run([]string{"ledger", "reconcile", "--config", cfg, "--data-dir", data, "--solana-rpc", chain.URL, "--pay-to", address(seller)}, &out, &out)
	if err == nil || !strings.Contains(out.String(), "a house line (transaction \""+proof+"\") on a store that settles on a chain") ||
		!strings.Contains(out.String(), "2 paid lines checked") {
		t.Errorf("reconcile with a house line on a store that settles: %v\n%s", err, out.String())
	}
}

// beforeTheFloor is a build from before the "at most one version ahead"
// check (ebf7df0): the commit the issue rolled back to, whose `--payments
// local` without a node took house proofs.
const beforeTheFloor = "a2c6c9db290984a75fc74477d6c5ebacc96c6601"

// buildAt builds commit's assay binary from the repository's history, as
// buildPrevious does (a clone without it skips, unless
// ASSAY_REQUIRE_HISTORY is set).
func buildAt(t *testing.T, commit string) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		if os.Getenv("ASSAY_REQUIRE_HISTORY") != "" {
			t.Fatalf("this clone's history does not hold %s (ASSAY_REQUIRE_HISTORY is set)", commit[:12])
		}
		t.Skip("this clone's history does not hold " + commit[:12])
	}
	dir := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", root, commit, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit[:12], err, out)
	}
	bin := filepath.Join(dir, "assay-"+commit[:12])
	build := exec.Command("go", "build", "-o", bin, "./host/cmd/assay")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", commit[:12], err, out)
	}
	return bin
}

// An older build stops at a store that settles on a chain. One with the
// "at most one version ahead" check (previousVersion, the rolling
// upgrade's) refuses to open it: the floor row, "run a newer Assay". One
// from before the check (beforeTheFloor) starts, and the database refuses
// its house proof: the paid call is not answered with a report, and no
// claim or line of it is written.
func TestAnOlderBuildStopsAtAStoreThatSettles(t *testing.T) {
	cfg := sdConfig(t)
	for _, c := range []struct {
		commit string
		args   []string
	}{{previousVersion, []string{"--payments", "house"}}, {beforeTheFloor, []string{"--payments", "local"}}} {
		t.Run(c.commit[:7], func(t *testing.T) {
			bin := buildAt(t, c.commit)
			data := t.TempDir()
			stampStore(t, data)
			h := launch(t, bin, nil, append([]string{"--config", cfg, "--data-dir", data}, c.args...)...)
			if !h.up() {
				if !strings.Contains(h.log(), "run a newer Assay") {
					t.Fatalf("the older build stopped without naming the fix:\n%s", h.log())
				}
				t.Logf("%s refused the store at start", c.commit[:7])
				return
			}
			payer, _ := wallet.New(filepath.Join(t.TempDir(), "payer.json"))
			p := &x402.Payer{Wallet: payer, MarkerRetries: -1}
			res, err := p.Call(context.Background(), h.url()+"/stream-divergence/compare", payBody)
			if err == nil && res.Status == 200 {
				t.Fatalf("the older build issued a house proof on a store that settles: %s", res.Body)
			}
			if err == nil && res.Status == 402 {
				t.Fatalf("the older build did not get as far as a payment: %s", res.Body)
			}
			t.Logf("%s started; its paid call: %v %d %.300s", c.commit[:7], err, res.Status, res.Body)
			h.stop()
			st, err := store.OpenExisting(context.Background(), "sqlite", data)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var claims, lines int
			if err := st.DB().QueryRow(`SELECT (SELECT COUNT(*) FROM payment_claims), (SELECT COUNT(*) FROM ledger)`).Scan(&claims, &lines); err != nil || claims+lines != 0 {
				t.Errorf("the older build wrote %d claims and %d lines (%v)", claims, lines, err)
			}
		})
	}
}

// stampStore makes a SQLite store in data stamped as settling on devnet.
func stampStore(t *testing.T, data string) {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seller, _ := wallet.New(filepath.Join(t.TempDir(), "seller.json"))
	if _, err := st.StampPaymentIdentity(context.Background(), store.PaymentIdentity{Network: x402.SolanaDevnet, Asset: x402.USDCDevnet,
		PayTo: address(seller), StampedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
}
