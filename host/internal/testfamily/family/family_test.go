package family_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/internal/testfamily/family"
	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
)

const testPkg = "host/internal/testfamily"

// measure posts body to the test family's op and returns the status and
// the answer's error member.
func measure(t *testing.T, h *testhost.Host, body string) (int, map[string]any, []byte) {
	t.Helper()
	resp, err := http.Post(h.URL+"/test-family/measure", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("%d %s: %v", resp.StatusCode, raw, err)
	}
	return resp.StatusCode, answer.Error, raw
}

// A report saying "good", a word the family's own tripwires do not list,
// is withheld by the host's baseline of verdict words; the same family's
// report without it is issued.
func TestABaselineVerdictWordTheFamilyDoesNotListIsWithheld(t *testing.T) {
	f, err := family.New()
	if err != nil {
		t.Fatal(err)
	}
	tw := f.Describe().GetTripwires()
	for _, p := range tw.GetForbiddenPhrases() {
		if strings.Contains(strings.ToLower(p), "good") {
			t.Fatalf("the family lists %q itself: this test would prove nothing of the baseline", p)
		}
	}
	if len(tw.GetVerdictWaivers()) != 0 {
		t.Fatalf("the family waives %v", tw.GetVerdictWaivers())
	}

	h := testhost.Start(t, testhost.Options{ExplainWithheld: true}, testPkg)
	if status, _, raw := measure(t, h, `{"pad":"x"}`); status != 200 {
		t.Fatalf("a report without the word: %d %s", status, raw)
	}
	status, e, raw := measure(t, h, `{"verdict_word":true}`)
	if status != 500 || e["code"] != "self_check_failed" || e["rule"] != "forbidden_wording" {
		t.Fatalf("a report saying good: %d %s, want 500 self_check_failed, rule forbidden_wording", status, raw)
	}
	if bytes.Contains(raw, []byte(family.GoodNote)) {
		t.Error("the withheld report reached the caller")
	}
	if log := h.Log.String(); !strings.Contains(log, "answer withheld by self-check") || !strings.Contains(log, "forbidden wording") {
		t.Errorf("the operator's log does not name the rule:\n%s", log)
	}
}

// The host refuses at launch a family whose waiver names a word not on
// its baseline, or gives no reason, naming the word; a waiver it can
// honour loads, and lifts its word from the family's answers.
func TestTheHostJudgesAFamilysVerdictWaiversAtLaunch(t *testing.T) {
	path := testhost.Plugin(t, testPkg)
	sum, err := pluginhost.PinOf(path)
	if err != nil {
		t.Fatal(err)
	}
	start := func(waiver string) (*pluginhost.Family, error) {
		f, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: "testfamily", Path: path, SHA256: sum},
			pluginhost.Options{Env: []string{"TESTFAMILY_VERDICT_WAIVER=" + waiver}}, nil)
		if err == nil {
			t.Cleanup(f.Close)
		}
		return f, err
	}
	for waiver, says := range map[string][]string{
		"goodness:the criteria print it": {`"goodness"`, "not a word of the host's baseline of verdict words"},
		// an inflection the baseline does not hold
		"passing:the criteria print it": {`"passing"`, "not a word of the host's baseline"},
		"good:":                         {`"good"`, "no reason"},
		"good:   ":                      {`"good"`, "no reason"},
	} {
		_, err := start(waiver)
		if !errors.Is(err, pluginhost.ErrDescription) {
			t.Errorf("waiver %q: err = %v, want the description refused", waiver, err)
			continue
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("waiver %q: %v does not say %s", waiver, err, s)
			}
		}
	}

	const reason = "the test family's note is printed as written"
	f, err := start("good:" + reason)
	if err != nil {
		t.Fatalf("a waiver of a baseline word with a reason: %v", err)
	}
	if w := f.Description().GetTripwires().GetVerdictWaivers(); len(w) != 1 || w[0].GetWord() != "good" || w[0].GetReason() != reason {
		t.Fatalf("the loaded description's waivers: %v", w)
	}
	h := testhost.Start(t, testhost.Options{ExplainWithheld: true, Env: []string{"TESTFAMILY_VERDICT_WAIVER=good:" + reason}}, testPkg)
	if status, _, raw := measure(t, h, `{"verdict_word":true}`); status != 200 || !bytes.Contains(raw, []byte(family.GoodNote)) {
		t.Errorf("good waived: %d %s, want the report issued", status, raw)
	}
}
