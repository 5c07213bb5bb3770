package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// shBody is a scope-hygiene export the family measures.
const shBody = `{"family":"mem0","form":"full_text","records":[{"id":"m1","content_text":"Prefers window seats","user_id":"alice"}]}`

// On a chain, with the embedded facilitator: a payment made from one
// route's 402 and sent to another route at the same price, one made for
// another seller, and one for another price are each refused with its
// reason before anything is verified or settled, and nothing moves on the
// chain; the first payment then buys its own route's report, and the
// price moves once.
func TestRouteRefusalsMoveNothingOnTheChain(t *testing.T) {
	c := newChainHost(t)
	// two services at one price: stream-divergence and scope-hygiene
	dir := t.TempDir()
	cfg := fmt.Sprintf("plugin_dir = %q\n", dir)
	for _, pkg := range []string{"plugins/stream-divergence", "plugins/scope-hygiene"} {
		name := "assay-" + filepath.Base(pkg)
		copyPlugin(t, pkg, dir, name)
		sum, _ := pluginhost.PinOf(filepath.Join(dir, name))
		cfg += fmt.Sprintf("plugin %q {\n  path = %q\n  sha256 = %q\n}\n", filepath.Base(pkg), name, sum)
	}
	c.cfg = filepath.Join(dir, "assay.hcl")
	_ = os.WriteFile(c.cfg, []byte(cfg), 0o600)
	h := c.start(t)
	own, other := h.url()+"/stream-divergence/compare", h.url()+"/scope-hygiene/audit"
	body, _ := os.ReadFile(c.body)

	requirements := func(url string, body []byte) x402.PaymentRequired {
		t.Helper()
		resp, err := http.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var pr x402.PaymentRequired
		raw, _ := base64.StdEncoding.DecodeString(resp.Header.Get(x402.HeaderRequired))
		if err := json.Unmarshal(raw, &pr); err != nil || resp.StatusCode != 402 || len(pr.Accepts) != 1 {
			t.Fatalf("%s: %d %v %s", url, resp.StatusCode, err, raw)
		}
		return pr
	}
	payer := &x402.Payer{Wallet: c.payer}
	pr := requirements(own, body)
	sig, err := payer.Sign(pr.Accepts[0], pr.Resource)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, _ := wallet.New(filepath.Join(t.TempDir(), "elsewhere.json"))
	c.chain.TokenAccount(t, address(elsewhere), 0)
	forSeller := pr.Accepts[0]
	forSeller.PayTo = solana.EncodeBase58(elsewhere.Public().(ed25519.PublicKey))
	otherSeller, _ := payer.Sign(forSeller, pr.Resource)
	forPrice := pr.Accepts[0]
	forPrice.Amount = "20000"
	otherPrice, _ := payer.Sign(forPrice, pr.Resource)

	refused := func(what, url string, body []byte, payment, want string) {
		t.Helper()
		status, code, raw := postCode(t, url, body, map[string]string{x402.HeaderSignature: payment})
		var answer struct {
			X402 struct {
				Error string `json:"error"`
			} `json:"x402"`
		}
		_ = json.Unmarshal(raw, &answer)
		if status != 402 || code != "payment_invalid" || answer.X402.Error != want {
			t.Errorf("%s: %d %s %q, want 402 payment_invalid %q", what, status, code, answer.X402.Error, want)
		}
	}
	refused("a payment sent to another route at the same price", other, []byte(shBody), sig, x402.ReasonRouteMismatch)
	refused("a payment made for another seller", own, body, otherSeller, solana.ReasonRecipientMismatch)
	refused("a payment made for another price", own, body, otherPrice, solana.ReasonAmountMismatch)
	if got := c.chain.Tokens(t, address(c.seller)); got != 0 {
		t.Fatalf("after the refusals the seller holds %d", got)
	}
	if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000 {
		t.Fatalf("after the refusals the payer holds %d", got)
	}
	if got := c.chain.Tokens(t, address(elsewhere)); got != 0 {
		t.Fatalf("after the refusals the other seller holds %d", got)
	}
	if status, code, raw := postCode(t, own, body, map[string]string{x402.HeaderSignature: sig}); status != 200 {
		t.Fatalf("the payment on its own route: %d %s %s\n%s", status, code, raw, h.log())
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != sdPrice {
		t.Errorf("the seller holds %d, want the one price %d", got, sdPrice)
	}
	if lines := c.lines(t, 1); len(lines) != 1 {
		t.Errorf("%d ledger lines, want 1", len(lines))
	}
}
