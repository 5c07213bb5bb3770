package server_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/plugins/context-audit/composition"
	"github.com/assay-audit/assay/sdk"
)

// maxContextRecord is a max-size audit: 10,000 anthropic-messages blocks
// (one per message) of varied prose, JSON tool inputs and results, with
// one block in 25 a near copy of an earlier one, filled to just under the
// 5 MiB body cap.
func maxContextRecord(tb testing.TB) []byte {
	r := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields("the of and to in is that for it as with was on be by this are from at or have an they which one you had were her all she there would their we him been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three")
	sentence := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	msgs := make([]any, 0, 10000)
	var texts []string
	for i := 0; i < 10000; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		var text string
		switch {
		case i >= 100 && i%25 == 0:
			base := texts[r.IntN(len(texts))]
			text = base[:len(base)-20] + sentence(20) // near copy
		default:
			text = sentence(425 + r.IntN(160))
		}
		texts = append(texts, text)
		switch {
		case i%10 == 3:
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t" + strconv.Itoa(i), "name": "search", "input": map[string]any{"query": text[:200], "limit": i}}}})
		case i%10 == 4:
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t" + strconv.Itoa(i-1), "content": text}}})
		default:
			msgs = append(msgs, map[string]any{"role": role, "content": text})
		}
	}
	body, err := json.Marshal(map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": "anthropic-messages",
		"record": map[string]any{"messages": msgs}, "harness_stated_counts": map[string]any{"total": 1200000}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(body) > 5<<20 || len(body) < 5<<20-200<<10 {
		tb.Fatalf("record is %d bytes, want just under 5 MiB", len(body))
	}
	return body
}

// peakRSS is a process's high-water resident set (VmHWM) in bytes.
func peakRSS(pid string) int64 {
	raw, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkContextAuditMaxRecord: the paid audit of a max-size record end
// to end (host, family plugin, adapter plugin), against the same host with
// the family and adapter in process. The plugin run reports the peak
// resident memory of the family and adapter processes and of the host
// (this test process: its figure includes the benchmark's own copies of
// the body), in MiB.
func BenchmarkContextAuditMaxRecord(b *testing.B) {
	body := maxContextRecord(b)
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
				famPeak := peakRSS(strconv.Itoa(plugin.Families["context-audit"].PID()))
				adPeak := peakRSS(strconv.Itoa(plugin.Adapters[0].PID()))
				b.ReportMetric(float64(famPeak)/(1<<20), "family-peak-MiB")
				b.ReportMetric(float64(adPeak)/(1<<20), "adapter-peak-MiB")
				b.ReportMetric(float64(peakRSS("self"))/(1<<20), "host-peak-MiB")
			}
		})
	}
	runtime.KeepAlive(body)
}

// The benchmark's record is measurable and its report is within the
// self-check (a benchmark that measured refusals would prove nothing).
func TestMaxContextRecordIsReported(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: []string{"plugins/adapter-anthropic-messages"}}, caPkg)
	r := post(t, h.URL+"/context-audit/audit", maxContextRecord(t))
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
