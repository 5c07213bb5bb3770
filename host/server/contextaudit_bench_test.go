package server_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/assay-audit/assay/corpus/realistic"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/plugins/adapter-generic-message-list/generic"
	"github.com/assay-audit/assay/plugins/adapter-letta-af/lettaaf"
	"github.com/assay-audit/assay/plugins/context-audit/composition"
	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/selfcheck"
)

// BenchmarkContextAuditMaxRecord: the paid audit of a max-size record end
// to end (host, family plugin, adapter plugin), against the same host with
// the family and adapter in process, for each format. The first format's
// plugin run reports the peak resident memory of the family and adapter
// processes and of the host (this test process: its figure includes the
// benchmark's own copies of the body), in MiB.
func BenchmarkContextAuditMaxRecord(b *testing.B) {
	fam, err := composition.New()
	if err != nil {
		b.Fatal(err)
	}
	plugin := testhost.Start(b, testhost.Options{NoFreeTier: true, Adapters: caAdapters}, caPkg)
	local := testhost.InProcess(b, testhost.Options{NoFreeTier: true,
		LocalAdapters: []sdk.Adapter{anthropic.Adapter{}, generic.Adapter{}, lettaaf.Adapter{}}}, fam)
	for _, rec := range benchRecords(b) {
		for _, c := range []struct {
			name string
			h    *testhost.Host
		}{{"plugin", plugin}, {"in-process", local}} {
			b.Run(rec.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(len(rec.body)))
				b.ReportAllocs()
				// one audit first, untimed (b.Loop starts the clock), on
				// both paths: the first request after a start pays for
				// faulting in the processes' heaps, as the serve benchmark's
				// first request does, and the comparison is of the steady
				// state
				serve(b, c.h.Server, "/context-audit/audit", rec.body)
				for b.Loop() {
					serve(b, c.h.Server, "/context-audit/audit", rec.body)
				}
				if c.name == "plugin" && rec.name == "max/"+compositiontest.Formats[0] {
					famPeak := testhost.PeakRSS(strconv.Itoa(plugin.Families["context-audit"].PID()))
					b.ReportMetric(float64(famPeak)/(1<<20), "family-peak-MiB")
					for _, a := range plugin.Adapters {
						if a.Description().GetFormatId() == rec.format {
							b.ReportMetric(float64(testhost.PeakRSS(strconv.Itoa(a.PID())))/(1<<20), "adapter-peak-MiB")
						}
					}
					b.ReportMetric(float64(testhost.PeakRSS("self"))/(1<<20), "host-peak-MiB")
				}
			})
		}
	}
}

// BenchmarkSelfCheckRealistic: the pre-signing self-check of the
// realistic records' answers (0.5–1.4 MB of canonical JSON, tens of
// thousands of strings), the largest part of the host's CPU on a context
// audit.
func BenchmarkSelfCheckRealistic(b *testing.B) {
	fam, err := composition.New()
	if err != nil {
		b.Fatal(err)
	}
	local := testhost.InProcess(b, testhost.Options{NoFreeTier: true,
		LocalAdapters: []sdk.Adapter{anthropic.Adapter{}, generic.Adapter{}, lettaaf.Adapter{}}}, fam)
	check := selfcheck.New(fam.Describe().GetTripwires())
	for _, format := range realistic.Formats {
		body, err := realistic.Record(format, realistic.BodyCap, 1)
		if err != nil {
			b.Fatal(err)
		}
		rec := httptest.NewRecorder()
		local.Server.ServeHTTP(rec, httptest.NewRequest("POST", "/context-audit/audit", bytes.NewReader(body)))
		var answer map[string]json.RawMessage
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &answer) != nil {
			b.Fatalf("%s: %d", format, rec.Code)
		}
		delete(answer, "signature") // the check runs before signing
		raw, _ := json.Marshal(answer)
		doc, err := sdk.Canonicalize(raw)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(format, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := check.Check(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type benchRecord struct {
	name, format string
	body         []byte
}

// benchRecords are the synthetic max record of each format and a 5 MiB
// record of each format as a harness writes it (corpus/realistic: written
// from the criteria alone, never tuned to the engine).
func benchRecords(tb testing.TB) []benchRecord {
	var out []benchRecord
	for _, format := range compositiontest.Formats {
		out = append(out, benchRecord{"max/" + format, format, compositiontest.MaxRecordOf(tb, format)})
	}
	for _, format := range realistic.Formats {
		body, err := realistic.Record(format, realistic.BodyCap, 1)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, benchRecord{"realistic/" + format, format, body})
	}
	return out
}

// The benchmark's records are measurable in every format, and their
// reports pass the self-check (a benchmark that measured refusals would
// prove nothing).
func TestMaxContextRecordIsReported(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: caAdapters}, caPkg)
	// the realistic records: 5 MiB, reported, every factor but F-11
	// assessable (their stated counts make F-10 one)
	for _, format := range realistic.Formats {
		body, err := realistic.Record(format, realistic.BodyCap, 1)
		if err != nil {
			t.Fatal(err)
		}
		r := post(t, h.URL+"/context-audit/audit", body)
		if r.status != 200 {
			t.Fatalf("realistic %s: %d %.300s", format, r.status, r.raw)
		}
		if line, _ := r.json["measurement_line"].(string); !strings.Contains(line, "· FULL —") {
			t.Errorf("realistic %s: line %q", format, line)
		}
	}
	for _, format := range compositiontest.Formats {
		r := post(t, h.URL+"/context-audit/audit", compositiontest.MaxRecordOf(t, format))
		if r.status != 200 {
			t.Fatalf("%s: %d %.300s", format, r.status, r.raw)
		}
		m01, _ := r.json["header_facts"].(map[string]any)["M01"].(map[string]any)
		if m01["block_count"] != float64(10000) {
			t.Errorf("%s: blocks %v", format, m01["block_count"])
		}
		if !strings.Contains(r.json["measurement_line"].(string), "· FULL —") {
			t.Errorf("%s: line %v", format, r.json["measurement_line"])
		}
	}
}
