package familytest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/canary"
	"github.com/assay-audit/assay/sdk/corpus"
	"github.com/assay-audit/assay/sdk/envelope"
	"github.com/assay-audit/assay/sdk/hostcheck"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/selfcheck"
)

// FailuresShown bounds the failing cases RunCorpus reports one by one
// (then how many more), as a host's launch self-test does.
const FailuresShown = 50

// Option changes how RunCorpus runs a family.
type Option func(*runner)

// WithAdapters gives the family format adapters in process (the host's
// routing by format id): a family that reads records through adapters
// needs the ones its criteria accept.
func WithAdapters(a sdk.LocalAdapters) Option { return func(r *runner) { r.adapters = a } }

// CorpusResult is what RunCorpus found.
type CorpusResult struct {
	Cases, Passed int
	// Failures name each failing case and its first difference.
	Failures []string
	// Custody is the canary check (canary.Result): Leaks fail the test,
	// Withheld are logged as warnings.
	Custody canary.Result
}

// RunCorpus runs a corpus file against f in process, as a host's launch
// self-test runs it against the plugin, with the host's own parts: its
// description check (hostcheck.Description), the pin check, the answer
// it makes of a family's body (envelope: common members, payment off),
// its pre-signing self-check and ledger-line check (selfcheck), and the
// comparison (corpus.Compare). The free tier, payments and signatures are
// the host's alone and are not run: plugintest.StartHost runs the corpus
// through a real host.
//
// Then it plants a canary in every string and as an extra member of
// every object of every case (canary.Check): an answer that prints a
// planted string outside the family's exempt_members fails the test
// (custody), and a caller's string that can have an accepted case's
// answer withheld is logged as a warning.
//
// A description a host would refuse, or a corpus whose pins do not hold,
// ends the test at once (t.Fatal); failing cases are reported together,
// up to FailuresShown and the count of the rest.
func RunCorpus(t testing.TB, f sdk.Family, corpusFile []byte, opts ...Option) CorpusResult {
	t.Helper()
	d := f.Describe()
	if problems := hostcheck.Description(d); len(problems) > 0 {
		t.Fatalf("a host refuses this description: %s", strings.Join(problems, "; "))
	}
	cs, err := corpus.Parse(corpusFile, d.GetCorpusSha256())
	if err != nil {
		t.Fatalf("corpus: %v", err)
	}
	if len(cs.Cases) == 0 {
		t.Fatal("corpus: no cases: a host serves no family whose corpus proves nothing")
	}
	r := &runner{f: f, d: d, check: selfcheck.New(d.GetTripwires()), fields: selfcheck.NewLedgerFields(d.GetLedgerFields())}
	for _, o := range opts {
		o(r)
	}
	res := CorpusResult{Cases: len(cs.Cases)}
	for _, tc := range cs.Cases {
		body, err := tc.Body(func() string { return "11111111111111111111111111111111" })
		if err != nil {
			res.Failures = append(res.Failures, tc.Name+": "+err.Error())
			continue
		}
		sent := time.Now()
		status, answer := r.serve(tc.Method(), tc.Request.Path, body)
		if msg := corpus.Compare(tc, cs.SHA256, corpus.Answer{Status: status, Body: answer, Sent: sent, Received: time.Now()}); msg != "" {
			res.Failures = append(res.Failures, tc.Name+": "+msg)
			continue
		}
		res.Passed++
	}
	for _, msg := range res.Failures[:min(len(res.Failures), FailuresShown)] {
		t.Errorf("corpus case failed: %s", msg)
	}
	if n := len(res.Failures) - FailuresShown; n > 0 {
		t.Errorf("%d more corpus cases failed", n)
	}
	c, err := canary.New()
	if err != nil {
		t.Fatal(err)
	}
	res.Custody = c.Check(cs, d.GetTripwires(), r.serve)
	for _, l := range res.Custody.Leaks {
		t.Errorf("custody: %s (list the member in the tripwires' exempt_members only where the criteria let the answer print what was submitted)", l)
	}
	for _, w := range res.Custody.Withheld {
		t.Logf("warning: a caller can have answers withheld: %s (docs/self-check.md, what a caller can make a family print)", w)
	}
	return res
}

type runner struct {
	f        sdk.Family
	d        *pb.FamilyDescription
	check    *selfcheck.Checker
	fields   *selfcheck.LedgerFields
	adapters sdk.LocalAdapters
}

// serve answers one request as a host with payments off answers it.
func (r *runner) serve(method, path string, body []byte) (int, []byte) {
	prefix := "/" + r.d.GetService() + "/"
	name, ok := strings.CutPrefix(path, prefix)
	var op *pb.Op
	for _, o := range r.d.GetOps() {
		if o.GetName() == name {
			op = o
		}
	}
	if method != http.MethodPost || !ok || (op == nil && name != "precheck") {
		return http.StatusNotFound, []byte(envelope.NotCovered)
	}
	now := time.Now()
	if int64(len(body)) > r.d.GetBodyBytes() {
		return r.hostRefusal(name, op != nil, now, http.StatusRequestEntityTooLarge, envelope.BodyCapCode, envelope.BodyCapMessage,
			map[string]any{"cap": r.d.GetBodyBytes()})
	}
	s := &sdk.LocalSession{Family: r.f, Ctx: context.Background(), Adapters: r.adapters}
	defer s.Close()
	start := &pb.Start{Route: pb.Start_PRECHECK, Body: body, NowUnixNano: now.UnixNano()}
	if op != nil {
		start.Route, start.Op = pb.Start_OP, op.GetName()
	}
	v, err := s.Start(start)
	if err != nil {
		return r.failed(name, op != nil, now, err)
	}
	kind, status := envelope.KindPrecheck, http.StatusOK
	familyBody, checkEnd, ledger := v.GetBody(), v.GetCheckEndUnixNano(), []byte(nil)
	switch v.GetOutcome() {
	case pb.Outcome_REFUSED:
		kind, status = envelope.KindRefusal, http.StatusBadRequest
	case pb.Outcome_COULD_NOT_MEASURE:
		kind, status = envelope.KindCouldNotMeasure, http.StatusUnprocessableEntity
	case pb.Outcome_ACCEPTED:
		if op != nil {
			rep, err := s.Proceed()
			if err != nil {
				return r.failed(name, true, now, err)
			}
			kind, familyBody, checkEnd, ledger = envelope.KindReport, rep.GetBody(), rep.GetCheckEndUnixNano(), rep.GetLedger()
		}
	default:
		return r.failed(name, op != nil, now, errors.New("the validation's outcome is none of accepted, refused, could-not-measure"))
	}
	if kind == envelope.KindReport {
		if _, err := r.fields.Check(ledger); err != nil {
			return r.withheld(name, now, err)
		}
	}
	common := envelope.Common(r.d, name, kind, time.Unix(0, checkEnd))
	if op != nil {
		common["payment"] = map[string]any{"mode": "off"}
	}
	answer, err := envelope.Assemble(r.check, familyBody, common)
	if err != nil {
		return r.withheld(name, now, err)
	}
	return status, mustJSON(answer)
}

// withheld is the host's 500 for an answer its checks refused, with the
// rule, as a host explains it to its own self-test.
func (r *runner) withheld(name string, now time.Time, err error) (int, []byte) {
	return r.hostRefusal(name, name != "precheck", now, http.StatusInternalServerError, "self_check_failed",
		"the answer failed the host's pre-signing checks and was not issued; nothing was charged", map[string]any{"rule": err.Error()})
}

// failed is a family that answered no outcome (an error, a panic, an
// adapter it could not reach): a host answers 500 or 503.
func (r *runner) failed(name string, paid bool, now time.Time, err error) (int, []byte) {
	return r.hostRefusal(name, paid, now, http.StatusInternalServerError, "internal_error",
		"the service failed to handle this request; nothing was charged", map[string]any{"rule": "the family answered no outcome: " + err.Error()})
}

func (r *runner) hostRefusal(name string, paid bool, now time.Time, status int, code, message string, facts map[string]any) (int, []byte) {
	inner := map[string]any{"code": code, "message": message}
	for k, v := range facts {
		inner[k] = v
	}
	answer := envelope.Common(r.d, name, envelope.KindRefusal, now)
	answer["error"] = inner
	if paid {
		answer["payment"] = map[string]any{"mode": "off"}
	}
	return status, mustJSON(answer)
}

func mustJSON(v any) []byte {
	b, err := sdk.CanonicalJSON(v)
	if err != nil {
		return []byte(fmt.Sprintf(`{"error":{"code":"internal_error","rule":%q}}`, "answer not serialisable"))
	}
	return b
}
