package main

import (
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
)

// BenchmarkRestartProvenSet is a restart of a host whose plugin set (every
// family and adapter of the repository) has passed its launch proof on
// its store: from the exec to /readyz 200. The first start, which proves
// the set, is outside the clock; ms-to-ready is the figure.
func BenchmarkRestartProvenSet(b *testing.B) {
	bin := testhost.Binary(b, "host/cmd/assay", "assay")
	cfg, _ := everyPlugin(b, b.TempDir(), "")
	dataDir := b.TempDir()
	start := func() (time.Duration, func()) {
		addr := testhost.FreePort(b)
		cmd := exec.Command(bin, "serve", "--config", cfg, "--listen", addr, "--data-dir", dataDir, "--payments", "house")
		began := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		stop := func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if r, err := http.Get("http://" + addr + "/readyz"); err == nil {
				r.Body.Close()
				if r.StatusCode == 200 {
					return time.Since(began), stop
				}
			}
		}
		stop()
		b.Fatal("the host was not ready within a minute")
		return 0, nil
	}
	_, stop := start() // proves the set
	stop()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		took, stop := start()
		total += took
		b.StopTimer()
		stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
}
