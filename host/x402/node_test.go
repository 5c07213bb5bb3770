package x402

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/assay-audit/assay/host/solana"
)

// withoutBlockhash is a 402 as a remote facilitator's host with no node
// issues it: no extra.recentBlockhash.
func withoutBlockhash(t *testing.T) func(w http.ResponseWriter) {
	key := func() string {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		return solana.EncodeBase58(pub)
	}
	pr := PaymentRequired{X402Version: Version, Resource: Resource{URL: "http://seller/op"}, Accepts: []Requirements{{
		Scheme: "exact", Network: SolanaDevnet, Amount: "1000", Asset: USDCDevnet, PayTo: key(), MaxTimeoutSeconds: 60,
		Extra: map[string]any{"feePayer": key()}}}}
	raw, err := json.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := EncodeHeader(json.RawMessage(raw))
	return func(w http.ResponseWriter) { w.Header().Set(HeaderRequired, h); w.WriteHeader(402) }
}

// A 402 without a blockhash, paid by a Payer with no node of its own, is
// signed with the blockhash of its network's default node; the node is
// asked for nothing else (no balance: that needs a node the payer chose).
func TestPayerReadsTheDefaultNodesBlockhash(t *testing.T) {
	const hash = "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N"
	var asked atomic.Int32
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		asked.Add(1)
		if req.Method != "getLatestBlockhash" {
			t.Errorf("the default node was asked %s", req.Method)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
			"context": map[string]any{"slot": 1}, "value": map[string]any{"blockhash": hash, "lastValidBlockHeight": 1150}}})
	}))
	defer node.Close()
	seller := &scripted{steps: []func(http.ResponseWriter){withoutBlockhash(t), status(200, "")}}
	srv := httptest.NewServer(seller)
	defer srv.Close()
	p := payer(t)
	p.Nodes = map[string]string{SolanaDevnet: node.URL}
	if _, err := p.Call(context.Background(), srv.URL, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 {
		t.Errorf("the default node was asked %d times, want 1", asked.Load())
	}
	pp, err := DecodePayment(seller.seen[1][HeaderSignature])
	if err != nil {
		t.Fatal(err)
	}
	if got := payloadBlockhash(pp); got != hash {
		t.Errorf("the payment was signed with blockhash %q, want the node's %q", got, hash)
	}
}

// With no node for the 402's network, nothing is signed or sent, and the
// error says what to give; a default node that does not answer says the
// same, naming the node.
func TestPayerWithoutANodeSendsNothing(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(502) }))
	defer down.Close()
	for name, nodes := range map[string]map[string]string{"no node": {}, "node down": {SolanaDevnet: down.URL}} {
		t.Run(name, func(t *testing.T) {
			seller := &scripted{steps: []func(http.ResponseWriter){withoutBlockhash(t), status(200, "")}}
			srv := httptest.NewServer(seller)
			defer srv.Close()
			p := payer(t)
			p.Nodes = nodes
			_, err := p.Call(context.Background(), srv.URL, []byte(`{}`))
			if !errors.Is(err, ErrNoNode) {
				t.Fatalf("err = %v, want ErrNoNode", err)
			}
			if len(seller.seen) != 1 || seller.seen[0][HeaderSignature] != "" {
				t.Errorf("the seller saw %d requests (%v), want the unpaid one only", len(seller.seen), seller.seen)
			}
		})
	}
}

// The default nodes are the networks' public endpoints.
func TestDefaultNodes(t *testing.T) {
	if DefaultNode(SolanaMainnet) != "https://api.mainnet-beta.solana.com" || DefaultNode(SolanaDevnet) != "https://api.devnet.solana.com" ||
		DefaultNode("solana:localnet") != "" {
		t.Errorf("DefaultNode: %q, %q, %q", DefaultNode(SolanaMainnet), DefaultNode(SolanaDevnet), DefaultNode("solana:localnet"))
	}
}
