package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
)

// BenchmarkServeBurst is a burst of 32 callers each POSTing a max-size
// context-audit record (5 MiB, 10,000 blocks) at the same instant, to
// `assay serve` in its own memory cgroup: with the default admission (one
// working place per core, 12 waiting for a 5 MiB service) and with
// admission opened wide (64 working places). Per burst it reports the
// answers (200s and 503 service_busy), the p50 and slowest 200, the time
// until the last answer, and the kernel's peak for the host and all its
// plugins together above idle: what admission buys (a bounded peak, prompt
// refusals) and what it costs (refused callers).
func BenchmarkServeBurst(b *testing.B) {
	dir := os.Getenv("ASSAY_BIN")
	if dir == "" {
		b.Skip("needs ASSAY_BIN (make bench builds the binaries)")
	}
	pins, err := os.ReadFile(filepath.Join(dir, "assay.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	body := compositiontest.MaxRecord(b)
	const callers = 32
	for _, c := range []struct{ name, block string }{
		{"admission=default", ""},
		{"admission=wide", "admission {\n  working = 64\n  waiting = 0\n}\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := filepath.Join(b.TempDir(), "assay.hcl")
			conf := "plugin_dir = \"" + dir + "\"\n" + c.block + string(pins)
			if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
				b.Fatal(err)
			}
			url, _, group := serveInGroup(b, dir, nil, "--config", cfg, "--payments", "off")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
			post := func() (int, time.Duration) {
				start := time.Now()
				r, err := client.Post(url+"/context-audit/audit", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return 0, 0
				}
				_, _ = io.Copy(io.Discard, r.Body)
				r.Body.Close()
				return r.StatusCode, time.Since(start)
			}
			post() // plugins started and warm
			var groupIdle int64
			if group != nil {
				groupIdle = group.usage()
				group.resetPeak()
			}
			var oks []time.Duration
			var busy, other int
			var clear []time.Duration
			for b.Loop() {
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						status, took := post()
						mu.Lock()
						defer mu.Unlock()
						switch status {
						case 200:
							oks = append(oks, took)
						case 503:
							busy++
						default:
							other++
						}
					}()
				}
				wg.Wait()
				clear = append(clear, time.Since(start))
			}
			if other > 0 || len(oks) == 0 {
				b.Fatalf("%d answers neither 200 nor 503, %d 200s", other, len(oks))
			}
			slices.Sort(oks)
			slices.Sort(clear)
			bursts := float64(len(clear))
			b.ReportMetric(float64(len(oks))/bursts, "ok/burst")
			b.ReportMetric(float64(busy)/bursts, "busy/burst")
			b.ReportMetric(float64(oks[(len(oks)+1)/2-1].Microseconds())/1000, "ok-p50-ms")
			b.ReportMetric(float64(oks[len(oks)-1].Microseconds())/1000, "ok-max-ms")
			b.ReportMetric(float64(clear[(len(clear)+1)/2-1].Microseconds())/1000, "burst-ms")
			if group != nil {
				b.ReportMetric(float64(group.peak()-groupIdle)/(1<<20), "together-growth-MiB")
			}
		})
	}
}
