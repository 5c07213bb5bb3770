package selftest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/selftest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testhost.Cleanup()
	os.Exit(code)
}

// The stream-divergence corpus, written by the independent generator,
// passes whole against the real plugin behind the host; a corpus whose
// expectation is changed fails on exactly that case; a corpus whose pin
// does not match is refused before anything runs.
func TestRunsTheShippedCorpus(t *testing.T) {
	raw, err := os.ReadFile("../../corpus/stream-divergence/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ SHA256 string }
	_ = json.Unmarshal(raw, &head)
	c, err := selftest.Parse(raw, head.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	h := testhost.Start(t, testhost.Options{}, "plugins/stream-divergence")
	jwks, _ := json.Marshal(h.Keys.JWKS())
	r := selftest.Run(context.Background(), h.Server, selftest.Fixed(jwks), c)
	if !r.OK() || r.Cases != 99 || len(r.Failures) != 0 {
		t.Fatalf("%d of %d passed: %v", r.Passed, r.Cases, r.Failures)
	}

	// one expectation changed: that case, and only it, fails
	var changed int
	for i := range c.Cases {
		if bytes.Contains(c.Cases[i].Expect.Answer, []byte(`"byte_length": 11`)) {
			c.Cases[i].Expect.Answer = bytes.Replace(c.Cases[i].Expect.Answer, []byte(`"byte_length": 11`), []byte(`"byte_length": 12`), 1)
			changed++
			break
		}
	}
	if changed != 1 {
		t.Fatal("no case to change")
	}
	r = selftest.Run(context.Background(), h.Server, selftest.Fixed(jwks), c)
	if r.Passed != 98 || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "number differs") {
		t.Errorf("a changed expectation: %d passed, %v", r.Passed, r.Failures)
	}
	// another key set: no signed answer verifies (the one case that
	// expects the unsigned NOT COVERED text still passes)
	other := testhost.Start(t, testhost.Options{}, "plugins/stream-divergence")
	otherKeys, _ := json.Marshal(other.Keys.JWKS())
	c, _ = selftest.Parse(raw, head.SHA256)
	if r := selftest.Run(context.Background(), h.Server, selftest.Fixed(otherKeys), c); r.Passed != 1 {
		t.Errorf("%d answers passed against another host's keys, want only the unsigned one", r.Passed)
	}
	if _, err := selftest.Parse(raw, strings.Repeat("0", 64)); err == nil {
		t.Error("a corpus that is not the pinned one was accepted")
	}
	if _, err := selftest.Parse(bytes.Replace(raw, []byte(`"status": 200`), []byte(`"status": 201`), 1), head.SHA256); err == nil {
		t.Error("an edited corpus was accepted under its old pin")
	}
}

// A key rotated in while the corpus runs (on any host of a shared store)
// signs the answers that follow; they are checked against the key set
// published when they arrive, so the run still passes whole. A fixed key
// set from before the rotation fails them (what stopped a fleet's losing
// host at its first start).
func TestRunChecksAgainstTheKeysOfTheMoment(t *testing.T) {
	raw, err := os.ReadFile("../../corpus/stream-divergence/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ SHA256 string }
	_ = json.Unmarshal(raw, &head)
	h := testhost.Start(t, testhost.Options{}, "plugins/stream-divergence")
	rotating := func() http.Handler {
		var n atomic.Int32
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 10 {
				if _, err := h.Keys.Rotate(); err != nil {
					t.Error(err)
				}
			}
			h.Server.ServeHTTP(w, r)
		})
	}
	current := func() []byte { b, _ := json.Marshal(h.Keys.JWKS()); return b }
	c, _ := selftest.Parse(raw, head.SHA256)
	if r := selftest.Run(context.Background(), rotating(), current, c); !r.OK() {
		t.Fatalf("against the current keys: %d of %d passed: %v", r.Passed, r.Cases, r.Failures[:min(3, len(r.Failures))])
	}
	before := current()
	c, _ = selftest.Parse(raw, head.SHA256)
	if r := selftest.Run(context.Background(), rotating(), selftest.Fixed(before), c); r.OK() || !strings.Contains(r.Failures[0], "signature key_id is not in the key set") {
		t.Errorf("against the keys from before: %d of %d passed", r.Passed, r.Cases)
	}
}

// A case that fails says why: an answer of the wrong status names its
// refusal code and, from a server that explains withheld answers (the
// launch self-test's own), the self-check's rule; a corpus whose pin does
// not match names which pin and both values.
func TestFailuresNameTheirCause(t *testing.T) {
	h := testhost.Start(t, testhost.Options{ExplainWithheld: true}, "host/internal/testfamily")
	var c selftest.Corpus
	if err := json.Unmarshal([]byte(`{"cases":[
		{"name":"withheld","request":{"method":"POST","path":"/test-family/measure","body":{"forbidden_word":true}},"expect":{"status":200,"answer":{}}},
		{"name":"no-ledger","request":{"method":"POST","path":"/test-family/measure","body":{"nil_ledger":true}},"expect":{"status":422,"answer":{}}}]}`), &c); err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(h.Keys.JWKS())
	r := selftest.Run(context.Background(), h.Server, selftest.Fixed(jwks), &c)
	if len(r.Failures) != 2 || !strings.Contains(r.Failures[0], "withheld: status: expected 200, actual 500 (self_check_failed: rule forbidden_member") {
		t.Errorf("the withheld case's failure: %q", r.Failures)
	}
	// a nil ledger map is no fields (not "not an object"): the test
	// family declares op, so the line lacks it, and the failure says so
	if len(r.Failures) == 2 && !strings.Contains(r.Failures[1], "no-ledger: status: expected 422, actual 500 (self_check_failed: rule ledger_line_declared_field_0_missing)") {
		t.Errorf("the nil ledger's case: %q", r.Failures[1])
	}

	raw, err := os.ReadFile("../../corpus/stream-divergence/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ SHA256 string }
	_ = json.Unmarshal(raw, &head)
	zeros := strings.Repeat("0", 64)
	if _, err := selftest.Parse(raw, zeros); err == nil || !strings.Contains(err.Error(), "the criteria's corpus.sha256 is "+zeros+", but the corpus pins to "+head.SHA256) {
		t.Errorf("criteria pin mismatch: %v", err)
	}
	stale := bytes.Replace(raw, []byte(head.SHA256), []byte(zeros), 1)
	if _, err := selftest.Parse(stale, head.SHA256); err == nil || !strings.Contains(err.Error(), "sha256 member is "+zeros+", but the corpus pins to "+head.SHA256) {
		t.Errorf("the file's own pin stale: %v", err)
	}
}
