package server_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/wallet"
)

// rpcStub answers the few Solana JSON-RPC methods the official client asks
// for, and records which it asked.
type rpcStub struct {
	mu      sync.Mutex
	methods []string
}

func (s *rpcStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", 400)
		return
	}
	s.mu.Lock()
	s.methods = append(s.methods, req.Method)
	s.mu.Unlock()
	var result any
	switch req.Method {
	case "getAccountInfo":
		// an initialised SPL mint: no mint authority, supply, 6 decimals
		mint := make([]byte, 82)
		binary.LittleEndian.PutUint64(mint[36:], 1_000_000_000_000)
		mint[44], mint[45] = 6, 1
		result = map[string]any{"context": map[string]any{"slot": 1}, "value": map[string]any{
			"data": []string{base64.StdEncoding.EncodeToString(mint), "base64"}, "owner": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
			"lamports": 1461600, "executable": false, "rentEpoch": 0, "space": 82}}
	case "getLatestBlockhash":
		result = map[string]any{"context": map[string]any{"slot": 1}, "value": map[string]any{
			"blockhash": "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N", "lastValidBlockHeight": 1150}}
	default:
		result = nil
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

// payMJS runs pay.mjs (the official x402 client) in dir and returns its
// one line of JSON; its failing (the client threw) is fatal, named what.
func payMJS(t *testing.T, dir, what string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"pay.mjs"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s: %v\n%s", what, err, msg)
	}
	return out
}

// TestOfficialClientPays: a payment built by the official x402 JavaScript
// packages (@x402/fetch, @x402/svm, @x402/core), nobody's code here, is
// accepted, settled and delivered.
func TestOfficialClientPays(t *testing.T) {
	dir := nodeDir(t, "../internal/testdata/x402-interop", "@x402/fetch")
	h := startPaid(t, sdPkg)
	stub := &rpcStub{}
	rpc := httptest.NewServer(stub)
	defer rpc.Close()
	tmp := t.TempDir()
	walletPath := filepath.Join(tmp, "payer.json")
	if _, err := wallet.New(walletPath); err != nil {
		t.Fatal(err)
	}
	bodyPath := filepath.Join(tmp, "body.json")
	_ = os.WriteFile(bodyPath, sdBody([]string{"hello ", "world"}, []string{"hello world"}), 0o600)

	out := payMJS(t, dir, "official client", "--url", h.URL+"/stream-divergence/compare", "--body", bodyPath,
		"--wallet", walletPath, "--rpc", rpc.URL)
	var res struct {
		Status          int            `json:"status"`
		Body            map[string]any `json:"body"`
		PaymentResponse map[string]any `json:"paymentResponse"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	if res.Status != 200 || res.Body["byte_equal"] != true || res.PaymentResponse["success"] != true {
		t.Fatalf("official client's paid call: %s", out)
	}
	lines := h.Lines(t, 1)
	if len(lines) != 1 || *lines[0].TxID != res.PaymentResponse["transaction"] || *lines[0].Payer != res.PaymentResponse["payer"] {
		t.Fatalf("ledger after the official client paid: %+v", lines)
	}
	// what the official client needed from Solana RPC: the mint's account
	// only (the 402 carries a recentBlockhash, so no getLatestBlockhash)
	stub.mu.Lock()
	defer stub.mu.Unlock()
	if strings.Join(stub.methods, ",") != "getAccountInfo" {
		t.Errorf("the official client asked RPC for %v", stub.methods)
	}
}

// A 402 carries x402 v2 discovery metadata the official @x402/extensions
// package accepts: the bazaar extension validates (its info against its
// schema, and the protocol's rules), and extractDiscoveryInfo lists the
// route with its URL, method, description and MIME type, for every family.
func TestOfficialDiscoveryReadsThe402(t *testing.T) {
	dir := nodeDir(t, "../internal/testdata/x402-interop", "@x402/fetch")
	h := startPaidWith(t, testhost.Options{Adapters: caAdapters}, sdPkg, lcPkg, shPkg, caPkg)
	bodies := map[string][]byte{
		"/stream-divergence/compare":   sdBody([]string{"a"}, []string{"a"}),
		"/lifecycle-analytics/analyse": []byte(`{"log":[{"challenge_id":"a","issued_at":"2026-11-29T10:00:00Z","expires_at":"2026-11-29T10:05:00Z"}]}`),
		"/scope-hygiene/audit":         []byte(`{"family":"mem0","form":"full_text","records":[{"id":"r1","content_text":"x"}]}`),
		"/context-audit/audit":         envelope("generic-message-list", map[string]any{"messages": []any{map[string]any{"role": "user", "text": "hi"}}}),
	}
	for route, body := range bodies {
		cmd := exec.Command("node", "discover.mjs", h.URL+route, string(body))
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s: %v\n%s\n%s", route, err, out, stderr)
		}
		var got struct {
			Resource  struct{ URL, Description, MimeType string }
			HasBazaar bool
			Valid     struct {
				Valid  bool
				Errors []string
			}
			Spec struct {
				Valid  bool
				Errors []string
			}
			Discovered map[string]any
			Error      string
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v\n%s", route, err, out)
		}
		if !got.HasBazaar || !got.Valid.Valid || !got.Spec.Valid || got.Discovered == nil || got.Error != "" {
			t.Errorf("%s: %s", route, out)
			continue
		}
		if got.Discovered["resourceUrl"] != h.URL+route || got.Discovered["method"] != "POST" || got.Resource.MimeType != "application/json" ||
			!strings.Contains(got.Resource.Description, "per ") {
			t.Errorf("%s listed as %s", route, out)
		}
	}
}
