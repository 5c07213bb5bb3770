package familytest

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/corpus"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// keys is a small json-keys family: its op lists the key names of a
// submitted object, as values under the exempt member "keys". How it
// misbehaves is set per test.
type keys struct {
	desc *pb.FamilyDescription
	// echo copies the first submitted string value into "sample"
	echo bool
	// asNames prints the keys as member names of "keys" instead of values
	asNames bool
	// noLedger measures with a nil ledger although "key_count" is declared
	noLedger bool
}

func (k *keys) Describe() *pb.FamilyDescription { return k.desc }

func (k *keys) Check(_ context.Context, req sdk.Request) sdk.Checked {
	var doc map[string]json.RawMessage
	if json.Unmarshal(req.Body, &doc) != nil {
		return sdk.RefuseRequest(sdk.Refusal{Code: "body_not_object", Message: "request body is not a JSON object"})
	}
	if req.Route == sdk.Precheck {
		return sdk.Assessed(map[string]any{"assessable": true})
	}
	names := make([]string, 0, len(doc))
	for n := range doc {
		names = append(names, n)
	}
	sort.Strings(names)
	return sdk.Accept(func(context.Context, func() time.Time) (sdk.Report, error) {
		body := map[string]any{"key_count": len(names), "keys": names}
		if k.asNames {
			m := map[string]any{}
			for _, n := range names {
				m[n] = 1
			}
			body["keys"] = m
		}
		if k.echo {
			for _, n := range names {
				var s string
				if json.Unmarshal(doc[n], &s) == nil {
					body["sample"] = s
					break
				}
			}
		}
		rep := sdk.Report{Body: body, Ledger: map[string]any{"key_count": len(names)}, CheckEnd: req.Now}
		if k.noLedger {
			rep.Ledger = nil
		}
		return rep, nil
	})
}

// corpusOf writes a corpus whose expected answers follow the host's
// contract (docs/corpus.md): the common members, payment off on the op,
// the family's members. The pin is the file's and the description's.
func corpusOf(t *testing.T, d *pb.FamilyDescription, cases ...map[string]any) []byte {
	doc := map[string]any{"id": "json-keys-corpus/v1", "criteria_id": d.GetCriteriaId(), "service": d.GetService(), "cases": cases}
	raw, _ := json.Marshal(doc)
	pin, err := corpus.Pin(raw)
	if err != nil {
		t.Fatal(err)
	}
	doc["sha256"] = pin
	d.CorpusSha256 = pin
	raw, _ = json.Marshal(doc)
	return raw
}

func common(op, kind string) map[string]any {
	m := map[string]any{"service": "json-keys", "service_version": "1.0.0", "criteria": map[string]any{"id": "json-keys/v1", "revision": "1.0.0"},
		"corpus": map[string]any{"id": "json-keys-corpus/v1", "sha256": "<pin>"}, "op": op, "kind": kind, "issued_at": "<check-end UTC>"}
	if op != "precheck" {
		m["payment"] = map[string]any{"mode": "off"}
	}
	return m
}

func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func describe() *pb.FamilyDescription {
	return &pb.FamilyDescription{CriteriaId: "json-keys/v1", CriteriaRevision: "1.0.0", Service: "json-keys", ServiceVersion: "1.0.0",
		Ops: []*pb.Op{{Name: "list"}}, BodyBytes: 256, CriteriaDocument: []byte(`{}`), CorpusId: "json-keys-corpus/v1",
		LedgerFields: []*pb.LedgerField{{Name: "key_count", Type: pb.LedgerField_NUMBER}},
		Tripwires: &pb.Tripwires{ForbiddenMembers: []string{"score"}, ForbiddenPhrases: []string{"grade"}, ExemptMembers: []string{"keys"},
			CountNames: []string{"key_count"}}}
}

func cases() []map[string]any {
	return []map[string]any{
		{"name": "list", "request": map[string]any{"method": "POST", "path": "/json-keys/list", "body": map[string]any{"b": "secret", "a": 1}},
			"expect": map[string]any{"status": 200, "answer": with(common("list", "report"), "key_count", 2, "keys", []string{"a", "b"})}},
		{"name": "precheck", "request": map[string]any{"method": "POST", "path": "/json-keys/precheck", "body": map[string]any{"a": 1}},
			"expect": map[string]any{"status": 200, "answer": with(common("precheck", "precheck"), "assessable", true)}},
		{"name": "not-an-object", "request": map[string]any{"method": "POST", "path": "/json-keys/list", "body": []int{1}},
			"expect": map[string]any{"status": 400, "answer": with(common("list", "refusal"),
				"error", map[string]any{"code": "body_not_object", "message": "request body is not a JSON object"})}},
		{"name": "over-the-cap", "request": map[string]any{"method": "POST", "path": "/json-keys/list", "body_text": strings.Repeat(" ", 257)},
			"expect": map[string]any{"status": 413, "answer": with(common("list", "refusal"),
				"error", map[string]any{"code": "body_bytes_cap", "message": "request body exceeds the published cap", "cap": 256})}},
		{"name": "no-such-op", "request": map[string]any{"method": "POST", "path": "/json-keys/verify", "body": map[string]any{}},
			"expect": map[string]any{"status": 404, "body_text": "NOT COVERED"}},
	}
}

// recorder is a testing.TB that keeps what RunCorpus reports; Fatal
// ends the goroutine RunCorpus runs on, as it ends a test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	logs   []string
	fatal  string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func run(t *testing.T, f sdk.Family, raw []byte) (*recorder, CorpusResult) {
	rec := &recorder{TB: t}
	var res CorpusResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		res = RunCorpus(rec, f, raw)
	}()
	<-done
	return rec, res
}

func TestRunCorpusPassesAWellBehavedFamily(t *testing.T) {
	f := &keys{desc: describe()}
	rec, res := run(t, f, corpusOf(t, f.desc, cases()...))
	if rec.fatal != "" || len(rec.errors) != 0 || res.Passed != 5 || res.Cases != 5 {
		t.Fatalf("fatal %q, errors %q, %d of %d", rec.fatal, rec.errors, res.Passed, res.Cases)
	}
	// every case planted twice, and the two accepted ones probed for
	// each of the three tripwire lists the description has
	if res.Custody.Sent != 5*2+2*3 || len(res.Custody.Leaks) != 0 || len(res.Custody.Withheld) != 0 {
		t.Errorf("custody: %+v", res.Custody)
	}
}

// A changed expectation fails that case, naming the member.
func TestRunCorpusNamesTheDifference(t *testing.T) {
	f := &keys{desc: describe()}
	cs := cases()
	cs[0]["expect"].(map[string]any)["answer"].(map[string]any)["key_count"] = 3
	rec, res := run(t, f, corpusOf(t, f.desc, cs...))
	if res.Passed != 4 || len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "list: $.key_count: number differs") {
		t.Errorf("%d passed, errors %q", res.Passed, rec.errors)
	}
}

// A family that copies a submitted value into its report fails the
// custody check, naming the case and the member; one that prints the
// caller's key names as member names under its exempt "keys" member is
// not a leak, but a caller who names a key "score" has the answer
// withheld: a warning, naming the probe and the rule.
func TestRunCorpusCatchesEchoesAndWarnsOfNames(t *testing.T) {
	f := &keys{desc: describe(), echo: true}
	rec, _ := run(t, f, corpusOf(t, f.desc, cases()...))
	// its corpus case fails (the corpus has no sample), and the custody
	// check on its own
	if !slices.ContainsFunc(rec.errors, func(e string) bool {
		return strings.HasPrefix(e, "custody: list (planted everywhere): the answer (200) prints a submitted string at $.sample")
	}) {
		t.Errorf("an echo: %q", rec.errors)
	}
	f = &keys{desc: describe(), asNames: true}
	cs := cases()
	cs[0]["expect"].(map[string]any)["answer"].(map[string]any)["keys"] = map[string]any{"a": 1, "b": 1}
	rec, res := run(t, f, corpusOf(t, f.desc, cs...))
	if len(rec.errors) != 0 || len(res.Custody.Withheld) != 1 || !strings.Contains(res.Custody.Withheld[0], "list (a forbidden member name in every object): the answer is withheld (rule") {
		t.Errorf("names as members: errors %q, withheld %q", rec.errors, res.Custody.Withheld)
	}
	if len(rec.logs) != 1 || !strings.HasPrefix(rec.logs[0], "warning: a caller can have answers withheld") {
		t.Errorf("the warning: %q", rec.logs)
	}
}

// A nil ledger with a declared field: the report is withheld and the
// failure names the ledger rule.
func TestRunCorpusNamesTheLedgerRule(t *testing.T) {
	f := &keys{desc: describe(), noLedger: true}
	rec, _ := run(t, f, corpusOf(t, f.desc, cases()...))
	if len(rec.errors) == 0 || !strings.Contains(rec.errors[0], "list: status: expected 200, actual 500 (self_check_failed: rule ledger line refused: declared field 0 missing)") {
		t.Errorf("a nil ledger: %q", rec.errors)
	}
}

// A description a host refuses, or a pin that does not hold, ends the
// run before any case, naming the problem (which pin, both values).
func TestRunCorpusStopsAtTheFirstFatalProblem(t *testing.T) {
	f := &keys{desc: describe()}
	raw := corpusOf(t, f.desc, cases()...)
	pin := f.desc.CorpusSha256
	f.desc.CorpusSha256 = strings.Repeat("0", 64)
	rec, res := run(t, f, raw)
	if !strings.Contains(rec.fatal, "the criteria's corpus.sha256 is "+f.desc.CorpusSha256+", but the corpus pins to "+pin) || res.Cases != 0 {
		t.Errorf("a criteria pin that does not hold: %q", rec.fatal)
	}
	f.desc.CorpusSha256 = pin
	f.desc.Ops = append(f.desc.Ops, &pb.Op{Name: "precheck"})
	rec, _ = run(t, f, raw)
	if !strings.HasPrefix(rec.fatal, "a host refuses this description: ") || !strings.Contains(rec.fatal, "precheck") {
		t.Errorf("a description a host refuses: %q", rec.fatal)
	}
}
