package hostcheck_test

import (
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/hostcheck"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

const criteria = `{"criteria_id":"json-keys/v1","criteria_revision":"1.0.0","service":"json-keys","version":"1.0.0","op":"list",
"price":{"usdc_units_per_call":1000,"label":"$0.001","basis":"per report"},"corpus":{"id":"json-keys-corpus/v1","sha256":""},
"input_contract":{"caps":{"body_bytes":65536}}}`

// describe is a description a host loads, its tripwires waiving as given.
func describe(t *testing.T, waivers ...*pb.VerdictWaiver) *pb.FamilyDescription {
	t.Helper()
	d, err := sdk.Describe([]byte(criteria), sdk.WithTripwires(sdk.Tripwires{ForbiddenPhrases: []string{"grade"}}))
	if err != nil {
		t.Fatal(err)
	}
	d.Tripwires.VerdictWaivers = waivers
	return d
}

// A waiver of a baseline verdict word with a reason loads; one of a word
// the baseline does not hold, or without a reason, is refused, the
// problem naming the word.
func TestTheHostRefusesAWaiverItCannotHonour(t *testing.T) {
	if p := hostcheck.Description(describe(t)); len(p) != 0 {
		t.Fatalf("the description without waivers: %q", p)
	}
	if p := hostcheck.Description(describe(t, &pb.VerdictWaiver{Word: "pass", Reason: "the criteria print the log's own status pass as written"})); len(p) != 0 {
		t.Errorf("a waiver of a baseline word, with a reason: %q", p)
	}
	cases := []struct {
		name   string
		waiver *pb.VerdictWaiver
		says   []string
	}{
		{"a word not on the baseline", &pb.VerdictWaiver{Word: "goodness", Reason: "r"}, []string{`"goodness"`, "not a word of the host's baseline"}},
		{"a baseline word spelt otherwise", &pb.VerdictWaiver{Word: "PASS", Reason: "r"}, []string{`"PASS"`, "not a word of the host's baseline"}},
		{"a phrase of the family's own list", &pb.VerdictWaiver{Word: "grade ", Reason: "r"}, []string{`"grade "`, "not a word of the host's baseline"}},
		{"no word", &pb.VerdictWaiver{Reason: "r"}, []string{`""`}},
		{"an empty reason", &pb.VerdictWaiver{Word: "good"}, []string{`"good"`, "no reason"}},
		{"a blank reason", &pb.VerdictWaiver{Word: "safe", Reason: "  "}, []string{`"safe"`, "no reason"}},
	}
	for _, k := range cases {
		p := hostcheck.Description(describe(t, k.waiver))
		if len(p) != 1 {
			t.Errorf("%s: problems %q, want one", k.name, p)
			continue
		}
		for _, s := range k.says {
			if !strings.Contains(p[0], s) {
				t.Errorf("%s: %q does not say %s", k.name, p[0], s)
			}
		}
	}
}

// An author's WithTripwires carries the waivers to the description the
// host checks, and refuses at Describe a waiver without a reason.
func TestWithTripwiresCarriesTheWaivers(t *testing.T) {
	w := sdk.VerdictWaiver{Word: "failed", Reason: "the criteria count the log's failed events as the log names them"}
	d, err := sdk.Describe([]byte(criteria), sdk.WithTripwires(sdk.Tripwires{VerdictWaivers: []sdk.VerdictWaiver{w}}))
	if err != nil {
		t.Fatal(err)
	}
	got := d.GetTripwires().GetVerdictWaivers()
	if len(got) != 1 || got[0].GetWord() != w.Word || got[0].GetReason() != w.Reason {
		t.Fatalf("the description's waivers: %v", got)
	}
	if p := hostcheck.Description(d); len(p) != 0 {
		t.Errorf("problems: %q", p)
	}
	for _, bad := range []sdk.VerdictWaiver{{Word: "failed"}, {Word: "failed", Reason: " "}, {Reason: "r"}} {
		if _, err := sdk.Describe([]byte(criteria), sdk.WithTripwires(sdk.Tripwires{VerdictWaivers: []sdk.VerdictWaiver{bad}})); err == nil {
			t.Errorf("%+v: Describe took a waiver without a word or a reason", bad)
		}
	}
	d, err = sdk.Describe([]byte(criteria), sdk.WithTripwires(sdk.Tripwires{VerdictWaivers: []sdk.VerdictWaiver{{Word: "goodness", Reason: "r"}}}))
	if err != nil {
		t.Fatal(err) // Describe cannot see the host's baseline: the host's check refuses it
	}
	if p := hostcheck.Description(d); len(p) != 1 || !strings.Contains(p[0], `"goodness"`) {
		t.Errorf("a waiver of a word not on the baseline: %q", p)
	}
}
