package selfcheck

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func decode(t *testing.T, s string) any {
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
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
		err := c.Check(decode(t, k.answer))
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
	if err := c.Check(decode(t, `{"groups":[{"rail":"grade-a","n":1}]}`)); err != nil {
		t.Errorf("a label in an exempt member tripped: %v", err)
	}
	if err := c.Check(decode(t, `{"note":"grade-a"}`)); err == nil {
		t.Error("the same words elsewhere must trip")
	}
	if err := c.Check(decode(t, `{"rail":{"score":1}}`)); err == nil {
		t.Error("an exempt member does not exempt member names")
	}
}

func TestTypographyAndLimited(t *testing.T) {
	c := New(&pb.Tripwires{
		AbsentTokens:     []string{"NOT-ASSESSABLE"},
		CountNames:       []string{"characters"},
		CountSuffixes:    []string{"_count"},
		EstimateNames:    []string{"tokens", "share"},
		EstimateSuffixes: []string{"_tokens"},
		Limited: &pb.LimitedRule{Line: "measurement_line", Factors: "factors", IdMember: "id", StatusMember: "status",
			ExemptIds: []string{"F-11"}, LimitedWord: "LIMITED", FullWord: "FULL"},
	})
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
		{"full line, all assessable", `{"measurement_line":"X · FULL — t","factors":[` + ok + `,` + byDesign + `]}`, true},
		{"limited line with an absent factor", `{"measurement_line":"X · LIMITED — t","factors":[` + ok + `,` + na + `]}`, true},
		{"absent factor, line says FULL", `{"measurement_line":"X · FULL — t","factors":[` + na + `]}`, false},
		{"no absent factor, line says LIMITED", `{"measurement_line":"X · LIMITED — t","factors":[` + ok + `]}`, false},
		{"F-11 alone never limits", `{"measurement_line":"X · LIMITED — t","factors":[` + byDesign + `]}`, false},
		{"absent factor without reason", `{"measurement_line":"X · LIMITED — t","factors":[{"id":"F-5","status":"NOT-ASSESSABLE"}]}`, false},
		{"absent factor beside a number", `{"measurement_line":"X · LIMITED — t","factors":[{"id":"F-5","status":"NOT-ASSESSABLE","reason":"r","n":0}]}`, false},
		{"no line: not a report", `{"factors":[` + na + `]}`, true},
	}
	for _, k := range cases {
		err := c.Check(decode(t, k.answer))
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
