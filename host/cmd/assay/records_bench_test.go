package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/corpus/realistic"
	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
)

// contextRecords are the serve benchmarks' bodies: the synthetic max
// record, and a 5 MiB record of each format as a harness writes it
// (corpus/realistic, written from the criteria alone: prose, code, tool
// payloads, blobs, near-duplicate clusters, stated counts).
func contextRecords(b *testing.B) []struct {
	name, format string
	body         []byte
} {
	out := []struct {
		name, format string
		body         []byte
	}{{"max/anthropic-messages", "anthropic-messages", compositiontest.MaxRecord(b)}}
	for _, f := range realistic.Formats {
		body, err := realistic.Record(f, realistic.BodyCap, 1)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, struct {
			name, format string
			body         []byte
		}{"realistic/" + f, f, body})
	}
	return out
}

// cpuTicks is a process's user and system CPU so far, in clock ticks
// (/proc/<pid>/stat fields 14 and 15; 100 a second on Linux).
func cpuTicks(pid string) int64 {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// the command name (field 2) may hold spaces; count from its ')'
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// BenchmarkServeContextRecords is issue #18's measure: `assay serve` as
// its own process in a memory cgroup, every family and adapter loaded as
// plugins, payments off, and each record POSTed to the paid audit, alone
// ("idle") and two at once from two callers ("pair", the default
// admission lets both work). Reported per record and load: p50 and p90 of
// the request time, the request's growth as the kernel counts the host
// and all its plugins together (above idle, as a multiple of the body;
// with two in flight the growth is two requests'), and CPU milliseconds
// per request of the host, the family and the record's adapter.
func BenchmarkServeContextRecords(b *testing.B) {
	dir := os.Getenv("ASSAY_BIN")
	if dir == "" {
		b.Skip("needs ASSAY_BIN (make bench builds the binaries)")
	}
	for _, rec := range contextRecords(b) {
		for _, load := range []struct {
			name    string
			callers int
		}{{"idle", 1}, {"pair", 2}} {
			b.Run(rec.name+"/"+load.name, func(b *testing.B) {
				url, cmd, group := serveInGroup(b, dir, strings.Fields(os.Getenv("BENCH_ENV")), "--payments", "off")
				post := func() time.Duration {
					start := time.Now()
					r, err := http.Post(url+"/context-audit/audit", "application/json", bytes.NewReader(rec.body))
					if err != nil {
						b.Error(err)
						return 0
					}
					_, _ = io.Copy(io.Discard, r.Body)
					r.Body.Close()
					if r.StatusCode != 200 {
						b.Errorf("status %d", r.StatusCode)
					}
					return time.Since(start)
				}
				host := strconv.Itoa(cmd.Process.Pid)
				procs := map[string]string{"host": host}
				for _, c := range children(cmd.Process.Pid) {
					name, _ := os.ReadFile("/proc/" + c + "/cmdline")
					switch {
					case bytes.Contains(name, []byte("assay-context-audit")):
						procs["family"] = c
					case bytes.Contains(name, []byte("assay-adapter-"+rec.format)):
						procs["adapter"] = c
					}
				}
				var groupIdle int64
				if group != nil {
					groupIdle = group.usage()
					group.resetPeak()
				}
				post() // plugins warm
				ticks := map[string]int64{}
				for k, pid := range procs {
					ticks[k] = cpuTicks(pid)
				}
				var (
					mu    sync.Mutex
					times []time.Duration
				)
				b.SetBytes(int64(len(rec.body)))
				for b.Loop() {
					var wg sync.WaitGroup
					for range load.callers {
						wg.Go(func() {
							d := post()
							mu.Lock()
							times = append(times, d)
							mu.Unlock()
						})
					}
					wg.Wait()
				}
				slices.Sort(times)
				b.ReportMetric(float64(times[(len(times)+1)/2-1].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(times[(9*len(times)+9)/10-1].Microseconds())/1000, "p90-ms")
				for k, pid := range procs {
					b.ReportMetric(float64(cpuTicks(pid)-ticks[k])*10/float64(len(times)), k+"-cpu-ms/req")
				}
				if group != nil {
					growth := group.peak() - groupIdle
					b.ReportMetric(float64(growth)/(1<<20), "growth-MiB")
					b.ReportMetric(float64(growth)/float64(len(rec.body)), "growth-x-body")
				}
			})
		}
	}
}
