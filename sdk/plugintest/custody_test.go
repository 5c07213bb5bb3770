package plugintest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errors = append(r.errors, "FATAL "+fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// The host's custody lines (in the text format `assay serve` logs) become
// the test's verdict: a leak fails it, a withheld case is a warning, and
// a service the host never checked is named.
func TestReportCustody(t *testing.T) {
	log := strings.Join([]string{
		`2026-12-06T12:00:00.000Z [INFO]  assay: corpus passed at launch: service=json-keys cases=5 passed=5 ms=3`,
		`2026-12-06T12:00:01.000Z [ERROR] assay: family answers print caller-chosen strings: not served (docs/self-check.md): service=json-keys case="list (planted everywhere): the answer (200) prints a submitted string at $.sample"`,
		`2026-12-06T12:00:01.000Z [WARN]  assay: a caller can have this family's answers withheld (docs/self-check.md): service=json-keys case="list (a forbidden member name in every object): the answer is withheld"`,
		`2026-12-06T12:00:01.000Z [WARN]  assay: custody check at launch: service=json-keys planted_requests=16 leaks=1 surfaces=0 withheld=1 ms=4`,
	}, "\n")
	r := &recorder{TB: t}
	if !custodyChecked(log, []string{"json-keys"}) || custodyChecked(log, []string{"json-keys", "other"}) {
		t.Error("which services the host checked")
	}
	reportCustody(r, log, []string{"json-keys", "other"})
	if len(r.errors) != 2 || !strings.Contains(r.errors[0], "custody: ") || !strings.Contains(r.errors[0], "$.sample") ||
		!strings.Contains(r.errors[1], "custody check of other") {
		t.Errorf("errors: %q", r.errors)
	}
	if len(r.logs) != 1 || !strings.Contains(r.logs[0], "warning: ") || !strings.Contains(r.logs[0], "forbidden member name") {
		t.Errorf("warnings: %q", r.logs)
	}
}

// A description a host would not serve ends the test at once, naming
// every problem; the test goes no further.
func TestStartFamilyStopsAtADescriptionAHostRefuses(t *testing.T) {
	r := &recorder{TB: t}
	reached := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		requireServable(r, "assay-json-keys", &pb.FamilyDescription{CriteriaId: "json-keys/v1", Service: "json-keys", BodyBytes: 64,
			CriteriaDocument: []byte("{}"), Ops: []*pb.Op{{Name: "precheck"}}})
		reached = true
	}()
	<-done
	if reached || len(r.errors) != 1 || !strings.HasPrefix(r.errors[0], "FATAL plugintest: assay-json-keys: a host refuses this family's description (2 problem(s))") ||
		!strings.Contains(r.errors[0], "precheck") || !strings.Contains(r.errors[0], "no corpus") {
		t.Errorf("went on: %v; %q", reached, r.errors)
	}
}
