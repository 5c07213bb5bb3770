package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
)

// BenchmarkMCPPaidCall is issue #45's measure: the small compare paid
// through the embedded facilitator (a fresh payment each), at 16
// keep-alive connections, over the HTTP route and as a tools/call on /mcp
// of the same host; the difference of their p50s is what MCP costs.
func BenchmarkMCPPaidCall(b *testing.B) {
	dir := os.Getenv("ASSAY_BIN")
	if dir == "" {
		b.Skip("needs ASSAY_BIN (make bench builds the binaries)")
	}
	url, _, _ := serveInGroup(b, dir, nil, "--payments", "house")
	waitReady(b, url)
	payer := newPaidCaller(b, url)
	const conns = 16
	signAll := func(b *testing.B) []string {
		sigs := make([]string, b.N)
		for i := range sigs {
			sigs[i] = payer.sign(b)
		}
		return sigs
	}
	b.Run(fmt.Sprintf("http/conns=%d", conns), func(b *testing.B) {
		sigs := signAll(b)
		runLoad(b, conns, url, 200, func(i int) (*http.Request, error) {
			r, err := post(url+"/stream-divergence/compare", smallCompare)
			if err == nil {
				r.Header.Set("PAYMENT-SIGNATURE", sigs[i])
			}
			return r, err
		})
	})
	b.Run(fmt.Sprintf("mcp/conns=%d", conns), func(b *testing.B) {
		sigs := signAll(b)
		calls := make([][]byte, len(sigs))
		for i, sig := range sigs {
			payment, _ := base64.StdEncoding.DecodeString(sig)
			calls[i], _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
				"params": map[string]any{"name": "stream_divergence_compare", "arguments": json.RawMessage(smallCompare),
					"_meta": map[string]any{"x402/payment": json.RawMessage(payment)}}})
		}
		runLoadChecked(b, conns, url, 200, func(i int) (*http.Request, error) {
			r, err := post(url+"/mcp", calls[i])
			if err == nil {
				r.Header.Set("Accept", "application/json, text/event-stream")
			}
			return r, err
		}, func(raw []byte) error {
			var rpc struct {
				Result *struct {
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if json.Unmarshal(raw, &rpc) != nil || rpc.Result == nil || rpc.Result.IsError {
				return errors.New("a paid tool call did not succeed: " + string(raw[:min(len(raw), 600)]))
			}
			return nil
		})
	})
}
