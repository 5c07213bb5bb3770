// Package mcptools serves a host's services as Model Context Protocol
// tools on x402's MCP transport: for each service a free pre-check tool
// and a paid tool per op, their input schemas the request bodies'.
//
// A tool call is not a second payment path: it becomes the very HTTP
// request its route takes (the pre-check's or the op's), with the payment
// from _meta["x402/payment"] as the PAYMENT-SIGNATURE header, sent to the
// host's own handler; its answer is then put in MCP's terms (a 402's
// PaymentRequired as an isError result, the settlement as
// _meta["x402/payment-response"], the signed report as structuredContent).
// Validation before payment, the free tier, admission, claims, redelivery,
// the ledger, the self-check and custody are therefore the HTTP routes'
// own, and a payment spent on one transport is a replay on the other.
//
// A pre-check tool's call proves the caller's wallet as the HTTP route's
// SIGN-IN-WITH-X header does (x402's sign-in-with-x; the MCP transport
// says nothing of it): the proof rides in _meta["x402/sign-in-with-x"],
// as its JSON object or as the header's base64 value, and the challenge
// to sign is the answer's sign_in member (structuredContent); the value
// "challenge" asks for one without spending a pre-check.
package mcptools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Meta keys of x402's MCP transport.
const (
	MetaPayment         = "x402/payment"
	MetaPaymentResponse = "x402/payment-response"
	// MetaSignIn carries a pre-check's sign-in proof (the transport
	// names no key for extensions: this one follows its x402/ names)
	MetaSignIn   = "x402/sign-in-with-x"
	errorWrapper = "x402/error"
)

// Headers carrying the MCP request's connection to the tool call's
// internal request; a value the client sent is dropped first.
const (
	// remoteHeader: the client address (the free tier counts callers
	// without a proven wallet by it)
	remoteHeader = "X-Assay-Mcp-Remote-Addr"
	// hostHeader and tlsHeader: the Host the client reached and whether
	// over TLS, which a pre-check's sign-in challenge binds (its domain
	// and uri: the pre-check route's URL on that host)
	hostHeader = "X-Assay-Mcp-Host"
	tlsHeader  = "X-Assay-Mcp-Tls"
)

// Config is what the tools are served from.
type Config struct {
	// Host is the host's own handler: it answers the catalog, the OpenAPI
	// document, and every request a tool call becomes.
	Host http.Handler
	// Version names the implementation to MCP clients.
	Version string
	// MaxBody bounds an MCP request's body (a tool call's arguments are a
	// request body, JSON-escaped once more).
	MaxBody int64
}

// Gate is the /mcp endpoint.
type Gate struct {
	cfg     Config
	handler http.Handler

	mu         sync.Mutex
	key        [32]byte // the tools the cached server was built from
	current    *mcp.Server
	checked    time.Time // when the catalog was last read
	refreshing bool      // a request is reading it now
}

// recheck is how long a catalog read stands: tools follow a service's
// stop or resume within it, and a burst of calls reads the catalog once.
const recheck = time.Second

// New builds the /mcp endpoint: Streamable HTTP, stateless (any host of a
// fleet answers any request, as the HTTP routes do), JSON answers.
func New(cfg Config) *Gate {
	g := &Gate{cfg: cfg}
	g.handler = mcp.NewStreamableHTTPHandler(g.server, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, MaxRequestBodyBytes: cfg.MaxBody})
	return g
}

// ServeHTTP answers an MCP request. The SDK's answer to a call of a tool
// that does not exist quotes the name the caller sent; it is answered
// without it, as the host's own 404 names no path.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(remoteHeader)
	r.Header.Set(remoteHeader, r.RemoteAddr)
	r.Header.Del(hostHeader)
	r.Header.Set(hostHeader, r.Host)
	r.Header.Del(tlsHeader)
	if r.TLS != nil {
		r.Header.Set(tlsHeader, "1")
	}
	rec := httptest.NewRecorder()
	g.handler.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	switch {
	case rec.Code >= 400:
		// the SDK's plain-text refusals quote the request (a malformed
		// payload's tail): answered in static words
		body = []byte(fmt.Sprintf("mcp: not a JSON-RPC request this endpoint takes (status %d)\n", rec.Code))
		rec.Header().Set("Content-Type", "text/plain; charset=utf-8")
	case bytes.Contains(body, []byte(`"error":`)):
		body = staticErrors(body)
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// rpcMessages are the words of a JSON-RPC error by its code: the SDK's
// own quote what the caller sent (a tool's name, a method, a payload).
var rpcMessages = map[float64]string{-32700: "parse error", -32600: "invalid request", -32601: "method not found",
	-32602: "invalid params (tools/list names the tools and their input schemas)", -32603: "internal error"}

// staticErrors is a JSON-RPC answer (one or a batch) whose error objects
// say their code's static words and carry no data.
func staticErrors(body []byte) []byte {
	var batch []map[string]any
	single := false
	if err := json.Unmarshal(body, &batch); err != nil {
		var one map[string]any
		if json.Unmarshal(body, &one) != nil {
			return body
		}
		batch, single = []map[string]any{one}, true
	}
	changed := false
	for _, m := range batch {
		if e, ok := m["error"].(map[string]any); ok {
			code, _ := e["code"].(float64)
			msg, ok := rpcMessages[code]
			if !ok {
				msg = "error"
			}
			e["message"] = msg
			delete(e, "data")
			changed = true
		}
	}
	if !changed {
		return body
	}
	var out []byte
	if single {
		out, _ = json.Marshal(batch[0])
	} else {
		out, _ = json.Marshal(batch)
	}
	return out
}

// server is the MCP server for the catalog as it stands: tools follow the
// loaded services and their states (a stopped service's tools say so),
// rebuilt only when the tools change. One request a second re-reads the
// catalog; the rest are answered by the server in hand meanwhile, so no
// call waits on a rebuild but the one that found it due. The key is the
// tools themselves, not the catalog's bytes: the catalog also carries
// live counts (an adapter's answers in the last minute) that change with
// every call and would rebuild the server, its schemas compiled again,
// every second under load.
func (g *Gate) server(r *http.Request) *mcp.Server {
	g.mu.Lock()
	if g.current != nil && (g.refreshing || time.Since(g.checked) < recheck) {
		defer g.mu.Unlock()
		return g.current
	}
	g.refreshing = true
	g.mu.Unlock()
	s := g.refresh(r.Context())
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refreshing, g.checked = false, time.Now()
	if s != nil {
		g.current = s
	}
	if g.current == nil {
		g.current = mcp.NewServer(&mcp.Implementation{Name: "assay", Version: g.cfg.Version}, nil)
	}
	return g.current
}

// refresh builds a server when the tools differ from the current one's
// (nil: keep the current one).
func (g *Gate) refresh(ctx context.Context) *mcp.Server {
	catalog, err := g.get(ctx, "/")
	if err != nil {
		return nil
	}
	openapi, err := g.get(ctx, "/openapi.json")
	if err != nil {
		return nil
	}
	tools, err := Tools(catalog, openapi)
	if err != nil {
		return nil
	}
	described, err := json.Marshal(tools)
	if err != nil {
		return nil
	}
	key := sha256.Sum256(described)
	g.mu.Lock()
	same := g.current != nil && key == g.key
	g.mu.Unlock()
	if same {
		return nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "assay", Title: "Assay: paid, signed, criteria-bound audits", Version: g.cfg.Version},
		&mcp.ServerOptions{Instructions: instructions})
	for _, t := range tools {
		s.AddTool(t.Tool, g.call(t))
	}
	g.mu.Lock()
	g.key = key
	g.mu.Unlock()
	return s
}

const instructions = "Each paid tool returns a report signed by the host (Ed25519, keys at /keys) under a published criteria document: " +
	"facts, never a score or a grade. A paid tool first answers with the x402 PaymentRequired (isError); pay it and call again with " +
	"the payment in _meta[\"x402/payment\"]. The *_precheck tools are free: they say whether a body would be measured; " +
	"a wallet proved in _meta[\"x402/sign-in-with-x\"] (x402 sign-in-with-x, the answer's sign_in signed) is counted instead of the address."

// get is a GET of the host's own JSON.
func (g *Gate) get(ctx context.Context, path string) ([]byte, error) {
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	r.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	g.cfg.Host.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("mcptools: GET %s: status %d", path, rec.Code)
	}
	return rec.Body.Bytes(), nil
}

// call answers a tool call through the host's own route.
func (g *Gate) call(t Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		body := []byte(req.Params.Arguments)
		if len(body) == 0 {
			body = []byte("{}")
		}
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Path, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("mcptools: %w", err)
		}
		r.Header.Set("Content-Type", "application/json")
		if req.Extra != nil && req.Extra.Header != nil {
			r.RemoteAddr = req.Extra.Header.Get(remoteHeader)
			for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Proto"} {
				if v := req.Extra.Header.Values(h); len(v) > 0 {
					r.Header[h] = v
				}
			}
			if !t.Paid {
				signInOn(r, req.Extra.Header)
			}
		}
		if p, ok := req.Params.Meta[MetaSignIn]; ok && !t.Paid {
			h, err := signInHeader(p)
			if err != nil {
				return nil, err
			}
			r.Header.Set("SIGN-IN-WITH-X", h)
		}
		if p, ok := req.Params.Meta[MetaPayment]; ok && t.Paid {
			raw, err := json.Marshal(p)
			if err != nil {
				return nil, fmt.Errorf("mcptools: the payment in _meta: %w", err)
			}
			r.Header.Set("PAYMENT-SIGNATURE", base64.StdEncoding.EncodeToString(raw))
		}
		rec := httptest.NewRecorder()
		g.cfg.Host.ServeHTTP(rec, r)
		return Result(rec.Result(), t.Paid)
	}
}

// signInOn makes a pre-check's internal request the one the client would
// have sent the HTTP route on the host it reached (its Host, and TLS when
// the MCP request came over it): the sign-in challenge binds both.
func signInOn(r *http.Request, from http.Header) {
	r.Host = from.Get(hostHeader)
	if from.Get(tlsHeader) == "1" {
		r.TLS = &tls.ConnectionState{}
	}
}

// signInHeader is the SIGN-IN-WITH-X value of _meta's proof: the header's
// value as it is, or the proof object's JSON in base64.
func signInHeader(p any) (string, error) {
	if s, ok := p.(string); ok {
		return s, nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("mcptools: the sign-in proof in _meta: %w", err)
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// Result is an HTTP route's answer in MCP's terms: a 200 is the signed
// answer as structuredContent and text, with the settlement (the
// PAYMENT-RESPONSE header) in _meta; on a paid tool (paid), a 402
// carrying PAYMENT-REQUIRED is x402's payment-required result; any other
// answer (a pre-check's spent allowance among them: the paid route's
// requirement it carries for HTTP clients would have an MCP client pay
// for a pre-check that cannot be bought) is an isError result
// whose structuredContent is the host's error body (its code and the
// words a payer acts on).
func Result(resp *http.Response, paid bool) (*mcp.CallToolResult, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("mcptools: read the answer: %w", err)
	}
	var structured any
	if json.Unmarshal(body, &structured) != nil {
		structured = map[string]any{"status": resp.StatusCode, "text": strings.TrimSpace(string(body))}
		body, _ = json.Marshal(structured)
	}
	out := &mcp.CallToolResult{StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}},
		IsError: resp.StatusCode != http.StatusOK}
	if h := resp.Header.Get("PAYMENT-RESPONSE"); h != "" {
		if settled, err := decodeHeader(h); err == nil {
			out.Meta = mcp.Meta{MetaPaymentResponse: settled}
		}
	}
	if h := resp.Header.Get("PAYMENT-REQUIRED"); paid && resp.StatusCode == http.StatusPaymentRequired && h != "" {
		required, err := decodeHeader(h)
		if err != nil {
			return nil, fmt.Errorf("mcptools: the host's PAYMENT-REQUIRED: %w", err)
		}
		message := "Payment required"
		if m, ok := required.(map[string]any); ok {
			if e, ok := m["error"].(string); ok && e != "" {
				message = e
			}
		}
		wrapped, _ := json.Marshal(map[string]any{errorWrapper: map[string]any{"code": 402, "message": message, "data": required}})
		out.StructuredContent = required
		out.Content = []mcp.Content{&mcp.TextContent{Text: string(wrapped)}}
	}
	return out, nil
}

func decodeHeader(h string) (any, error) {
	raw, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Mount serves the tools at /mcp beside the host's own routes.
func Mount(host http.Handler, g *Gate) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", g)
	mux.Handle("/", host)
	return mux
}
