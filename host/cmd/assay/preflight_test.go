package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/chaintest"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// The payment preflight, on a Solana runtime standing in for devnet: a
// node nothing answers, a node of another network and a pay_to without a
// USDC token account each fail `serve --check` (exit non-zero) and refuse
// the start, naming the fix; an unfunded fee payer only warns; once the
// account exists the check passes.
func TestPaymentPreflight(t *testing.T) {
	chain := chaintest.Start(t)
	chain.Mint(t, x402.USDCDevnet)
	dir := t.TempDir()
	seller, err := wallet.New(filepath.Join(dir, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	payTo := solana.EncodeBase58(seller.Public().(ed25519.PublicKey))
	cfg := sdConfig(t)
	check := func(extra ...string) (string, error) {
		var out bytes.Buffer
		args := append([]string{"serve", "--check", "--config", cfg, "--data-dir", dir, "--payments", "local", "--pay-to", payTo,
			"--fee-payer-key", filepath.Join(dir, "fee-payer.json")}, extra...)
		err := run(args, &out, &out)
		return out.String(), err
	}
	if _, err := wallet.New(filepath.Join(dir, "fee-payer.json")); err != nil {
		t.Fatal(err)
	}
	// a server that answers JSON-RPC, but not Solana's methods (a proxy
	// in front of something else): reached, so no "check the URL" advice
	notSolana := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`)
	}))
	defer notSolana.Close()
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"a node nothing answers", []string{"--solana-rpc", "http://127.0.0.1:1"}, "no answer to getGenesisHash (unreachable)"},
		{"a server without the method", []string{"--solana-rpc", notSolana.URL}, "the node answers but lacks getGenesisHash"},
		{"a node of another network", []string{"--solana-rpc", chain.URL, "--network-for-test"}, "its genesis hash begins EtWTRABZaYq6iMfeYKouRu166VU2xqa1"},
		{"no token account for pay_to", []string{"--solana-rpc", chain.URL}, "no USDC token account"},
	} {
		args := c.args
		if args[len(args)-1] == "--network-for-test" {
			args = args[:len(args)-1]
			t.Setenv(EnvNetwork, "mainnet")
		} else {
			t.Setenv(EnvNetwork, "")
		}
		out, err := check(args...)
		if err == nil || !strings.Contains(out+err.Error(), c.says) || !strings.Contains(out, "fix: ") {
			t.Errorf("%s: %v\n%s", c.name, err, out)
		}
		if strings.Contains(c.says, "lacks") && (strings.Contains(out, "API key") || !strings.Contains(out, "full API")) {
			t.Errorf("%s: the fix must not send the operator to the URL and its key:\n%s", c.name, out)
		}
	}
	t.Setenv(EnvNetwork, "")
	chain.TokenAccount(t, payTo, 0)
	out, err := check("--solana-rpc", chain.URL)
	if err != nil || !strings.Contains(out, "ok   payments: pay_to's USDC token account exists") ||
		!strings.Contains(out, "WARN payments: the fee payer holds SOL for 1000 transactions") || !strings.Contains(out, "send at least") {
		t.Errorf("a token account, an unfunded fee payer: %v\n%s", err, out)
	}
	// the start refuses what the check refuses
	other, _ := wallet.New(filepath.Join(dir, "other.json"))
	err = run([]string{"serve", "--config", cfg, "--data-dir", t.TempDir(), "--payments", "local", "--solana-rpc", chain.URL,
		"--pay-to", solana.EncodeBase58(other.Public().(ed25519.PublicKey))}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "payment preflight: this host cannot take a payment") || !strings.Contains(err.Error(), "create pay_to's associated token account") {
		t.Errorf("the start: %v", err)
	}
}

// A started host keeps its payment preflight in view: /readyz's body lists
// every check (the unfunded fee payer failing, not refusing the start,
// and not making the host unready), and the metrics, on a listener of
// their own with --metrics-listen (the public one answers 404), carry the
// count of failing checks, readiness, and the claim figures labelled with
// the store so a fleet's query does not add them up per host.
func TestPaymentPreflightInReadyzAndMetrics(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	chain := chaintest.Start(t)
	chain.Mint(t, x402.USDCDevnet)
	dir := t.TempDir()
	seller, err := wallet.New(filepath.Join(dir, "seller.json"))
	if err != nil {
		t.Fatal(err)
	}
	payTo := solana.EncodeBase58(seller.Public().(ed25519.PublicKey))
	chain.TokenAccount(t, payTo, 0)
	metricsAddr := freePort(t)
	h := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", t.TempDir(), "--payments", "local",
		"--solana-rpc", chain.URL+"/?api-key=preflight-key-0042", "--pay-to", payTo, "--metrics-listen", metricsAddr)
	if !h.up() {
		t.Fatalf("the host did not start:\n%s", h.log())
	}
	var ready readiness.Report
	raw, code := get(t, h.url()+"/readyz")
	if err := json.Unmarshal(raw, &ready); err != nil || code != 200 || !ready.Ready {
		t.Fatalf("/readyz %d %s", code, raw)
	}
	if strings.Contains(string(raw), "preflight-key-0042") || strings.Contains(h.log(), "preflight-key-0042") {
		t.Errorf("the node's key reached /readyz or the log")
	}
	p := ready.Payments
	if p == nil || p.OK || p.CheckedAt == "" {
		t.Fatalf("/readyz payments: %s", raw)
	}
	failed := map[string]readiness.PaymentCheck{}
	for _, c := range p.Checks {
		if !c.OK {
			failed[c.Check] = c
		}
	}
	fee, ok := failed["the fee payer holds SOL for 1000 transactions"]
	if len(failed) != 1 || !ok || fee.RefusesStart || !strings.Contains(fee.Fix, "send at least") || len(p.Checks) != 4 {
		t.Errorf("/readyz payments checks: %s", raw)
	}
	if _, code := get(t, h.url()+"/metrics"); code != 404 {
		t.Errorf("public /metrics: %d, want 404 with --metrics-listen", code)
	}
	if _, code := get(t, h.url()+"/stream-divergence/metrics"); code != 404 {
		t.Errorf("public /stream-divergence/metrics: %d, want 404 with --metrics-listen", code)
	}
	if doc, _ := get(t, h.url()+"/openapi.json"); strings.Contains(string(doc), `"/metrics"`) {
		t.Errorf("the OpenAPI document lists /metrics, which the public listener does not serve")
	}
	text, code := get(t, "http://"+metricsAddr+"/metrics")
	if code != 200 {
		t.Fatalf("metrics listener: %d", code)
	}
	for _, want := range []string{"assay_payment_preflight_problems 1", "assay_ready 1",
		`assay_payment_claims{state="settling",store="`, `assay_payment_claim_oldest_seconds{state="settling",store="`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if _, code := get(t, "http://"+metricsAddr+"/stream-divergence/metrics"); code != 200 {
		t.Errorf("a service's metrics on the metrics listener: %d", code)
	}
}

// A remote facilitator's /supported is part of the preflight: one that
// does not offer the exact scheme on the network fails serve --check and
// refuses the start (every payment would be refused); one that does
// passes.
func TestPaymentPreflightAsksTheFacilitator(t *testing.T) {
	offers := "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	fac := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/supported" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"kinds":[{"x402Version":2,"scheme":"exact","network":%q,"extra":{"feePayer":"B3CniwmZ3yY2BHch8rDPni9LWKdWNkszkWdXYioaCztN"}}],"extensions":[],"signers":{}}`, offers)
	}))
	defer fac.Close()
	cfg := sdConfig(t)
	dir := t.TempDir()
	check := func() (string, error) {
		var out bytes.Buffer
		err := run([]string{"serve", "--check", "--config", cfg, "--data-dir", dir, "--payments", fac.URL}, &out, &out)
		return out.String(), err
	}
	if out, err := check(); err != nil || !strings.Contains(out, "ok   payments: the facilitator's /supported offers the exact scheme on solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1") {
		t.Errorf("a facilitator that offers the network: %v\n%s", err, out)
	}
	offers = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	out, err := check()
	if err == nil || !strings.Contains(out+err.Error(), "its /supported does not list exact on solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1") {
		t.Errorf("a facilitator of another network: %v\n%s", err, out)
	}
	// with its fee payer configured the gate asks /supported nothing; the
	// preflight still does, and refuses the start
	hcl := filepath.Join(dir, "fee.hcl")
	raw, _ := os.ReadFile(cfg)
	if err := os.WriteFile(hcl, append(raw, []byte("\nfee_payer = \"B3CniwmZ3yY2BHch8rDPni9LWKdWNkszkWdXYioaCztN\"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	err = run([]string{"serve", "--config", hcl, "--data-dir", t.TempDir(), "--payments", fac.URL, "--listen", freePort(t)}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "payment preflight: this host cannot take a payment") || !strings.Contains(err.Error(), "does not list exact") {
		t.Errorf("the start: %v", err)
	}
}
