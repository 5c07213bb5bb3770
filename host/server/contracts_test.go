package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	ccorpus "github.com/assay-audit/assay/corpus/context-composition"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/host/x402"
	"github.com/assay-audit/assay/sdk/corpus"
)

// openAPIDoc fetches a host's OpenAPI document.
func openAPIDoc(t *testing.T, url string) map[string]any {
	t.Helper()
	r := do(t, "GET", url+"/openapi.json", nil, nil)
	if r.status != 200 {
		t.Fatalf("GET /openapi.json: %d", r.status)
	}
	var doc map[string]any
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func member(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// Every paid route's price is data in the OpenAPI document: x-payment-info
// (the payment-discovery draft's USD amount and the x402 terms) and
// x-assay-price (atomic units as a number), each equal to what the route's
// own 402 asks; every pre-check states its free allowance.
func TestOpenAPIPricesEveryPaidRoute(t *testing.T) {
	h := startPaidWith(t, testhost.Options{Adapters: caAdapters, NoFreeTier: true}, sdPkg, caPkg)
	doc := openAPIDoc(t, h.URL)
	for _, route := range []struct{ path, precheck, body string }{
		{"/stream-divergence/compare", "/stream-divergence/precheck", string(sdBody([]string{"ab"}, []string{"ab"}))},
		{"/context-audit/audit", "/context-audit/precheck", caBody(t, "generic-message-list", `{"messages": [{"role": "user", "text": "hi"}]}`)},
	} {
		op := member(doc, "paths", route.path, "post")
		r := do(t, "POST", h.URL+route.path, []byte(route.body), nil)
		if r.status != 402 {
			t.Fatalf("%s unpaid: %d %s", route.path, r.status, r.raw)
		}
		// node's fetch refuses response headers over 16 KiB in all, and
		// proxies have their own limits: the requirement stays well under
		if n := len(r.header.Get("PAYMENT-REQUIRED")); n > 8<<10 {
			t.Errorf("%s: PAYMENT-REQUIRED is %d bytes", route.path, n)
		}
		var pr x402.PaymentRequired
		raw, err := base64.StdEncoding.DecodeString(r.header.Get("PAYMENT-REQUIRED"))
		if err != nil || json.Unmarshal(raw, &pr) != nil || len(pr.Accepts) != 1 {
			t.Fatalf("%s: PAYMENT-REQUIRED does not decode", route.path)
		}
		a := pr.Accepts[0]
		x := member(op, "x-payment-info", "protocols").([]any)[0].(map[string]any)["x402"]
		for k, want := range map[string]any{"scheme": a.Scheme, "network": a.Network, "asset": a.Asset, "payTo": a.PayTo,
			"amount": a.Amount, "maxTimeoutSeconds": float64(a.MaxTimeoutSeconds)} {
			if got := member(x, k); got != want {
				t.Errorf("%s: x-payment-info x402 %s = %v, the 402 asks %v", route.path, k, got, want)
			}
		}
		units, _ := strconv.ParseInt(a.Amount, 10, 64)
		if got := member(op, "x-assay-price", "usdc_units"); got != float64(units) {
			t.Errorf("%s: x-assay-price.usdc_units = %v, the 402 asks %d", route.path, got, units)
		}
		usd, _ := member(op, "x-payment-info", "price", "amount").(string)
		if f, err := strconv.ParseFloat(usd, 64); err != nil || int64(f*1e6+0.5) != units || member(op, "x-payment-info", "price", "currency") != "USD" {
			t.Errorf("%s: x-payment-info price %q USD for %d units", route.path, usd, units)
		}
		free := member(doc, "paths", route.precheck, "post", "x-assay-free-tier")
		if n, _ := member(free, "per_day").(float64); n < 1 || member(doc, "paths", route.precheck, "post", "x-payment-info") != nil {
			t.Errorf("%s: the free allowance as data: %v", route.precheck, free)
		}
	}
}

func caBody(t *testing.T, format, record string) string {
	t.Helper()
	return fmt.Sprintf(`{"envelope_version": "context-composition-envelope/1", "declared_format_id": %q, "record": %s}`, format, record)
}

// requestValidator compiles a request schema from the OpenAPI document as
// a caller's validator would, its references brought back to its root.
func requestValidator(t *testing.T, doc map[string]any, name string) *jsonschema.Resolved {
	t.Helper()
	raw, err := json.Marshal(member(doc, "components", "schemas", name))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), `"#/components/schemas/`+name+`/`, `"#/`)
	return compileSchema(t, name, []byte(text))
}

// compileSchema compiles a JSON Schema as a caller's validator would.
func compileSchema(t *testing.T, name string, raw []byte) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	v, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s does not compile: %v", name, err)
	}
	return v
}

// The context-audit request schema describes every accepted format's
// record at every depth, from the adapters: every corpus body the service
// measures (or finds it cannot measure) validates, and records the
// adapters refuse as not their format are refused by the schema too, at
// the message, the block and the block's own members.
func TestOpenAPIDescribesEveryRecordFormat(t *testing.T) {
	h := startPaidWith(t, testhost.Options{Adapters: caAdapters, NoFreeTier: true}, caPkg)
	validators := map[string]*jsonschema.Resolved{"OpenAPI": requestValidator(t, openAPIDoc(t, h.URL), "ContextAuditRequest"),
		"MCP tool": toolInput(t, h.URL, "context_audit_audit")}
	var cases corpus.Corpus
	if err := json.Unmarshal(ccorpus.JSON, &cases); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range cases.Cases {
		var body any
		if c.Expect.Status != 200 && c.Expect.Status != 422 || json.Unmarshal(c.Request.Body, &body) != nil {
			continue
		}
		if _, ok := body.(map[string]any); !ok {
			continue
		}
		checked++
		for what, v := range validators {
			if err := v.Validate(body); err != nil {
				t.Errorf("corpus case %s is measured, but the %s schema refuses its body: %v", c.Name, what, err)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d corpus bodies checked", checked)
	}
	for _, c := range []struct{ format, record string }{
		{"anthropic-messages", `{"messages": 5}`},
		{"anthropic-messages", `[{"role": "user", "content": 7}]`},
		{"anthropic-messages", `{"messages": [5]}`},
		{"generic-message-list", `{"messages": [{"role": 3, "text": "x"}]}`},
		{"generic-message-list", `{"messages": [{"role": "user", "text": 5}]}`},
		{"letta-af", `7`},
		{"letta-af", `{"agents": [{"messages": "x"}]}`},
	} {
		body := caBody(t, c.format, c.record)
		r := do(t, "POST", h.URL+"/context-audit/precheck", []byte(body), nil)
		if r.status != 400 || errorCode(r) != "record_does_not_parse_as_declared_format" {
			t.Fatalf("%s %s: the service answered %d %s, not R-5", c.format, c.record, r.status, errorCode(r))
		}
		var inst any
		_ = json.Unmarshal([]byte(body), &inst)
		for what, v := range validators {
			if v.Validate(inst) == nil {
				t.Errorf("%s %s: the %s schema admits a record the adapter refuses as not its format", c.format, c.record, what)
			}
		}
	}
}

// toolInput compiles the input schema of one of the host's MCP tools, as
// /mcp lists it (mcptools builds it from the catalog and the OpenAPI
// document), and checks the paid tool carries its price as data.
func toolInput(t *testing.T, url, name string) *jsonschema.Resolved {
	t.Helper()
	tools, err := mcptools.Tools(do(t, "GET", url+"/", nil, map[string]string{"Accept": "application/json"}).raw,
		do(t, "GET", url+"/openapi.json", nil, nil).raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Name != name {
			continue
		}
		if tool.Paid && tool.Meta["x-payment-info"] == nil {
			t.Errorf("%s: no x-payment-info in its _meta", name)
		}
		raw, _ := json.Marshal(tool.InputSchema)
		return compileSchema(t, name+" input schema", raw)
	}
	t.Fatalf("no tool %s", name)
	return nil
}
