package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/nodedeps"
	"github.com/assay-audit/assay/host/x402"
)

// toolResult is a tool result as mcp.mjs tells it.
type toolResult struct {
	IsError           bool                       `json:"isError"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	Text              *string                    `json:"text"`
	Meta              map[string]json.RawMessage `json:"meta"`
}

// kind is the "kind" member of the result's structuredContent.
func (r toolResult) kind() string {
	var v struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(r.StructuredContent, &v)
	return v.Kind
}

// officialMCPRun is what mcp.mjs (the official MCP TypeScript SDK, paying
// with the official x402 client) said on its one line.
type officialMCPRun struct {
	Tools               []string        `json:"tools"`
	Precheck            toolResult      `json:"precheck"`
	Unpaid              *toolResult     `json:"unpaid"`
	PaymentRequired     json.RawMessage `json:"paymentRequired"`
	PaymentRequiredFrom *string         `json:"paymentRequiredFrom"`
	Wrapped             json.RawMessage `json:"wrapped"`
	Paid                toolResult      `json:"paid"`
	PaymentResponse     json.RawMessage `json:"paymentResponse"`
	// SchemaErrors are the MCP SDK's checks of the tools' output schemas
	// that failed: each one a throw in an unmodified client.
	SchemaErrors []struct{ At, Error string } `json:"schemaErrors"`
}

// officialMCP runs mcp.mjs on stream-divergence's compare with the
// chain's body and fails the test when it does not answer.
func officialMCP(t *testing.T, c *chainHost, args ...string) officialMCPRun {
	t.Helper()
	dir := interopDir(t)
	nodedeps.Install(t, dir, "@modelcontextprotocol/sdk")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"mcp.mjs", "--service", "stream-divergence", "--op", "compare", "--body", c.body}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the official MCP client: %v\n%s", err, stderr.String())
	}
	var r officialMCPRun
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the official MCP client's output: %v\n%s\n%s", err, out, stderr.String())
	}
	for _, e := range r.SchemaErrors {
		t.Errorf("the official MCP client would have stopped at %s: %s", e.At, e.Error)
	}
	return r
}

// verifiedReport checks that a paid tool's result is a report, the same
// in its text as in its structuredContent, whose signature `assay verify`
// accepts against the host's keys.
func verifiedReport(t *testing.T, c *chainHost, hostURL, name string, r toolResult) {
	t.Helper()
	if r.IsError || r.kind() != "report" || r.Text == nil {
		t.Fatalf("%s: not a report: isError %v, structuredContent %s", name, r.IsError, r.StructuredContent)
	}
	if !jsonEqual([]byte(*r.Text), r.StructuredContent) {
		t.Errorf("%s: content[0].text is not the structuredContent: %s", name, *r.Text)
	}
	file := filepath.Join(c.dir, name+".json")
	if err := os.WriteFile(file, []byte(*r.Text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{"verify", "--keys", hostURL + "/keys", file}, &out, &out); err != nil {
		t.Errorf("%s: assay verify: %v\n%s", name, err, out.String())
	}
}

// settled is a successful settlement by the payer on the chain, decoded.
func settled(t *testing.T, c *chainHost, name string, raw json.RawMessage) x402.SettleResponse {
	t.Helper()
	var s x402.SettleResponse
	if err := json.Unmarshal(raw, &s); err != nil || !s.Success || s.Transaction == "" || s.Payer != address(c.payer) {
		t.Fatalf("%s: _meta[x402/payment-response] is not the payer's settlement: %s", name, raw)
	}
	if !c.onChain(t, s.Transaction) {
		t.Errorf("%s: the settlement's transaction %s did not succeed on the chain", name, s.Transaction)
	}
	return s
}

// freeInterval is stream-divergence's published minimum interval between
// one caller's free pre-checks, from the host's catalog.
func freeInterval(t *testing.T, hostURL string) time.Duration {
	t.Helper()
	var c struct {
		Services []struct {
			Service    string `json:"service"`
			IntervalMS int64  `json:"free_precheck_min_interval_ms"`
		} `json:"services"`
	}
	if status := getJSON(t, hostURL+"/", &c); status != 200 {
		t.Fatalf("the catalog: %d", status)
	}
	for _, s := range c.Services {
		if s.Service == "stream-divergence" {
			return time.Duration(s.IntervalMS) * time.Millisecond
		}
	}
	t.Fatal("the catalog lists no stream-divergence")
	return 0
}

// Real MCP clients buy reports on the chain. The official MCP TypeScript
// SDK, over Streamable HTTP to /mcp, lists the free pre-check tool and the
// paid tool and has the pre-check answered; its unpaid call of the paid
// tool is x402's payment-required result, whose PaymentRequired (v2, one
// way to pay: the price to the seller) the client finds where x402's MCP
// transport says to look first, structuredContent, and also in the
// x402/error wrapper of content[0].text; the official x402 client pays it
// from the payer's wallet, and the call made again with the payment in
// _meta["x402/payment"] returns a report that verifies against the host's
// keys, with the settlement in _meta["x402/payment-response"] naming the
// transaction the chain holds and the ledger records. The same SDK then
// drives `assay mcp` over stdio, which pays from the wallet itself: its
// paid tool returns a verified report too. Each paid call moved the price
// from the payer to the seller exactly once. The SDK checks the tools'
// output schemas and each structuredContent against its tool's, and an
// unmodified client throws on the first that fails: every such failure
// fails the test, as an agent on the official SDK would have stopped there.
func TestOfficialMCPClientPaysOnTheChain(t *testing.T) {
	c := newChainHost(t)
	h := c.start(t)
	tools := []string{"stream_divergence_precheck", "stream_divergence_compare"}
	moved := func(when string, prices uint64) {
		t.Helper()
		if got := c.chain.Tokens(t, address(c.seller)); got != prices*sdPrice {
			t.Errorf("%s the seller holds %d, want %d", when, got, prices*sdPrice)
		}
		if got := c.chain.Tokens(t, address(c.payer)); got != 1_000_000-prices*sdPrice {
			t.Errorf("%s the payer holds %d, want %d", when, got, 1_000_000-prices*sdPrice)
		}
	}

	// /mcp, the official client paying
	r := officialMCP(t, c, "--url", h.url()+"/mcp", "--wallet", c.payerFile, "--rpc", c.chain.URL)
	for _, name := range tools {
		if !slices.Contains(r.Tools, name) {
			t.Errorf("/mcp lists %v, not %s", r.Tools, name)
		}
	}
	if r.Precheck.IsError || r.Precheck.kind() != "precheck" {
		t.Errorf("the pre-check tool over /mcp: isError %v, structuredContent %s", r.Precheck.IsError, r.Precheck.StructuredContent)
	}
	if r.Unpaid == nil || !r.Unpaid.IsError || r.PaymentRequiredFrom == nil || *r.PaymentRequiredFrom != "structuredContent" {
		t.Errorf("the unpaid call: %+v, its PaymentRequired found in %v", r.Unpaid, r.PaymentRequiredFrom)
	}
	var required x402.PaymentRequired
	if err := json.Unmarshal(r.PaymentRequired, &required); err != nil || required.X402Version != 2 || len(required.Accepts) != 1 {
		t.Fatalf("the unpaid call's PaymentRequired: %s", r.PaymentRequired)
	}
	if a := required.Accepts[0]; a.Scheme != "exact" || a.Amount != strconv.Itoa(sdPrice) || a.Asset != x402.USDCDevnet || a.PayTo != address(c.seller) {
		t.Errorf("the way to pay: %+v", a)
	}
	var wrapped struct {
		Err *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"x402/error"`
	}
	if err := json.Unmarshal(r.Wrapped, &wrapped); err != nil || wrapped.Err == nil || wrapped.Err.Code != 402 || !jsonEqual(wrapped.Err.Data, r.PaymentRequired) {
		t.Errorf("content[0].text of the unpaid call is not the x402/error wrapper of its PaymentRequired: %s", r.Wrapped)
	}
	verifiedReport(t, c, h.url(), "report-over-mcp", r.Paid)
	s := settled(t, c, "the paid call over /mcp", r.PaymentResponse)
	if s.Network != required.Accepts[0].Network {
		t.Errorf("the settlement's network %q, the 402's %q", s.Network, required.Accepts[0].Network)
	}
	if lines := c.lines(t, 1); lines[0].TxID == nil || *lines[0].TxID != s.Transaction {
		t.Errorf("the ledger line %+v, the settlement's transaction %s", lines[0], s.Transaction)
	}
	moved("after the paid call over /mcp", 1)

	// `assay mcp` over stdio, paying by itself; its pre-check comes from
	// the same caller (this machine), so not before the service's
	// published interval between free pre-checks has passed
	time.Sleep(freeInterval(t, h.url()))
	r = officialMCP(t, c, "--command", c.bin, "--args", "mcp", h.url(), "--wallet", c.payerFile, "--solana-rpc", c.chain.URL)
	for _, name := range tools {
		if !slices.Contains(r.Tools, name) {
			t.Errorf("assay mcp lists %v, not %s", r.Tools, name)
		}
	}
	if r.Precheck.IsError || r.Precheck.kind() != "precheck" {
		t.Errorf("the pre-check tool of assay mcp: isError %v, structuredContent %s", r.Precheck.IsError, r.Precheck.StructuredContent)
	}
	verifiedReport(t, c, h.url(), "report-by-assay-mcp", r.Paid)
	s2 := settled(t, c, "the paid call by assay mcp", r.PaymentResponse)
	if spent := string(r.Paid.Meta["assay/session_spent_usdc_units"]); spent != strconv.Itoa(sdPrice) {
		t.Errorf("assay mcp says this session spent %s, want %d", spent, sdPrice)
	}
	if s2.Transaction == s.Transaction {
		t.Errorf("assay mcp's settlement is the first call's: %s", s2.Transaction)
	}
	c.lines(t, 2)
	moved("after the paid call by assay mcp", 2)
}
