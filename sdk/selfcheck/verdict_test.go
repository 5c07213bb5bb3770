package selfcheck

import (
	"errors"
	"slices"
	"strings"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// The baseline the task set, word for word, and the plurals and "rated"
// added so that a word-boundary match leaves no inflection of a figure
// word out (as pass, passed, passes already are).
var wantBaseline = []string{"score", "scored", "scores", "grade", "graded", "grades", "rating", "ratings", "rated",
	"verdict", "verdicts", "pass", "passed", "passes", "fail", "failed", "fails", "certified", "certify", "verified",
	"healthy", "unhealthy", "good", "bad", "excellent", "poor", "compliant", "trustworthy", "safe", "unsafe"}

func TestTheBaselineIsTheListedWords(t *testing.T) {
	got := VerdictWords()
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(wantBaseline))) {
		t.Errorf("VerdictWords() = %q, want the words %q", got, wantBaseline)
	}
	for _, w := range got {
		if w != strings.ToLower(strings.TrimSpace(w)) || w == "" {
			t.Errorf("%q: a baseline word is spelt in lower case, without spaces", w)
		}
	}
	got[0] = "changed"
	if VerdictWords()[0] == "changed" {
		t.Error("VerdictWords hands out the baseline itself: a caller could change what every Checker forbids")
	}
}

// Every baseline word withholds an answer of a family that lists no word
// of its own, or other words, by the same rule as its own list: case
// aside, at word boundaries, at any depth.
func TestABaselineWordInAnAnswerTrips(t *testing.T) {
	for _, tw := range []*pb.Tripwires{nil, {}, {ForbiddenPhrases: []string{"band"}}} {
		c := New(tw)
		for _, w := range wantBaseline {
			for _, answer := range []string{
				`{"note":"the record is ` + w + `"}`,
				`{"rows":[{"note":"` + strings.ToUpper(w) + `: yes"}]}`,
				`{"note":"` + strings.ToUpper(w[:1]) + w[1:] + `-ish."}`,
			} {
				if _, err := c.Check(decode(t, answer)); !errors.Is(err, ErrTripped) || !strings.HasSuffix(err.Error(), ": forbidden wording") {
					t.Errorf("tripwires %v, %s: err = %v, want forbidden wording", tw, answer, err)
				}
			}
			for _, answer := range []string{
				`{"note":"x` + w + `"}`,  // inside a longer word
				`{"note":"` + w + `_x"}`, // _ is a word character
				`{"` + w + `":1}`,        // a member name is not wording
				`{"note":"` + w + `2"}`,
			} {
				if _, err := c.Check(decode(t, answer)); err != nil {
					t.Errorf("tripwires %v, %s: %v, want it to pass", tw, answer, err)
				}
			}
		}
	}
	// the task's own example: a family that forgot "good"
	c := New(&pb.Tripwires{ForbiddenPhrases: []string{"score", "grade"}})
	if _, err := c.Check(decode(t, `{"summary":"every tool has a good description"}`)); !errors.Is(err, ErrTripped) {
		t.Errorf("a good description: err = %v, want it withheld", err)
	}
}

// The exemptions the family declares hold for the baseline as for its own
// list: a string equal to an exempt sentence, any string beneath an
// exempt member.
func TestExemptSentencesAndMembersHoldForTheBaseline(t *testing.T) {
	c := New(&pb.Tripwires{ExemptSentences: []string{"This report is not a verdict and never a score."},
		ExemptMembers: []string{"label"}, ForbiddenMembers: []string{"score"}})
	cases := []struct {
		answer string
		ok     bool
	}{
		{`{"honesty_line":"This report is not a verdict and never a score."}`, true},
		{`{"honesty_line":"This report is not a verdict and never a score. "}`, false},
		{`{"honesty_line":"this report is not a verdict and never a score."}`, false},
		{`{"label":"good"}`, true},
		{`{"rows":[{"label":{"tags":["unsafe","certified"]}}]}`, true},
		{`{"labels":"good"}`, false},
		{`{"label":"good","note":"good"}`, false},
		// an exempt member still meets the member-name rules
		{`{"label":{"score":"good"}}`, false},
	}
	for _, k := range cases {
		if _, err := c.Check(decode(t, k.answer)); (err == nil) != k.ok {
			t.Errorf("%s: err = %v, want ok %v", k.answer, err, k.ok)
		}
	}
}

// A waiver lifts its word from the baseline and nothing else: the other
// baseline words, and the family's own list, still hold.
func TestAWaivedWordPasses(t *testing.T) {
	c := New(&pb.Tripwires{ForbiddenPhrases: []string{"grade"}, VerdictWaivers: []*pb.VerdictWaiver{
		{Word: "failed", Reason: "the criteria count the log's failed events as the log names them"},
		{Word: "grade", Reason: "the family's own list still forbids it"},
	}})
	cases := []struct {
		answer string
		ok     bool
	}{
		{`{"events":[{"status":"failed","count":2}]}`, true},
		{`{"note":"3 FAILED"}`, true},
		{`{"note":"fail"}`, false},
		{`{"note":"fails"}`, false},
		{`{"note":"a good log"}`, false},
		{`{"note":"grade"}`, false},
	}
	for _, k := range cases {
		if _, err := c.Check(decode(t, k.answer)); (err == nil) != k.ok {
			t.Errorf("%s: err = %v, want ok %v", k.answer, err, k.ok)
		}
	}
	// a waiver of a word the baseline does not hold changes nothing (the
	// host refuses such a description before any answer: WaiverProblems)
	odd := New(&pb.Tripwires{ForbiddenPhrases: []string{"band"}, VerdictWaivers: []*pb.VerdictWaiver{{Word: "band", Reason: "r"}, {Word: "Good", Reason: "r"}}})
	for _, answer := range []string{`{"note":"band"}`, `{"note":"good"}`} {
		if _, err := odd.Check(decode(t, answer)); err == nil {
			t.Errorf("%s passed: a waiver lifts a baseline word as the baseline spells it, and never the family's own", answer)
		}
	}
}

func TestWaiverProblems(t *testing.T) {
	cases := []struct {
		waivers []*pb.VerdictWaiver
		want    []string // words each problem names, in order
	}{
		{nil, nil},
		{[]*pb.VerdictWaiver{{Word: "good", Reason: "the criteria print a caller's status as written"}}, nil},
		{[]*pb.VerdictWaiver{{Word: "goodness", Reason: "r"}}, []string{`"goodness"`}},
		{[]*pb.VerdictWaiver{{Word: "Good", Reason: "r"}}, []string{`"Good"`}},
		{[]*pb.VerdictWaiver{{Word: "", Reason: "r"}}, []string{`""`}},
		{[]*pb.VerdictWaiver{{Word: "pass", Reason: ""}}, []string{`"pass"`}},
		{[]*pb.VerdictWaiver{{Word: "pass", Reason: " \t"}, {Word: "safe", Reason: "r"}, {Word: "band", Reason: "r"}}, []string{`"pass"`, `"band"`}},
	}
	for _, k := range cases {
		got := WaiverProblems(&pb.Tripwires{VerdictWaivers: k.waivers})
		if len(got) != len(k.want) {
			t.Errorf("%v: problems %q, want %d", k.waivers, got, len(k.want))
			continue
		}
		for i, p := range got {
			if !strings.Contains(p, k.want[i]) {
				t.Errorf("%v: problem %q does not name %s", k.waivers, p, k.want[i])
			}
		}
	}
	if p := WaiverProblems(&pb.Tripwires{VerdictWaivers: []*pb.VerdictWaiver{{Word: "pass"}}}); len(p) != 1 || !strings.Contains(p[0], "no reason") {
		t.Errorf("an empty reason: %q", p)
	}
	if p := WaiverProblems(&pb.Tripwires{VerdictWaivers: []*pb.VerdictWaiver{{Word: "passing", Reason: "r"}}}); len(p) != 1 || !strings.Contains(p[0], "not a word of the host's baseline") {
		t.Errorf("a word not on the baseline: %q", p)
	}
	if WaiverProblems(nil) != nil {
		t.Error("no tripwires: no problem")
	}
}

// The prefilter with the baseline never hides a match, and still lets a
// text without any of the words skip the expression.
func TestThePrefilterWithTheBaselineHidesNoMatch(t *testing.T) {
	c := New(&pb.Tripwires{ForbiddenPhrases: []string{"leak detected"}, VerdictWaivers: []*pb.VerdictWaiver{{Word: "safe", Reason: "r"}}})
	if c.folded == nil {
		t.Fatal("ASCII phrases: no prefilter")
	}
	var texts []string
	for _, w := range append(wantBaseline, "leak detected") {
		texts = append(texts, w, strings.ToUpper(w), "a "+w+".", "("+w+")", "un"+w, w+"s")
	}
	matched := 0
	for _, s := range texts {
		if c.phrases.MatchString(s) {
			matched++
			if !c.mayHavePhrase(s) {
				t.Errorf("%q matches but the prefilter skipped it", s)
			}
		}
	}
	if matched == 0 {
		t.Fatal("no text matched: the test proves nothing")
	}
	for _, s := range []string{"the record has 3 blocks", "est:~12", "upgra de", "LEAK-DETECTED"} {
		if c.mayHavePhrase(s) {
			t.Errorf("%q: the prefilter let through an ASCII text holding no phrase", s)
		}
	}
	if c.phrases.MatchString("it is safe") || c.phrases.MatchString("unsafe") == false {
		t.Error("the waived safe still matches, or unsafe, not waived, does not")
	}
}
