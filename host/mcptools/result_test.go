package mcptools

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 402 with PAYMENT-REQUIRED is x402's payment-required result on a paid
// tool only: on a pre-check tool (the spent free allowance, whose
// requirement is the paid route's) the signed refusal is the result, so
// an MCP client is never asked to pay for a pre-check.
func TestA402IsAPaymentRequirementOnPaidToolsOnly(t *testing.T) {
	required := `{"x402Version":2,"error":"free_allowance_spent: ...","resource":{"url":"http://h/s/run"},"accepts":[{"scheme":"exact"}]}`
	refusal := `{"kind":"refusal","error":{"code":"free_allowance_spent","paid_route":"POST /s/run"}}`
	answer := func() *http.Response {
		h := http.Header{}
		h.Set("PAYMENT-REQUIRED", base64.StdEncoding.EncodeToString([]byte(required)))
		return &http.Response{StatusCode: 402, Header: h, Body: io.NopCloser(strings.NewReader(refusal))}
	}
	paid, err := Result(answer(), true)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := paid.StructuredContent.(map[string]any); !paid.IsError || m["x402Version"] != float64(2) ||
		!strings.Contains(paid.Content[0].(*mcp.TextContent).Text, `"x402/error"`) {
		t.Errorf("paid tool: %+v", paid)
	}
	free, err := Result(answer(), false)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := free.StructuredContent.(map[string]any)
	if e, _ := m["error"].(map[string]any); !free.IsError || e["code"] != "free_allowance_spent" || m["x402Version"] != nil ||
		free.Content[0].(*mcp.TextContent).Text != refusal {
		t.Errorf("pre-check tool: %+v", free)
	}
}
