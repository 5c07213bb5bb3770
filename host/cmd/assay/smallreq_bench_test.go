package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/yardstick"
	"github.com/assay-audit/assay/host/solana"
)

// yardstickEnv makes the test binary the yardstick's process (TestMain):
// it serves on the address the variable names until it is killed.
const yardstickEnv = "ASSAY_YARDSTICK_LISTEN"

func serveYardstick(addr string) {
	dir, err := os.MkdirTemp("", "assay-yardstick-")
	if err != nil {
		os.Exit(2)
	}
	defer os.RemoveAll(dir)
	y, err := yardstick.New(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "yardstick:", err)
		os.Exit(2)
	}
	defer y.Close()
	srv := &http.Server{Addr: addr, Handler: y, ReadHeaderTimeout: 10 * time.Second}
	_ = srv.ListenAndServe()
}

// smallCompare is the README's small stream-divergence compare.
var smallCompare = []byte(`{"streamed_capture":{"chunks":["aGVsbG8g","d29ybGQ="]},"reference_output":{"chunks":["aGVsbG8gd29yZA=="]}}`)

// precheckFrom is the small pre-check from its own caller wallet: every
// one is admitted by the free tier.
func precheckFrom(i uint64) []byte {
	var key [32]byte
	key[0] = 7
	binary.BigEndian.PutUint64(key[24:], i)
	return []byte(`{"caller":"` + solana.EncodeBase58(key[:]) + `","streamed_capture":{"chunks":["aGVsbG8g","d29ybGQ="]},"reference_output":{"chunks":["aGVsbG8gd29yZA=="]}}`)
}

// loadClient keeps conc connections alive to one host.
func loadClient(conc int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conc, MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc, DisableCompression: true,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}}
}

// runLoad sends b.N requests from conc workers over keep-alive
// connections (each worker one request at a time) and reports req/s, p50
// and p99. req builds request i; every answer must have status want.
func runLoad(b *testing.B, conc int, url string, want int, req func(i int) (*http.Request, error)) {
	runLoadChecked(b, conc, url, want, req, nil)
}

// runLoadChecked is runLoad with check, when set, asked of every answer's
// body too (an MCP answer is 200 whether its tool call succeeded or not).
func runLoadChecked(b *testing.B, conc int, url string, want int, req func(i int) (*http.Request, error), check func([]byte) error) {
	client := loadClient(conc)
	defer client.CloseIdleConnections()
	// warm: every connection made and every plugin warm before the clock
	var warm sync.WaitGroup
	for range conc {
		warm.Add(1)
		go func() {
			defer warm.Done()
			if r, err := client.Get(url + "/healthz"); err == nil {
				_, _ = io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
		}()
	}
	warm.Wait()
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N || failed.Load() != nil {
					return
				}
				r, err := req(i)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				t0 := time.Now()
				resp, err := client.Do(r)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if resp.StatusCode != want {
					failed.Store(fmt.Sprintf("status %d, want %d: %.600s", resp.StatusCode, want, raw))
					return
				}
				if check != nil {
					if err := check(raw); err != nil {
						failed.Store(err.Error())
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if msg := failed.Load(); msg != nil {
		b.Fatal(msg)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[(len(lat)+1)/2-1].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)*99+99)/100-1].Microseconds()), "p99-µs")
	b.ReportMetric(0, "ns/op") // req/s is the figure; ns/op would be wall time over workers
}

func post(url string, body []byte) (*http.Request, error) {
	r, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err == nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r, err
}

// startYardstick runs the yardstick as its own process (this test binary,
// re-run) and returns its URL.
func startYardstick(b *testing.B) string {
	addr := freePortB(b)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), yardstickEnv+"="+addr)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	for i := 0; ; i++ {
		if r, err := post(url+"/stream-divergence/compare", smallCompare); err == nil {
			if resp, err := http.DefaultClient.Do(r); err == nil {
				resp.Body.Close()
				return url
			}
		}
		if i == 300 {
			b.Fatalf("the yardstick did not start:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReady waits for a host's /readyz (its launch self-test passed).
func waitReady(tb testing.TB, url string) {
	for i := 0; i < 600; i++ {
		if r, err := http.Get(url + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatal("the host was not ready")
}

// BenchmarkSmallRequests is issue #29's measure, over real TCP against
// real `assay serve` processes (every family and adapter loaded, as make
// run has them) and, in the same run, the yardstick (one process doing
// the same steps, host/internal/yardstick): the small compare with
// payments off, the small pre-check from distinct callers, the small
// compare paid through the embedded facilitator with a fresh payment
// each, at 1, 16 and 64 keep-alive connections.
func BenchmarkSmallRequests(b *testing.B) {
	dir := os.Getenv("ASSAY_BIN")
	if dir == "" {
		b.Skip("needs ASSAY_BIN (make bench builds the binaries)")
	}
	levels := []int{1, 16, 64}
	b.Run("yardstick", func(b *testing.B) {
		url := startYardstick(b)
		for _, c := range levels {
			b.Run(fmt.Sprintf("conns=%d", c), func(b *testing.B) {
				runLoad(b, c, url, 200, func(int) (*http.Request, error) { return post(url+"/stream-divergence/compare", smallCompare) })
			})
		}
	})
	b.Run("compare-off", func(b *testing.B) {
		url, _, _ := serveInGroup(b, dir, nil, "--payments", "off")
		waitReady(b, url)
		for _, c := range levels {
			b.Run(fmt.Sprintf("conns=%d", c), func(b *testing.B) {
				runLoad(b, c, url, 200, func(int) (*http.Request, error) { return post(url+"/stream-divergence/compare", smallCompare) })
			})
		}
	})
	b.Run("precheck", func(b *testing.B) {
		url, _, _ := serveInGroup(b, dir, nil, "--payments", "off")
		waitReady(b, url)
		var caller atomic.Uint64
		for _, c := range levels {
			b.Run(fmt.Sprintf("conns=%d", c), func(b *testing.B) {
				runLoad(b, c, url, 200, func(int) (*http.Request, error) {
					return post(url+"/stream-divergence/precheck", precheckFrom(caller.Add(1)))
				})
			})
		}
	})
	b.Run("paid-local", func(b *testing.B) {
		url, _, _ := serveInGroup(b, dir, nil, "--payments", "house")
		waitReady(b, url)
		payer := newPaidCaller(b, url)
		for _, c := range levels {
			b.Run(fmt.Sprintf("conns=%d", c), func(b *testing.B) {
				// a fresh payment for every request, signed before the clock
				sigs := make([]string, b.N)
				for i := range sigs {
					sigs[i] = payer.sign(b)
				}
				runLoad(b, c, url, 200, func(i int) (*http.Request, error) {
					r, err := post(url+"/stream-divergence/compare", smallCompare)
					if err == nil {
						r.Header.Set("PAYMENT-SIGNATURE", sigs[i])
					}
					return r, err
				})
			})
		}
	})
	b.Run("redelivered", func(b *testing.B) {
		// one payment issued once, then sent again and again with its
		// submission: the kept answer, opened and written (#41); a host
		// from before redelivery answers these 402 (the benchmark fails)
		url, _, _ := serveInGroup(b, dir, nil, "--payments", "house")
		waitReady(b, url)
		sig := newPaidCaller(b, url).sign(b)
		resend := func(int) (*http.Request, error) {
			r, err := post(url+"/stream-divergence/compare", smallCompare)
			if err == nil {
				r.Header.Set("PAYMENT-SIGNATURE", sig)
			}
			return r, err
		}
		r, _ := resend(0)
		resp, err := http.DefaultClient.Do(r)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("the payment's first sending: %v %v", err, resp)
		}
		resp.Body.Close()
		for _, c := range levels {
			b.Run(fmt.Sprintf("conns=%d", c), func(b *testing.B) { runLoad(b, c, url, 200, resend) })
		}
	})
}
