package mcptools_test

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/host/siwx"
	"github.com/assay-audit/assay/host/solana"
)

// The host's own pre-check tool proves the caller's wallet as its HTTP
// route does: _meta["x402/sign-in-with-x"] "challenge" is answered with
// a challenge (the answer's sign_in), nothing counted; a proof of it in
// _meta (as the proof's JSON object, or as the header's base64 value)
// counts the pre-check against the wallet, bound to the host the MCP
// client reached; the wallet named in the arguments without a proof is
// the caller's address's.
func TestPrecheckToolSignsIn(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	h := testhost.Start(t, testhost.Options{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}, "plugins/stream-divergence")
	srv := httptest.NewServer(mcptools.Mount(h.Server, mcptools.New(mcptools.Config{Host: h.Server, Version: "test", MaxBody: 1 << 20})))
	defer srv.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "assay-test", Version: "1"}, nil)
	s, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seed [32]byte
	seed[0] = 7
	key := ed25519.NewKeyFromSeed(seed[:])
	addr := solana.EncodeBase58(key.Public().(ed25519.PublicKey))
	args := json.RawMessage(`{"caller":"` + addr + `","streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`)
	call := func(meta mcp.Meta) (map[string]any, siwx.Extension) {
		t.Helper()
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "stream_divergence_precheck", Arguments: args, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := res.StructuredContent.(map[string]any)
		raw, _ := json.Marshal(m)
		e, ok := siwx.FromAnswer(raw)
		if !ok {
			t.Fatalf("no challenge in the tool's answer: %s", raw)
		}
		return m, e
	}
	errCode := func(m map[string]any) any { e, _ := m["error"].(map[string]any); return e["code"] }
	free := func(m map[string]any) map[string]any { ft, _ := m["free_tier"].(map[string]any); return ft }

	asked, e := call(mcp.Meta{mcptools.MetaSignIn: siwx.Ask})
	if errCode(asked) != "siwx_challenge" || free(asked) != nil || e.Info.URI != srv.URL+"/stream-divergence/precheck" {
		t.Fatalf("the challenge asked for: %v", asked)
	}
	p, err := siwx.Sign(e, key)
	if err != nil {
		t.Fatal(err)
	}
	var object map[string]any
	raw, _ := json.Marshal(p)
	_ = json.Unmarshal(raw, &object)
	first, e := call(mcp.Meta{mcptools.MetaSignIn: object})
	if ft := free(first); first["kind"] != "precheck" || ft["counted"] != "wallet" || ft["remaining"] != float64(99) {
		t.Fatalf("proved with the proof object: %v", first)
	}
	mu.Lock()
	now = now.Add(5 * time.Second)
	mu.Unlock()
	p, _ = siwx.Sign(e, key) // the challenge the last answer carried
	header, _ := p.Encode()
	second, _ := call(mcp.Meta{mcptools.MetaSignIn: header})
	if ft := free(second); ft["counted"] != "wallet" || ft["remaining"] != float64(98) {
		t.Fatalf("proved with the header value: %v", second)
	}
	// the same proof again: refused, nothing counted
	again, _ := call(mcp.Meta{mcptools.MetaSignIn: header})
	if e, _ := again["error"].(map[string]any); e["code"] != "siwx_invalid" || e["reason"] != "replayed" {
		t.Fatalf("a replayed proof: %v", again)
	}
	unproven, _ := call(nil)
	if ft := free(unproven); unproven["kind"] != "precheck" || ft["counted"] != "address" || ft["remaining"] != float64(99) {
		t.Fatalf("the wallet named without a proof: %v", unproven)
	}
}
