package server_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/plugins/context-audit/composition"
	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
	"github.com/assay-audit/assay/sdk"
)

// BenchmarkContextAuditMaxRecord: the paid audit of a max-size record end
// to end (host, family plugin, adapter plugin), against the same host with
// the family and adapter in process. The plugin run reports the peak
// resident memory of the family and adapter processes and of the host
// (this test process: its figure includes the benchmark's own copies of
// the body), in MiB.
func BenchmarkContextAuditMaxRecord(b *testing.B) {
	body := compositiontest.MaxRecord(b)
	fam, err := composition.New()
	if err != nil {
		b.Fatal(err)
	}
	plugin := testhost.Start(b, testhost.Options{NoFreeTier: true, Adapters: []string{"plugins/adapter-anthropic-messages"}}, caPkg)
	local := testhost.InProcess(b, testhost.Options{NoFreeTier: true, LocalAdapters: []sdk.Adapter{anthropic.Adapter{}}}, fam)
	for _, c := range []struct {
		name string
		h    *testhost.Host
	}{{"plugin", plugin}, {"in-process", local}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				serve(b, c.h.Server, "/context-audit/audit", body)
			}
			if c.name == "plugin" {
				famPeak := testhost.PeakRSS(strconv.Itoa(plugin.Families["context-audit"].PID()))
				adPeak := testhost.PeakRSS(strconv.Itoa(plugin.Adapters[0].PID()))
				b.ReportMetric(float64(famPeak)/(1<<20), "family-peak-MiB")
				b.ReportMetric(float64(adPeak)/(1<<20), "adapter-peak-MiB")
				b.ReportMetric(float64(testhost.PeakRSS("self"))/(1<<20), "host-peak-MiB")
			}
		})
	}
	runtime.KeepAlive(body)
}

// The benchmark's record is measurable and its report is within the
// self-check (a benchmark that measured refusals would prove nothing).
func TestMaxContextRecordIsReported(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: []string{"plugins/adapter-anthropic-messages"}}, caPkg)
	r := post(t, h.URL+"/context-audit/audit", compositiontest.MaxRecord(t))
	if r.status != 200 {
		t.Fatalf("%d %.300s", r.status, r.raw)
	}
	m01, _ := r.json["header_facts"].(map[string]any)["M01"].(map[string]any)
	if m01["block_count"] != float64(10000) {
		t.Errorf("blocks %v", m01["block_count"])
	}
	if !strings.Contains(r.json["measurement_line"].(string), "· FULL —") {
		t.Errorf("line %v", r.json["measurement_line"])
	}
}
