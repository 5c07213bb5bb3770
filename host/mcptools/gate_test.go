package mcptools

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// What the MCP SDK says of a request it refuses quotes the request (a
// malformed payload's tail, an unknown method or tool): /mcp answers in
// static words, whatever was sent.
func TestRefusalsQuoteNothingSent(t *testing.T) {
	host := http.NewServeMux()
	host.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"services":[]}`)) })
	host.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"paths":{}}`)) })
	g := New(Config{Host: host, Version: "test", MaxBody: 1 << 20})
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":SECRETXYZ}}}`,
		`SECRETXYZ`,
		`{"jsonrpc":"2.0","id":1,"method":"SECRETXYZ"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"SECRETXYZ","arguments":{}}}`,
		`{"jsonrpc":"SECRETXYZ","id":1,"method":"tools/list"}`,
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, r)
		if strings.Contains(rec.Body.String(), "SECRETXYZ") {
			t.Errorf("%s answered %d %s", body, rec.Code, rec.Body.String())
		}
	}
}
