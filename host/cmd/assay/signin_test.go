package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/wallet"
)

// handClock is a host clock the test moves.
type handClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *handClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *handClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// signInHost is a host serving stream-divergence's free pre-check on the
// test's clock, with a wallet file and its address.
func signInHost(t *testing.T, start time.Time) (h *testhost.Host, clock *handClock, walletFile, addr string) {
	t.Helper()
	clock = &handClock{t: start}
	h = testhost.Start(t, testhost.Options{Now: clock.now}, "plugins/stream-divergence")
	walletFile = filepath.Join(t.TempDir(), "payer.json")
	priv, err := wallet.New(walletFile)
	if err != nil {
		t.Fatal(err)
	}
	return h, clock, walletFile, solana.EncodeBase58(priv.Public().(ed25519.PublicKey))
}

// freeTierOf is the free_tier member of a JSON answer.
func freeTierOf(raw []byte) map[string]any {
	var a struct {
		FreeTier map[string]any `json:"free_tier"`
	}
	_ = json.Unmarshal(raw, &a)
	return a.FreeTier
}

// unproved posts a pre-check with no proof and returns its status and
// body.
func unproved(t *testing.T, url string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// `assay call --wallet` on a pre-check URL proves the wallet: the
// pre-check is counted against the wallet's allowance (the address's is
// untouched), never paid; the signed answer is saved and checked; a
// second call inside the wallet's interval is refused (exit 4, nothing
// charged); a body naming another wallet than the one proved is refused
// (siwx_invalid, caller_mismatch), nothing counted.
func TestCallProvesItsWalletOnAPrecheck(t *testing.T) {
	h, clock, walletFile, addr := signInHost(t, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	url := h.URL + "/stream-divergence/precheck"
	dir := t.TempDir()
	body := `{"caller":"` + addr + `","streamed_capture":{"chunks":["YQ=="]},"reference_output":{"chunks":["YQ=="]}}`
	bodyFile := filepath.Join(dir, "body.json")
	_ = os.WriteFile(bodyFile, []byte(body), 0o600)
	out := filepath.Join(dir, "precheck.json")
	status, msg, printed := assayCall("--wallet", walletFile, "--out", out, url, bodyFile)
	if status != callVerified || !strings.Contains(printed, "free pre-check counted against wallet "+addr+": 99 of 100 left today") {
		t.Fatalf("assay call on a pre-check: exit %d %s\n%s", status, msg, printed)
	}
	saved, _ := os.ReadFile(out)
	if ft := freeTierOf(saved); ft["counted"] != "wallet" || ft["remaining"] != float64(99) || !strings.Contains(string(saved), `"kind":"precheck"`) {
		t.Fatalf("the saved answer: %s", saved)
	}
	if _, err := os.Stat(out + ".payment"); err == nil {
		t.Error("a pre-check left a payment file")
	}
	if st, raw := unproved(t, url, []byte(body)); st != 200 || freeTierOf(raw)["counted"] != "address" || freeTierOf(raw)["remaining"] != float64(99) {
		t.Fatalf("the address after the wallet's pre-check: %d %s", st, raw)
	}
	clock.add(time.Second)
	status, msg, _ = assayCall("--wallet", walletFile, "--out", out, url, bodyFile)
	if status != callNotPaid || !strings.Contains(msg, "429 free_interval") || !strings.Contains(msg, "a pre-check charges nothing") {
		t.Fatalf("inside the wallet's interval: exit %d %s", status, msg)
	}
	clock.add(5 * time.Second)
	_, other := solanaAddress(t)
	_ = os.WriteFile(bodyFile, []byte(strings.Replace(body, addr, other, 1)), 0o600)
	status, msg, _ = assayCall("--wallet", walletFile, "--out", out, url, bodyFile)
	if status != callNotPaid || !strings.Contains(msg, "401 siwx_invalid (caller_mismatch)") {
		t.Fatalf("a body naming another wallet: exit %d %s", status, msg)
	}
	_ = os.WriteFile(bodyFile, []byte(body), 0o600)
	if status, msg, _ = assayCall("--wallet", walletFile, "--out", out, url, bodyFile); status != callVerified {
		t.Fatalf("after the interval: exit %d %s", status, msg)
	}
	if saved, _ = os.ReadFile(out); freeTierOf(saved)["remaining"] != float64(98) {
		t.Fatalf("the wallet's second: %s (the refused one counted?)", saved)
	}
}

// solanaAddress is a fresh wallet's key and address.
func solanaAddress(t *testing.T) (ed25519.PrivateKey, string) {
	t.Helper()
	priv, err := wallet.New(filepath.Join(t.TempDir(), "w.json"))
	if err != nil {
		t.Fatal(err)
	}
	return priv, solana.EncodeBase58(priv.Public().(ed25519.PublicKey))
}

// `assay mcp`'s pre-check tool proves its wallet: every pre-check is
// counted against the wallet's allowance, the first proved with a
// challenge it asked for (nothing counted), each next one with the
// challenge the last answer carried (no second ask); the address keeps
// its own allowance.
func TestAssayMCPProvesItsWallet(t *testing.T) {
	bin := testhost.Binary(t, "host/cmd/assay", "assay")
	// the host's clock at the wall clock's (assay mcp judges a kept
	// challenge's expiry by its own), minutes back when 00:00 UTC is near:
	// no reset falls inside the test
	start := time.Now().UTC()
	if start.Add(time.Minute).Day() != start.Day() {
		start = start.Add(-2 * time.Minute)
	}
	h, clock, walletFile, _ := signInHost(t, start)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	s, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(bin, "mcp", h.URL, "--wallet", walletFile)}, nil)
	if err != nil {
		t.Fatalf("assay mcp: %v", err)
	}
	defer s.Close()
	body := json.RawMessage(payBody)
	for i := 1; i <= 3; i++ {
		res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "stream_divergence_precheck", Arguments: body})
		if err != nil || res.IsError {
			t.Fatalf("pre-check %d: %v %s", i, err, toolText(res))
		}
		m, _ := res.StructuredContent.(map[string]any)
		ft, _ := m["free_tier"].(map[string]any)
		if m["kind"] != "precheck" || ft["counted"] != "wallet" || ft["remaining"] != float64(100-i) {
			t.Fatalf("pre-check %d: %v", i, m)
		}
		clock.add(5 * time.Second)
	}
	if st, raw := unproved(t, h.URL+"/stream-divergence/precheck", payBody); st != 200 || freeTierOf(raw)["remaining"] != float64(99) {
		t.Fatalf("the address after the wallet's three: %d %s", st, raw)
	}
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `assay_refusals_total{code="siwx_challenge",service="stream-divergence"} 1`) {
		t.Errorf("assay mcp asked for more than one challenge in three pre-checks:\n%s", grepLines(string(metrics), "siwx"))
	}
}

// grepLines is the lines of s that hold what.
func grepLines(s, what string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, what) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
