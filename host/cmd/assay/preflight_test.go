package main

import (
	"bytes"
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/chaintest"
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
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"a node nothing answers", []string{"--solana-rpc", "http://127.0.0.1:1"}, "no answer to getGenesisHash"},
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
