package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
)

// mcpSession connects the official Go MCP client to a host's /mcp.
func mcpSession(t *testing.T, base string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "assay-test", Version: "1"}, nil)
	s, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// /mcp on `assay serve`, through the official Go MCP client: each service
// has a free pre-check tool and a paid tool per op, with the request body's
// schema as input; an unpaid call is x402's payment-required result (the
// PaymentRequired as structuredContent and in content[0].text's x402/error
// wrapper); the payment in _meta["x402/payment"] buys a signed report
// (structuredContent, verified against /keys) with the settlement in
// _meta["x402/payment-response"]; the same payment sent over HTTP is the
// same report again, not a second charge (one payment path); and a
// stopped service's tools say so and refuse.
func TestMCPToolsPaidOverX402(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	data := t.TempDir()
	h := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", data)
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	ctx := t.Context()
	s := mcpSession(t, h.url())
	listed, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range listed.Tools {
		tools[tool.Name] = tool
	}
	paid, free := tools["stream_divergence_compare"], tools["stream_divergence_precheck"]
	if paid == nil || free == nil || len(tools) != 2 {
		t.Fatalf("tools: %v", keys(tools))
	}
	schema, _ := json.Marshal(paid.InputSchema)
	if !strings.Contains(string(schema), `"streamed_capture"`) || !strings.Contains(string(schema), `"reference_output"`) {
		t.Errorf("the paid tool's input schema is not the request body's: %s", schema)
	}
	if !strings.Contains(paid.Description, "Paid, $0.05") || !strings.Contains(paid.Description, "stream-divergence/v1") {
		t.Errorf("the paid tool's description: %s", paid.Description)
	}

	pre, err := s.CallTool(ctx, &mcp.CallToolParams{Name: free.Name, Arguments: json.RawMessage(payBody)})
	if err != nil || pre.IsError {
		t.Fatalf("the pre-check tool: %v %+v", err, pre)
	}
	if m, _ := pre.StructuredContent.(map[string]any); m["kind"] != "precheck" {
		t.Errorf("the pre-check's answer: %v", pre.StructuredContent)
	}

	unpaid, err := s.CallTool(ctx, &mcp.CallToolParams{Name: paid.Name, Arguments: json.RawMessage(payBody)})
	if err != nil || !unpaid.IsError {
		t.Fatalf("an unpaid call: %v %+v", err, unpaid)
	}
	var required x402.PaymentRequired
	raw, _ := json.Marshal(unpaid.StructuredContent)
	if err := json.Unmarshal(raw, &required); err != nil || required.X402Version != 2 || len(required.Accepts) != 1 {
		t.Fatalf("the unpaid call's structuredContent is not a PaymentRequired: %s", raw)
	}
	var wrapped struct {
		Err struct {
			Code int                  `json:"code"`
			Data x402.PaymentRequired `json:"data"`
		} `json:"x402/error"`
	}
	text := unpaid.Content[0].(*mcp.TextContent).Text
	if err := json.Unmarshal([]byte(text), &wrapped); err != nil || wrapped.Err.Code != 402 || len(wrapped.Err.Data.Accepts) != 1 {
		t.Errorf("content[0].text is not the x402/error wrapper: %s", text)
	}

	payer, err := wallet.New(filepath.Join(t.TempDir(), "payer.json"))
	if err != nil {
		t.Fatal(err)
	}
	header, err := (&x402.Payer{Wallet: payer}).Sign(required.Accepts[0], required.Resource)
	if err != nil {
		t.Fatal(err)
	}
	payment, _ := base64.StdEncoding.DecodeString(header)
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: paid.Name, Arguments: json.RawMessage(payBody),
		Meta: mcp.Meta{"x402/payment": json.RawMessage(payment)}})
	if err != nil || res.IsError {
		t.Fatalf("the paid call: %v %+v\n%s", err, res, h.log())
	}
	settled, _ := json.Marshal(res.Meta["x402/payment-response"])
	var settlement x402.SettleResponse
	if err := json.Unmarshal(settled, &settlement); err != nil || !settlement.Success || settlement.Transaction == "" {
		t.Errorf("_meta[x402/payment-response]: %s", settled)
	}
	report, _ := json.Marshal(res.StructuredContent)
	file := filepath.Join(t.TempDir(), "report.json")
	_ = os.WriteFile(file, report, 0o600)
	var out bytes.Buffer
	if err := run([]string{"verify", "--keys", h.url() + "/keys", file}, &out, &out); err != nil {
		t.Errorf("assay verify of the tool's report: %v\n%s", err, out.String())
	}

	// the payment spent over MCP, sent over HTTP: the same report again
	req, _ := http.NewRequest(http.MethodPost, h.url()+"/stream-divergence/compare", bytes.NewReader(payBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(x402.HeaderSignature, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	_, _ = again.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !jsonEqual(again.Bytes(), report) {
		t.Errorf("the MCP payment re-sent over HTTP: %d %s", resp.StatusCode, again.String())
	}
	st, err := store.OpenExisting(ctx, "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := len(allLines(t, st)); n != 1 {
		t.Errorf("%d ledger lines for one payment sent on both transports", n)
	}

	// a stopped service's tools say so, and refuse
	if err := run([]string{"service", "stop", "stream-divergence", "--reason", "maintenance window", "--config", sdConfig(t), "--data-dir", data}, &out, &out); err != nil {
		t.Fatalf("service stop: %v\n%s", err, out.String())
	}
	// the tools follow the catalog within a second
	eventually(t, "the tools of a stopped service saying so", 5*time.Second, func() bool {
		listed, err = mcpSession(t, h.url()).ListTools(ctx, nil)
		return err == nil && len(listed.Tools) == 2 && strings.HasPrefix(listed.Tools[0].Description, "STOPPED (maintenance window)")
	})
	refused, err := s.CallTool(ctx, &mcp.CallToolParams{Name: free.Name, Arguments: json.RawMessage(payBody)})
	if err != nil || !refused.IsError || !strings.Contains(refused.Content[0].(*mcp.TextContent).Text, "stopped") {
		t.Errorf("a stopped service's tool: %v %+v", err, refused)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// jsonEqual is whether two JSON texts hold the same value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return bytes.Equal(ra, rb)
}

// `assay mcp` as an agent's MCP client starts it (stdio, the official Go
// SDK's CommandTransport): it lists the host's tools, with a body_file
// alternative to inlining a body; a paid call is paid from the wallet and
// its report returned once its signature verified against the host's keys;
// the same call repeated is the same payment (its identifier), answered
// without a second charge; a call over the session's cap, and one over the
// per-call cap, are refused before anything is signed, saying why.
func TestAssayMCPPaysWithinItsCaps(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	data := t.TempDir()
	h := launch(t, bin, nil, "--config", sdConfig(t), "--data-dir", data)
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	dir := t.TempDir()
	walletFile := filepath.Join(dir, "payer.json")
	if _, err := wallet.New(walletFile); err != nil {
		t.Fatal(err)
	}
	bodyFile := filepath.Join(dir, "body.json")
	_ = os.WriteFile(bodyFile, payBody, 0o600)
	ctx := t.Context()
	local := func(perCall, session string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
		cmd := exec.Command(bin, "mcp", h.url(), "--wallet", walletFile, "--max-per-call", perCall, "--max-session", session)
		s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("assay mcp: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := local("0.05", "0.05")
	listed, err := s.ListTools(ctx, nil)
	if err != nil || len(listed.Tools) != 2 {
		t.Fatalf("tools: %v %+v", err, listed)
	}
	schema, _ := json.Marshal(listed.Tools[0].InputSchema)
	if !strings.Contains(string(schema), `"body_file"`) || !strings.Contains(string(schema), `"streamed_capture"`) {
		t.Errorf("the input schema offers no body_file beside the body: %s", schema)
	}
	byFile := json.RawMessage(`{"body_file":` + strconv.Quote(bodyFile) + `}`)
	pre, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "stream_divergence_precheck", Arguments: byFile})
	if err != nil || pre.IsError {
		t.Fatalf("the pre-check by body_file: %v %+v", err, pre)
	}
	st, err := store.OpenExisting(ctx, "sqlite", data)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 2 {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "stream_divergence_compare", Arguments: byFile})
		if err != nil || res.IsError {
			t.Fatalf("paid call %d: %v %+v\n%s", i, err, res, h.log())
		}
		if res.Meta["assay/key_id"] == "" || res.Meta["x402/payment-response"] == nil || res.Meta["assay/session_spent_usdc_units"] != float64(sdPrice) {
			t.Errorf("paid call %d's _meta: %v", i, res.Meta)
		}
		if m, _ := res.StructuredContent.(map[string]any); m["kind"] != "report" {
			t.Errorf("paid call %d's report: %v", i, res.StructuredContent)
		}
	}
	if n := len(allLines(t, st)); n != 1 {
		t.Errorf("the same call twice made %d ledger lines, want 1 (one payment)", n)
	}
	other := json.RawMessage(`{"streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["Yg=="]}}`)
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "stream_divergence_compare", Arguments: other})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "refused before signing: the call costs $0.05; $0.05 of this session's cap of $0.05 is spent") {
		t.Errorf("a call over the session's cap: %v %+v", err, res)
	}
	res, err = local("0.01", "5").CallTool(ctx, &mcp.CallToolParams{Name: "stream_divergence_compare", Arguments: other})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "over the per-call cap of $0.01") {
		t.Errorf("a call over the per-call cap: %v %+v", err, res)
	}
	if n := len(allLines(t, st)); n != 1 {
		t.Errorf("refused calls made ledger lines: %d", n)
	}
	// the host gone: no paid request can leave, and the tool says that
	// (the cause, nothing charged), never "call again, same payment"
	fresh := local("5", "5")
	h.stop()
	res, err = fresh.CallTool(ctx, &mcp.CallToolParams{Name: "stream_divergence_compare", Arguments: other})
	if text := toolText(res); err != nil || !res.IsError || !strings.Contains(text, "nothing was charged: no payment reached the host") || strings.Contains(text, "call the tool again") {
		t.Errorf("a paid call to a host that is gone: %v %q", err, text)
	}
}

// toolText is a tool result's first text content ("" for none).
func toolText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if c, ok := res.Content[0].(*mcp.TextContent); ok {
		return c.Text
	}
	return ""
}
