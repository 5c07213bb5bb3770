package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assay-audit/assay/host/x402"
)

// payerMCP starts `assay mcp` for c's payer against url with args and
// calls stream-divergence's compare with c's body.
func payerMCP(t *testing.T, c *chainHost, url string, args ...string) *mcp.CallToolResult {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cmd := exec.Command(c.bin, append([]string{"mcp", url, "--wallet", c.payerFile, "--max-per-call", "1", "--max-session", "1"}, args...)...)
	s, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("assay mcp: %v", err)
	}
	defer s.Close()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "stream_divergence_compare",
		Arguments: json.RawMessage(`{"body_file":` + jsonString(c.body) + `}`)})
	if err != nil {
		t.Fatalf("the tool call: %v", err)
	}
	return res
}

// needsNode is what a host's catalog and 402 say of a payer's node: the
// catalog's flag, and whether the 402 carries a blockhash.
func needsNode(t *testing.T, c *chainHost, base string) (flag bool, blockhash bool) {
	t.Helper()
	var catalog struct {
		Payment struct {
			PayerNeedsNode *bool `json:"payer_needs_node"`
		} `json:"payment"`
	}
	getJSON(t, base+"/", &catalog)
	if catalog.Payment.PayerNeedsNode == nil {
		t.Fatal("the catalog says nothing of a payer's node")
	}
	flag = *catalog.Payment.PayerNeedsNode
	body, _ := os.ReadFile(c.body)
	resp, err := http.Post(base+"/stream-divergence/compare", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var pr x402.PaymentRequired
	raw, _ := base64.StdEncoding.DecodeString(resp.Header.Get(x402.HeaderRequired))
	if err := json.Unmarshal(raw, &pr); err != nil || len(pr.Accepts) != 1 {
		t.Fatalf("a 402: %v %s", err, raw)
	}
	_, blockhash = pr.Accepts[0].Extra["recentBlockhash"].(string)
	return flag, blockhash
}

// A host paying through a remote facilitator (the official one) with no
// node of its own issues 402s without a blockhash and says so in its
// catalog; `assay mcp` with no node at all sends nothing and says why
// (never "call again"), with a node it pays, and so does the official
// client. The same host given a node puts the blockhash in its 402 and a
// payer with no node pays it. The chain moved exactly the prices paid.
func TestPayersWithAndWithoutANode(t *testing.T) {
	c := newChainHost(t)
	f := startOfficial(t, filepath.Join(c.dir, "fee-payer.json"), c.chain.URL)
	h := c.remoteHost(t, f.url())
	if flag, bh := needsNode(t, c, h.url()); !flag || bh {
		t.Fatalf("a remote host without a node: catalog payment.payer_needs_node %v, 402 blockhash %v", flag, bh)
	}
	res := payerMCP(t, c, h.url(), "--solana-rpc", "none")
	text := toolText(res)
	if !res.IsError || !strings.Contains(text, "nothing was charged") || !strings.Contains(text, x402.ErrNoNode.Error()) || strings.Contains(text, "call the tool again") {
		t.Fatalf("assay mcp with no node: %q", text)
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != 0 {
		t.Fatalf("the seller holds %d after a call that sent nothing", got)
	}
	if res := payerMCP(t, c, h.url(), "--solana-rpc", c.chain.URL); res.IsError {
		t.Fatalf("assay mcp with a node: %q\n%s", toolText(res), h.log())
	}
	if status, _ := officialPay(t, c, h.url()+"/stream-divergence/compare", filepath.Join(c.dir, "official.payment")); status != 200 {
		t.Fatalf("the official client with a node: %d", status)
	}
	h.stop()

	h = c.remoteHost(t, f.url(), "--solana-rpc", c.chain.URL)
	if flag, bh := needsNode(t, c, h.url()); flag || !bh {
		t.Fatalf("a remote host with a node: catalog payment.payer_needs_node %v, 402 blockhash %v", flag, bh)
	}
	if res := payerMCP(t, c, h.url(), "--solana-rpc", "none"); res.IsError {
		t.Fatalf("assay mcp with no node, the host's 402 carrying a blockhash: %q\n%s", toolText(res), h.log())
	}
	if got := c.chain.Tokens(t, address(c.seller)); got != 3*sdPrice {
		t.Errorf("the seller holds %d, want %d (three paid calls)", got, 3*sdPrice)
	}
}
