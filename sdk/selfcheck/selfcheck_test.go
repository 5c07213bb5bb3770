package selfcheck

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// decode is an answer as the host checks it: in canonical form.
func decode(t *testing.T, s string) []byte {
	doc, err := sdk.Canonicalize([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestTripwires(t *testing.T) {
	c := New(&pb.Tripwires{
		AbsentTokens:     []string{"NOT-ASSESSABLE"},
		ForbiddenPhrases: []string{"verified", "correct"},
		ExemptSentences:  []string{"The report does not establish which output is correct."},
		ForbiddenMembers: []string{"score"},
	})
	cases := []struct {
		name, answer string
		ok           bool
	}{
		{"plain facts", `{"count":3,"share":"est:~12.50%","tokens":"est:~40","rows":[{"n":1}]}`, true},
		{"exempt sentence", `{"scope_text":"The report does not establish which output is correct."}`, true},
		{"forbidden word", `{"note":"the stream was Verified"}`, false},
		{"forbidden word in an array", `{"notes":["fine","correct output"]}`, false},
		{"word inside another word", `{"note":"incorrectly"}`, true},
		{"forbidden member deep", `{"a":{"b":[{"Score":1}]}}`, false},
		{"token with reason", `{"f":{"value":"NOT-ASSESSABLE","reason":"zero denominator"}}`, true},
		{"token without reason", `{"f":{"value":"NOT-ASSESSABLE","reason":""}}`, false},
		{"token beside a zero", `{"f":{"value":"NOT-ASSESSABLE","reason":"x","n":0}}`, false},
		{"malformed estimate", `{"t":"est:~12.5%"}`, false},
		{"estimate with spaces", `{"t":"est: ~12"}`, false},
	}
	for _, k := range cases {
		_, err := c.Check(decode(t, k.answer))
		if (err == nil) != k.ok {
			t.Errorf("%s: err = %v", k.name, err)
		}
		if err != nil && !errors.Is(err, ErrTripped) {
			t.Errorf("%s: error does not wrap ErrTripped", k.name)
		}
	}
}

func TestExemptMembersCarrySubmittedLabels(t *testing.T) {
	c := New(&pb.Tripwires{ForbiddenPhrases: []string{"grade"}, ExemptMembers: []string{"rail"}, ForbiddenMembers: []string{"score"}})
	if _, err := c.Check(decode(t, `{"groups":[{"rail":"grade-a","n":1}]}`)); err != nil {
		t.Errorf("a label in an exempt member tripped: %v", err)
	}
	if _, err := c.Check(decode(t, `{"note":"grade-a"}`)); err == nil {
		t.Error("the same words elsewhere must trip")
	}
	if _, err := c.Check(decode(t, `{"rail":{"score":1}}`)); err == nil {
		t.Error("an exempt member does not exempt member names")
	}
}

// Member names match without ASCII case, and through nothing else.
func TestForbiddenMemberNamesFoldASCIIOnly(t *testing.T) {
	c := New(&pb.Tripwires{ForbiddenMembers: []string{"score", "Composite"}})
	for name, trips := range map[string]bool{"score": true, "Score": true, "SCORE": true, "composite": true,
		"ſcore": false, "compos\u0130te": false, "scores": false} {
		_, err := c.Check(decode(t, `{"a":{"`+name+`":1}}`))
		if (err != nil) != trips {
			t.Errorf("member %q: %v, want tripped %v", name, err, trips)
		}
	}
}

func TestTypographyAndLimited(t *testing.T) {
	c := everyRule()
	na := `{"id":"F-5","status":"NOT-ASSESSABLE","reason":"no P-USER message"}`
	byDesign := `{"id":"F-11","status":"NOT-ASSESSABLE","reason":"by design"}`
	ok := `{"id":"F-1","status":"ASSESSABLE"}`
	cases := []struct {
		name, answer string
		ok           bool
	}{
		{"count as number", `{"block_count":3,"characters":10}`, true},
		{"count as string", `{"block_count":"3"}`, false},
		{"count as estimate", `{"block_count":"est:~3"}`, false},
		{"estimate as number", `{"tokens":12}`, false},
		{"estimate suffix as number", `{"excess_tokens":0}`, false},
		{"estimate as plain string", `{"share":"12.50%"}`, false},
		{"estimate stated absent", `{"share":{"value":"NOT-ASSESSABLE","reason":"zero denominator"}}`, true},
		{"estimate as other object", `{"share":{"value":"12"}}`, false},
		{"full line, all assessable", `{"line":"X · FULL — t","factors":[` + ok + `,` + byDesign + `]}`, true},
		{"limited line with an absent factor", `{"line":"X · LIMITED — t","factors":[` + ok + `,` + na + `]}`, true},
		{"absent factor, line says FULL", `{"line":"X · FULL — t","factors":[` + na + `]}`, false},
		{"no absent factor, line says LIMITED", `{"line":"X · LIMITED — t","factors":[` + ok + `]}`, false},
		{"F-11 alone never limits", `{"line":"X · LIMITED — t","factors":[` + byDesign + `]}`, false},
		{"absent factor without reason", `{"line":"X · LIMITED — t","factors":[{"id":"F-5","status":"NOT-ASSESSABLE"}]}`, false},
		{"absent factor beside a number", `{"line":"X · LIMITED — t","factors":[{"id":"F-5","status":"NOT-ASSESSABLE","reason":"r","n":0}]}`, false},
		{"no line: not a report", `{"factors":[` + na + `]}`, true},
	}
	for _, k := range cases {
		_, err := c.Check(decode(t, k.answer))
		if (err == nil) != k.ok {
			t.Errorf("%s: err = %v", k.name, err)
		}
	}
}

func TestIsEstimateIsTheTypographyRegexp(t *testing.T) {
	re := regexp.MustCompile(`^est:~[0-9]+(\.[0-9]{2}%)?$`)
	for _, s := range []string{"est:~0", "est:~12", "est:~12.50%", "est:~12.5%", "est:~.50%", "est:~", "est:~1a", "est:~1.234%", "est:~1.23", "est:~1.23%x", "est: ~1", "est:~-1", "est:~1.2a%", "x"} {
		if isEstimate(s) != re.MatchString(s) {
			t.Errorf("%q: %v", s, isEstimate(s))
		}
	}
}

// everyRule is a checker with every kind of tripwire, for the tests that
// hold the byte walk to the tree walk.
func everyRule() *Checker {
	return New(&pb.Tripwires{
		AbsentTokens:     []string{"NOT-ASSESSABLE"},
		ForbiddenPhrases: []string{"verified", "grade"},
		ExemptSentences:  []string{"It is not verified."},
		ForbiddenMembers: []string{"score"},
		ExemptMembers:    []string{"rail"},
		CountNames:       []string{"characters"},
		CountSuffixes:    []string{"_count"},
		EstimateNames:    []string{"tokens", "share"},
		EstimateSuffixes: []string{"_tokens"},
		Limited: &pb.LimitedRule{Line: "line", Factors: "factors", IdMember: "id", StatusMember: "status",
			ExemptIds: []string{"F-11"}, LimitedWord: "LIMITED", FullWord: "FULL"},
	})
}

// The byte walk decides as a walk over the decoded tree does, on random
// answers built from the tripwires' own vocabulary (names, tokens,
// estimates, headlines, strings with escapes), and it never panics on
// bytes that are not canonical JSON.
func TestByteWalkIsTheTreeWalk(t *testing.T) {
	c := everyRule()
	names := []string{"value", "reason", "status", "id", "score", "Score", "rail", "tokens", "share", "block_count", "characters", "excess_tokens", "note", "n", "factors", "line"}
	strs := []string{"NOT-ASSESSABLE", "", " ", "est:~12", "est:~1.50%", "est:~1.5%", "verified", "a\nverified", "\"grade\"", "It is not verified.", "X · FULL — t", "X · LIMITED — t", "F-11", "F-5", "plain", "\u00e9t\u00e9", "a good one", "goods"}
	r := rand.New(rand.NewPCG(2, 7))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(8); {
		case k < 2 && depth < 4:
			m := map[string]any{}
			for range r.IntN(4) {
				m[names[r.IntN(len(names))]] = gen(depth + 1)
			}
			return m
		case k == 2 && depth < 4:
			a := make([]any, r.IntN(3))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		case k < 5:
			return strs[r.IntN(len(strs))]
		case k == 5:
			return r.IntN(3)
		case k == 6:
			return r.IntN(2) == 0
		}
		return nil
	}
	tripped := 0
	for range 20000 {
		top := map[string]any{}
		for range 1 + r.IntN(4) {
			top[names[r.IntN(len(names))]] = gen(1)
		}
		doc, err := sdk.CanonicalJSON(top)
		if err != nil {
			t.Fatal(err)
		}
		tree, _ := sdk.DecodeJSON(doc)
		walked, got := c.Check(doc)
		want := treeCheck(c, tree)
		if (got == nil) != (want == nil) {
			t.Fatalf("%s: byte walk %v, tree walk %v", doc, got, want)
		}
		if members, _ := sdk.TopLevel(doc); got == nil && !slices.Equal(walked, members) {
			t.Fatalf("%s: members %v, want %v", doc, walked, members)
		}
		if got != nil {
			tripped++
		}
		// truncated and altered bytes are refused, never a panic
		cut := doc[:r.IntN(len(doc))]
		if _, err := c.Check(cut); err == nil && len(cut) > 0 {
			t.Fatalf("a truncated answer %s passed", cut)
		}
	}
	if tripped < 2000 || tripped > 18000 {
		t.Errorf("%d of 20000 answers tripped: the vocabulary does not test both outcomes", tripped)
	}
}

// treeCheck is the self-check written over a decoded tree, rule by rule
// as the tripwires state them: the reference the byte walk is held to.
func treeCheck(c *Checker, v any) error {
	if err := treeWalk(c, v, false); err != nil {
		return err
	}
	r := c.t.GetLimited()
	top, _ := v.(map[string]any)
	line, ok := top[r.GetLine()].(string)
	if !ok {
		return nil
	}
	absent := false
	factors, _ := top[r.GetFactors()].([]any)
	for _, f := range factors {
		m, _ := f.(map[string]any)
		id, _ := m[r.GetIdMember()].(string)
		st, _ := m[r.GetStatusMember()].(string)
		if slices.Contains(c.absent, st) && !slices.Contains(r.GetExemptIds(), id) {
			absent = true
		}
	}
	if absent != strings.Contains(line, r.GetLimitedWord()) || absent == strings.Contains(line, r.GetFullWord()) {
		return ErrTripped
	}
	return nil
}

func treeWalk(c *Checker, v any, label bool) error {
	number := func(x any) bool { _, ok := x.(json.Number); return ok }
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if c.members[sdk.FoldASCII(k)] {
				return ErrTripped
			}
			if hasName(k, c.t.GetCountNames(), c.t.GetCountSuffixes()) && !number(child) {
				return ErrTripped
			}
			if hasName(k, c.t.GetEstimateNames(), c.t.GetEstimateSuffixes()) {
				s, isString := child.(string)
				m, isObject := child.(map[string]any)
				st, _ := m["value"].(string)
				if !(isString && isEstimate(s) || isObject && slices.Contains(c.absent, st)) {
					return ErrTripped
				}
			}
			if err := treeWalk(c, child, label || c.labels[k]); err != nil {
				return err
			}
		}
		val, ok := x["value"].(string)
		if !ok {
			val, ok = x[c.t.GetLimited().GetStatusMember()].(string)
		}
		if ok && slices.Contains(c.absent, val) {
			if r, _ := x["reason"].(string); strings.TrimSpace(r) == "" {
				return ErrTripped
			}
			for _, other := range x {
				if number(other) {
					return ErrTripped
				}
			}
		}
	case []any:
		for _, child := range x {
			if err := treeWalk(c, child, label); err != nil {
				return err
			}
		}
	case string:
		if c.exempt[x] || label {
			return nil
		}
		if strings.HasPrefix(x, "est:") {
			if !isEstimate(x) {
				return ErrTripped
			}
			return nil
		}
		if c.phrases.MatchString(x) {
			return ErrTripped
		}
	}
	return nil
}

// FuzzCheck: on any bytes the walk returns (never panics), and on any
// valid JSON it decides as the tree walk does.
func FuzzCheck(f *testing.F) {
	c := everyRule()
	for _, s := range []string{`{}`, `{"a_count":1,"tokens":"est:~3"}`, `{"f":{"value":"NOT-ASSESSABLE","reason":"r","n":1}}`,
		`{"line":"FULL","factors":[{"id":"F-1","status":"NOT-ASSESSABLE","reason":"x"}]}`, `["verified",{"rail":"verified"}]`,
		`{"Score":1}`, `{"tokens":{"value":"NOT-ASSESSABLE","reason":"r"}}`, `"a\u0000verified"`, `{"a":"\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = c.Check(b)
		if !sdk.ValidJSON(b) {
			return
		}
		doc, err := sdk.Canonicalize(b)
		if err != nil {
			return // a number JCS cannot print
		}
		tree, _ := sdk.DecodeJSON(doc)
		_, got := c.Check(doc)
		if want := treeCheck(c, tree); (got == nil) != (want == nil) {
			t.Fatalf("%s: byte walk %v, tree walk %v", doc, got, want)
		}
	})
}

// The phrase prefilter never hides a match: every text the expression
// matches passes it, whatever the case (ASCII or Unicode folds such as the
// Kelvin sign for k), and it lets an ASCII text without the phrases skip
// the expression.
func TestPhrasePrefilterHidesNoMatch(t *testing.T) {
	c := New(&pb.Tripwires{ForbiddenPhrases: []string{"verified", "grade", "risk score", "ok"}})
	if c.folded == nil {
		t.Fatal("ASCII phrases: no prefilter")
	}
	for _, s := range []string{"verified", "VERIFIED", "Not Verified.", "a grade", "gRaDe", "risk score 3", "RISK SCORE",
		"o\u212a", "\u212aO", "ok", "x ok y", "v", "", "grad", "upgraded", "risk  score", "verifie", "é verified"} {
		if c.phrases.MatchString(s) && !c.mayHavePhrase(s) {
			t.Errorf("%q matches but the prefilter skipped it", s)
		}
	}
	for _, s := range []string{"", "plain words", "est:~12", "upgrad", "verifie d", "o k"} {
		if c.mayHavePhrase(s) {
			t.Errorf("%q: the prefilter let through an ASCII text without the phrases", s)
		}
	}
	if New(&pb.Tripwires{ForbiddenPhrases: []string{"vérifié", "ok"}}).folded != nil {
		t.Error("a phrase that is not ASCII: the prefilter must stand aside")
	}
}

func FuzzPhrasePrefilter(f *testing.F) {
	c := New(&pb.Tripwires{ForbiddenPhrases: []string{"verified", "grade", "risk score", "ok"}})
	for _, s := range []string{"verified", "o\u212a", "a GRADE b", "risk score"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c.phrases.MatchString(s) && !c.mayHavePhrase(s) {
			t.Fatalf("%q matches but the prefilter skipped it", s)
		}
	})
}
