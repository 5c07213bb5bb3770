package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/internal/testfamily/family"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/wallet"
	"github.com/assay-audit/assay/host/x402"
	"github.com/assay-audit/assay/plugins/stream-divergence/divergence"
)

// serve runs one request through the host's handler (no TCP) and fails the
// benchmark on an unexpected status.
func serve(b *testing.B, h http.Handler, path string, body []byte) {
	req := httptest.NewRequest("POST", path, bytes.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("%s: %d %.200s", path, rec.Code, rec.Body.Bytes())
	}
}

// BenchmarkPrecheckRoundTrip: a small stream-divergence pre-check through
// the whole host and the plugin process, against the same family in process.
func BenchmarkPrecheckRoundTrip(b *testing.B) {
	body := sdBody([]string{"hello ", "world"}, []string{"hello world"})
	fam, err := divergence.New()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    *testhost.Host
	}{
		{"plugin", testhost.Start(b, testhost.Options{NoFreeTier: true}, sdPkg)},
		{"in-process", testhost.InProcess(b, testhost.Options{NoFreeTier: true}, fam)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve(b, c.h.Server, "/stream-divergence/precheck", body)
			}
		})
	}
}

// BenchmarkFiveMiBBody: a 5 MiB body validated and measured through the
// plugin boundary, the body passed as a shared file (the default on
// Linux) and inline on the gRPC stream, against the same work in process.
func BenchmarkFiveMiBBody(b *testing.B) {
	const cap5 = 5 << 20
	prefix := []byte(`{"pad":"`)
	body := append(append(prefix, bytes.Repeat([]byte("x"), cap5-len(prefix)-2)...), '"', '}')
	fam, err := family.New()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    *testhost.Host
	}{
		{"plugin", testhost.Start(b, testhost.Options{NoFreeTier: true}, testPkg)},
		{"plugin-inline", testhost.Start(b, testhost.Options{NoFreeTier: true, InlineFamilies: true}, testPkg)},
		{"in-process", testhost.InProcess(b, testhost.Options{NoFreeTier: true}, fam)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(cap5)
			b.ReportAllocs()
			for b.Loop() {
				serve(b, c.h.Server, "/test-family/measure", body)
			}
		})
	}
}

// maxCompareBody is the largest compare the criteria allow: two 64 KiB
// artefacts in 1,024 chunks each, differing at every other byte (32,768
// spans: the largest report).
func maxCompareBody() []byte {
	chunks := func(flip bool) []string {
		out := make([]string, 1024)
		for i := range out {
			c := make([]byte, 64)
			for j := range c {
				c[j] = byte(i + j)
				if flip && j%2 == 1 {
					c[j] ^= 0xff
				}
			}
			out[i] = base64.StdEncoding.EncodeToString(c)
		}
		return out
	}
	body, _ := json.Marshal(map[string]any{
		"streamed_capture": map[string]any{"chunks": chunks(false)},
		"reference_output": map[string]any{"chunks": chunks(true)},
	})
	return body
}

// BenchmarkMaxSizeCompare: the paid compare at the caps through the host
// and the plugin.
func BenchmarkMaxSizeCompare(b *testing.B) {
	body := maxCompareBody()
	h := testhost.Start(b, testhost.Options{}, sdPkg)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h.Server, "/stream-divergence/compare", body)
	}
}

// BenchmarkPrecheckThroughput: concurrent pre-checks through the whole host
// (HTTP handler, plugin, free tier on SQLite and on PostgreSQL, signing),
// each from its own wallet so every one is admitted.
func BenchmarkPrecheckThroughput(b *testing.B) {
	for _, kind := range storetest.Kinds {
		b.Run(kind, func(b *testing.B) {
			spec, _ := storetest.Spec(b, kind)
			h := testhost.Start(b, testhost.Options{Store: spec}, sdPkg)
			var n atomic.Uint64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var key [32]byte
					binary.BigEndian.PutUint64(key[24:], n.Add(1))
					key[0] = 1
					body := precheckBody(base58(key[:]))
					req := httptest.NewRequest("POST", "/stream-divergence/precheck", bytes.NewReader(body))
					rec := httptest.NewRecorder()
					h.Server.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Errorf("status %d %.200s", rec.Code, rec.Body.Bytes())
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "prechecks/s")
		})
	}
}

func base58(b []byte) string {
	const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	n := new(big.Int).SetBytes(b)
	var out []byte
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), mod)
		out = append(out, alphabet[mod.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// BenchmarkPaidCall: the paid compare through the whole host, payments off
// against x402 with the embedded local facilitator (payment decode, the
// Solana transaction checks, co-signing, replay claim, settlement), same
// run. Each x402 op carries a fresh payment built outside the timer.
func BenchmarkPaidCall(b *testing.B) {
	body := sdBody([]string{"hello ", "world"}, []string{"hello word"})
	for _, mode := range []string{"off", "x402-local"} {
		b.Run(mode, func(b *testing.B) {
			var h *testhost.Host
			var payer *x402.Payer
			var reqs x402.Requirements
			var res x402.Resource
			if mode == "off" {
				h = testhost.Start(b, testhost.Options{NoFreeTier: true}, sdPkg)
			} else {
				ph := startPaidB(b, sdPkg)
				h = ph.Host
				w, err := wallet.New(filepath.Join(b.TempDir(), "payer.json"))
				if err != nil {
					b.Fatal(err)
				}
				payer = &x402.Payer{Wallet: w}
				rec := httptest.NewRecorder()
				h.Server.ServeHTTP(rec, httptest.NewRequest("POST", "/stream-divergence/compare", bytes.NewReader(body)))
				var pr x402.PaymentRequired
				raw, _ := base64.StdEncoding.DecodeString(rec.Header().Get("PAYMENT-REQUIRED"))
				if err := json.Unmarshal(raw, &pr); err != nil {
					b.Fatal(err)
				}
				reqs, res = pr.Accepts[0], pr.Resource
			}
			lat := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/stream-divergence/compare", bytes.NewReader(body))
				if payer != nil {
					b.StopTimer()
					sig, err := payer.Sign(reqs, res)
					if err != nil {
						b.Fatal(err)
					}
					req.Header.Set("PAYMENT-SIGNATURE", sig)
					b.StartTimer()
				}
				start := time.Now()
				rec := httptest.NewRecorder()
				h.Server.ServeHTTP(rec, req)
				lat = append(lat, time.Since(start))
				if rec.Code != 200 {
					b.Fatalf("%d %.300s", rec.Code, rec.Body.Bytes())
				}
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[(len(lat)-1)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds()), "p99-µs")
		})
	}
}
