package canaryproof

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/sdk/canary"
)

// MCPBodyBytes bounds the bodies SendMCP sends: the MCP layer carries a
// body to the same route untouched, so what it adds to custody (its
// answers' wrapping, its errors) shows on small bodies as on large ones,
// and the large ones' path through the families is the HTTP pass's.
const MCPBodyBytes = 64 << 10

// SendMCP sends each POST request as the MCP tool call it would be on
// /mcp (tools/call of <service>_<op>, its body the arguments) to h, which
// serves /mcp, and searches every answer: the signed answer in
// structuredContent and in content's text outside the exempt members, and
// the rest of the JSON-RPC envelope (an error's words) whole.
func (c *Canary) SendMCP(ctx context.Context, h http.Handler, reqs []Request, exempt []string) (map[int]int, []Finding) {
	statuses := map[int]int{}
	var findings []Finding
	for i, r := range reqs {
		if ctx.Err() != nil {
			break
		}
		service, op, ok := strings.Cut(strings.TrimPrefix(r.Path, "/"), "/")
		if r.Method != http.MethodPost || !ok || len(r.Body) > MCPBodyBytes {
			continue
		}
		var args any = json.RawMessage(r.Body)
		if !json.Valid(r.Body) {
			args = string(r.Body) // arguments that are no JSON object: the tool call's own refusal
		}
		call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": mcptools.ToolName(service, op), "arguments": args}})
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Note", c.Value)
		req.RemoteAddr = fmt.Sprintf("[fd00:ca:a6::%x]:4402", i+1)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		statuses[rec.Code]++
		surface := fmt.Sprintf("the MCP answer to tools/call %s (%d)", pathOf(mcptools.ToolName(service, op), c.Value), rec.Code)
		findings = append(findings, c.scanMCP(surface, rec.Body.Bytes(), exempt)...)
		for name, vals := range rec.Header() {
			findings = append(findings, c.Scan(surface+", header "+name, []byte(strings.Join(vals, "\n")))...)
		}
	}
	return statuses, findings
}

// scanMCP searches a JSON-RPC answer, the signed answer inside it outside
// the exempt members.
func (c *Canary) scanMCP(surface string, body []byte, exempt []string) []Finding {
	var env map[string]any
	if json.Unmarshal(body, &env) != nil {
		return c.Scan(surface, body)
	}
	var findings []Finding
	if result, ok := env["result"].(map[string]any); ok {
		if sc, ok := result["structuredContent"]; ok {
			raw, _ := json.Marshal(sc)
			findings = append(findings, c.Scan(surface+", structuredContent", canary.WithoutMembers(raw, exempt))...)
			delete(result, "structuredContent")
		}
		if content, ok := result["content"].([]any); ok {
			for _, item := range content {
				if m, ok := item.(map[string]any); ok {
					if text, ok := m["text"].(string); ok {
						findings = append(findings, c.Scan(surface+", content text", canary.WithoutMembers([]byte(text), exempt))...)
						delete(m, "text")
					}
				}
			}
		}
	}
	rest, _ := json.Marshal(env)
	return append(findings, c.Scan(surface, rest)...)
}
