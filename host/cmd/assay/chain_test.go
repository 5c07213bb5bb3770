package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
	if err == nil || !strings.Contains(err.Error(), x402.ErrShort.Error()) || !strings.Contains(err.Error(), "wallet "+address(w)) || !strings.Contains(err.Error(), "holds 1234 atomic units") ||
		!strings.Contains(err.Error(), "the call costs 50000 ($0.050000)") {
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
