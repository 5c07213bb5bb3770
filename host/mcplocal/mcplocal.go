// Package mcplocal is the MCP server `assay mcp` runs on an agent's own
// machine (stdio, for Claude Code, Cursor and the like): it lists a host's
// tools, pays for the paid ones from the user's wallet within the spend
// caps the user set, proves the wallet on every free pre-check (x402's
// sign-in-with-x: the pre-check counts against the wallet's allowance, not
// the machine's address), and checks every report's signature against the
// host's keys before the agent sees it.
package mcplocal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/host/siwx"
	"github.com/assay-audit/assay/host/x402"
	"github.com/assay-audit/assay/sdk"
)

// Config is what the local server needs.
type Config struct {
	// Host is the host's base URL (https://…, no trailing slash).
	Host string
	// Payer pays from the user's wallet (its Chain, when set, checks the
	// balance first).
	Payer *x402.Payer
	// MaxPerCall and MaxSession cap what the server signs, in the
	// asset's atomic units (USDC: millionths of a dollar): one call, and
	// every call of this process together.
	MaxPerCall, MaxSession uint64
	// Client fetches the catalog, the OpenAPI document, the keys and the
	// pre-checks.
	Client *http.Client
	// Version names the implementation to the agent.
	Version string
}

// MaxFile bounds a body named by body_file (above every service's cap:
// the host answers 413 itself with its own words).
const MaxFile = 64 << 20

// Server is one session's tools and its spending.
type Server struct {
	cfg  Config
	jwks []byte

	mu    sync.Mutex
	spent uint64
	// ids: the payment-identifier id of each (tool, body) paid for in this
	// session, so a call repeated after a lost answer is the same payment
	// to the host (answered with the report issued for it, never charged
	// twice). Kept in memory only, for this process's life.
	ids map[[32]byte]string
	// challenges: per pre-check route, the sign-in challenge the host's
	// last answer there carried, taken by the next pre-check (a nonce is
	// spent once: two calls at once never share one)
	challenges map[string]siwx.Extension
	// noSignIn: the host answered a challenge request without one (no
	// free tier, or a host from before sign-in): not asked again
	noSignIn bool
}

// New fetches the host's catalog, OpenAPI document and keys and builds
// the MCP server.
func New(ctx context.Context, cfg Config) (*mcp.Server, *Server, error) {
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	l := &Server{cfg: cfg, ids: map[[32]byte]string{}, challenges: map[string]siwx.Extension{}}
	catalog, err := l.get(ctx, "/")
	if err != nil {
		return nil, nil, err
	}
	openapi, err := l.get(ctx, "/openapi.json")
	if err != nil {
		return nil, nil, err
	}
	if l.jwks, err = l.get(ctx, "/keys"); err != nil {
		return nil, nil, err
	}
	tools, err := mcptools.Tools(catalog, openapi)
	if err != nil {
		return nil, nil, err
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "assay-local", Title: "Assay (paying from your wallet)", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: fmt.Sprintf("Tools of the Assay host %s. Paid tools are paid from the user's wallet in USDC, at most %s a call and %s "+
			"in this session; every report's signature is checked against the host's keys before it is returned. "+
			"A tool's arguments are the request body, or {\"body_file\": \"<path of a local JSON file>\"} for a large one.", cfg.Host,
			x402.USD(uint64(cfg.MaxPerCall)), x402.USD(uint64(cfg.MaxSession)))})
	for _, t := range tools {
		t.InputSchema = withBodyFile(t.InputSchema)
		if t.Paid {
			s.AddTool(t.Tool, l.paid(t))
		} else {
			s.AddTool(t.Tool, l.free(t))
		}
	}
	return s, l, nil
}

// get is a GET of the host's JSON.
func (l *Server) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.cfg.Host+path, nil)
	if err != nil {
		return nil, fmt.Errorf("mcplocal: the host's URL: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := l.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("mcplocal: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("mcplocal: GET %s: status %d", path, resp.StatusCode)
	}
	return raw, nil
}

// withBodyFile lets a tool's arguments be the body or name a local file
// holding it.
func withBodyFile(schema any) any {
	file := map[string]any{"type": "object", "required": []any{"body_file"}, "additionalProperties": false,
		"properties": map[string]any{"body_file": map[string]any{"type": "string",
			"description": "path of a local file holding the request body (JSON), read by the local server: the agent need not inline a large record"}}}
	out := map[string]any{"type": "object", "anyOf": []any{schema, file}}
	// the body schema's references are to the document's $defs: they move
	// up with it to the new root
	if m, ok := schema.(map[string]any); ok {
		if defs, ok := m["$defs"]; ok {
			inner := make(map[string]any, len(m))
			for k, v := range m {
				if k != "$defs" {
					inner[k] = v
				}
			}
			out["anyOf"], out["$defs"] = []any{inner, file}, defs
		}
	}
	return out
}

// body is the call's request body: its arguments, or the file they name.
func body(args json.RawMessage) ([]byte, error) {
	if len(args) == 0 {
		return []byte("{}"), nil
	}
	var named struct {
		BodyFile *string `json:"body_file"`
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(args, &members) == nil && len(members) == 1 && json.Unmarshal(args, &named) == nil && named.BodyFile != nil {
		f, err := os.Open(*named.BodyFile)
		if err != nil {
			return nil, errors.New("body_file: the file cannot be opened")
		}
		defer f.Close()
		raw, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
		switch {
		case err != nil:
			return nil, errors.New("body_file: the file cannot be read")
		case len(raw) > MaxFile:
			return nil, fmt.Errorf("body_file: the file is over %d bytes", MaxFile)
		case !json.Valid(raw):
			return nil, errors.New("body_file: the file is not JSON")
		}
		return raw, nil
	}
	return args, nil
}

// errCap is a call the spend caps refuse, before anything is signed.
var errCap = errors.New("refused before signing")

func refused(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// free answers a pre-check, proved with the wallet: the host's answer as
// it is.
func (l *Server) free(t mcptools.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, err := body(req.Params.Arguments)
		if err != nil {
			return refused(err.Error()), nil
		}
		resp, err := l.precheck(ctx, t.Path, b)
		if err != nil {
			return refused("the host did not answer the pre-check"), nil
		}
		return mcptools.Result(resp, false)
	}
}

// precheck sends a pre-check proved with the wallet (SIGN-IN-WITH-X): with
// the challenge the host's last answer on the route carried, else one
// asked for (which spends nothing). A proof refused (401 siwx_invalid: the
// challenge expired meanwhile) is sent once more with the challenge the
// refusal carried. A host that gives no challenge (no free tier) is sent
// the pre-check as it is.
func (l *Server) precheck(ctx context.Context, path string, b []byte) (*http.Response, error) {
	url := l.cfg.Host + path
	for attempt := 0; ; attempt++ {
		proof := l.proof(ctx, path, url)
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("mcplocal: %w", err)
		}
		r.Header.Set("Content-Type", "application/json")
		if proof != "" {
			r.Header.Set(siwx.Header, proof)
		}
		resp, err := l.cfg.Client.Do(r)
		if err != nil {
			return nil, fmt.Errorf("mcplocal: pre-check: %w", err)
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("mcplocal: pre-check: %w", err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		if next, ok := siwx.FromAnswer(raw); ok {
			l.mu.Lock()
			l.challenges[path] = next
			l.mu.Unlock()
		}
		if attempt > 0 || proof == "" || resp.StatusCode != http.StatusUnauthorized {
			return resp, nil
		}
	}
}

// proof is the wallet's SIGN-IN-WITH-X for the route's next pre-check (""
// when there is no challenge to sign).
func (l *Server) proof(ctx context.Context, path, url string) string {
	if l.cfg.Payer == nil || l.cfg.Payer.Wallet == nil {
		return ""
	}
	l.mu.Lock()
	e, ok := l.challenges[path]
	delete(l.challenges, path)
	off := l.noSignIn
	l.mu.Unlock()
	if off {
		return ""
	}
	if exp, err := time.Parse(time.RFC3339Nano, e.Info.ExpirationTime); ok && err == nil && time.Until(exp) < 10*time.Second {
		ok = false // about to expire: a fresh one spares the refusal
	}
	if !ok {
		var err error
		if e, err = siwx.AskChallenge(ctx, l.cfg.Client, url); err != nil {
			if errors.Is(err, siwx.ErrNoChallenge) {
				l.mu.Lock()
				l.noSignIn = true
				l.mu.Unlock()
			}
			return ""
		}
	}
	p, err := siwx.Sign(e, l.cfg.Payer.Wallet)
	if err != nil {
		return ""
	}
	h, err := p.Encode()
	if err != nil {
		return ""
	}
	return h
}

// approve is the spend caps, asked before anything is signed; a payment
// repeated with an id already approved in this session is not counted
// again (the host never charges an id twice).
func (l *Server) approve(id string, again bool) func(x402.Requirements) error {
	return func(r x402.Requirements) error {
		price, err := strconv.ParseUint(r.Amount, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: the 402's amount is not a number", errCap)
		}
		if price > l.cfg.MaxPerCall {
			return fmt.Errorf("%w: the call costs %s, over the per-call cap of %s (--max-per-call)", errCap, x402.USD(price), x402.USD(l.cfg.MaxPerCall))
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if again {
			return nil
		}
		if l.spent+price > l.cfg.MaxSession {
			return fmt.Errorf("%w: the call costs %s; %s of this session's cap of %s is spent (--max-session)", errCap, x402.USD(price), x402.USD(l.spent), x402.USD(l.cfg.MaxSession))
		}
		l.spent += price
		return nil
	}
}

// paid answers a paid tool: pay within the caps, then the report only
// once its signature verifies against the host's keys.
func (l *Server) paid(t mcptools.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, err := body(req.Params.Arguments)
		if err != nil {
			return refused(err.Error()), nil
		}
		key := sha256.Sum256(append([]byte(t.Name+"\x00"), b...))
		l.mu.Lock()
		id, again := l.ids[key]
		if !again {
			if id, err = x402.NewIdentifier(); err != nil {
				l.mu.Unlock()
				return nil, fmt.Errorf("mcplocal: %w", err)
			}
			l.ids[key] = id
		}
		l.mu.Unlock()
		payer := *l.cfg.Payer
		payer.Identifier, payer.Approve = id, l.approve(id, again)
		res, err := payer.Call(ctx, l.cfg.Host+t.Path, b)
		switch {
		case errors.Is(err, errCap):
			return refused(err.Error()), nil
		case err != nil && (res == nil || res.Status == 0) && res != nil && res.Reached:
			// a paid request left and its answer was lost: the same call
			// sends the same payment (its id), never charged twice
			return refused("the paid request was sent and no answer came back (" + err.Error() + "); call the tool again with the same arguments: " +
				"it is the same payment, never charged twice"), nil
		case err != nil && (res == nil || res.Status == 0):
			// no paid request reached the host: the cause, as it is
			return refused("nothing was charged: no payment reached the host (" + err.Error() + ")"), nil
		case res.Status != http.StatusOK:
			return answer(res, false), nil
		}
		kid, verr := sdk.VerifyAnswer(res.Body, l.jwks)
		if verr != nil {
			out := answer(res, true)
			out.IsError = true
			out.Content = append([]mcp.Content{&mcp.TextContent{Text: "the report's signature does not verify against the host's keys (" +
				l.cfg.Host + "/keys): do not rely on it"}}, out.Content...)
			return out, nil
		}
		out := answer(res, true)
		l.mu.Lock()
		out.Meta["assay/key_id"], out.Meta["assay/session_spent_usdc_units"] = kid, l.spent
		l.mu.Unlock()
		return out, nil
	}
}

// answer is a paid call's outcome as a tool result.
func answer(res *x402.Paid, ok bool) *mcp.CallToolResult {
	var structured any
	if json.Unmarshal(res.Body, &structured) != nil {
		structured = map[string]any{"status": res.Status, "text": strings.TrimSpace(string(res.Body))}
	}
	out := &mcp.CallToolResult{StructuredContent: structured, Content: []mcp.Content{&mcp.TextContent{Text: string(res.Body)}},
		IsError: !ok, Meta: mcp.Meta{}}
	if res.Settlement != nil {
		out.Meta[mcptools.MetaPaymentResponse] = res.Settlement
	}
	return out
}
