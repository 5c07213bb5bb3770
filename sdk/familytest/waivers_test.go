package familytest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

const annexTop = "# ANNEX\n\n## A-1 Shapes\n\nText.\n\n"

func TestAnnexWaivers(t *testing.T) {
	cases := []struct {
		name, section string
		want          []sdk.VerdictWaiver
		err           string
	}{
		{"none", WaiversHeading + "\n\nThe family waives none.\n\nNone.\n", nil, ""},
		{"a table", WaiversHeading + "\n\nIntro.\n\n| word | reason |\n|---|---|\n| `failed` | The log's own status, counted as written. |\n| pass | A caller's label \\| printed. |\n\nAfter.\n",
			[]sdk.VerdictWaiver{{Word: "failed", Reason: "The log's own status, counted as written."}, {Word: "pass", Reason: "A caller's label | printed."}}, ""},
		{"a section then another", WaiversHeading + "\n\nNone.\n\n## A-9 Later\n\n| word | reason |\n|---|---|\n| good | r |\n", nil, ""},
		{"no section", "## Verdict words\n\nNone.\n", nil, "no section"},
		{"twice", WaiversHeading + "\n\nNone.\n\n" + WaiversHeading + "\n\nNone.\n", nil, "2 times"},
		{"empty", WaiversHeading + "\n\n", nil, "neither"},
		{"both", WaiversHeading + "\n\nNone.\n\n| word | reason |\n|---|---|\n| good | r |\n", nil, "both"},
		{"another header", WaiversHeading + "\n\n| word | why |\n|---|---|\n| good | r |\n", nil, "header"},
		{"no separator", WaiversHeading + "\n\n| word | reason |\n| good | r |\n", nil, "| --- | --- |"},
		{"no row", WaiversHeading + "\n\n| word | reason |\n|---|---|\n", nil, "no row"},
		{"a row of three", WaiversHeading + "\n\n| word | reason |\n|---|---|\n| good | r | x |\n", nil, "row 1"},
		{"no reason", WaiversHeading + "\n\n| word | reason |\n|---|---|\n| good |  |\n", nil, "row 1"},
		{"a word twice", WaiversHeading + "\n\n| word | reason |\n|---|---|\n| good | r |\n| `good` | s |\n", nil, "row 2"},
		{"two tables", WaiversHeading + "\n\n| word | reason |\n|---|---|\n| good | r |\n\n| word | reason |\n|---|---|\n| bad | r |\n", nil, "second table"},
	}
	for _, k := range cases {
		got, err := AnnexWaivers([]byte(annexTop + k.section))
		switch {
		case k.err != "" && (err == nil || !strings.Contains(err.Error(), k.err)):
			t.Errorf("%s: err = %v, want one saying %q", k.name, err, k.err)
		case k.err == "" && err != nil:
			t.Errorf("%s: %v", k.name, err)
		case k.err == "" && fmt.Sprint(got) != fmt.Sprint(k.want):
			t.Errorf("%s: %q, want %q", k.name, got, k.want)
		}
	}
}

// stated runs WaiversStated as a test would, and returns what it reported
// (a Fatal as the last report).
func stated(t *testing.T, d *pb.FamilyDescription, annex []byte) []string {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaiversStated(rec, d, annex)
	}()
	<-done
	if rec.fatal != "" {
		return append(rec.errors, rec.fatal)
	}
	return rec.errors
}

func TestWaiversStated(t *testing.T) {
	annex := []byte(annexTop + WaiversHeading + "\n\n| word | reason |\n|---|---|\n| `failed` | The log's own status. |\n| pass | A label. |\n")
	desc := func(ws ...*pb.VerdictWaiver) *pb.FamilyDescription {
		return &pb.FamilyDescription{Tripwires: &pb.Tripwires{VerdictWaivers: ws}}
	}
	cases := []struct {
		name string
		d    *pb.FamilyDescription
		errs []string // what each report names, in order
	}{
		{"the same, in another order", desc(&pb.VerdictWaiver{Word: "pass", Reason: "A label."}, &pb.VerdictWaiver{Word: "failed", Reason: "The log's own status."}), nil},
		{"one missing", desc(&pb.VerdictWaiver{Word: "pass", Reason: "A label."}), []string{`"failed" that the family's tripwires do not declare`}},
		{"no tripwires", &pb.FamilyDescription{}, []string{`"failed"`, `"pass"`}},
		{"one more", desc(&pb.VerdictWaiver{Word: "pass", Reason: "A label."}, &pb.VerdictWaiver{Word: "failed", Reason: "The log's own status."},
			&pb.VerdictWaiver{Word: "good", Reason: "r"}, &pb.VerdictWaiver{Word: "bad", Reason: "r"}), []string{`"bad", which its ANNEX`, `"good", which its ANNEX`}},
		{"another reason", desc(&pb.VerdictWaiver{Word: "pass", Reason: "A label"}, &pb.VerdictWaiver{Word: "failed", Reason: "The log's own status."}), []string{`"pass": the family's reason is "A label"`}},
		{"twice", desc(&pb.VerdictWaiver{Word: "pass", Reason: "A label."}, &pb.VerdictWaiver{Word: "failed", Reason: "The log's own status."},
			&pb.VerdictWaiver{Word: "pass", Reason: "A label."}), []string{`waives "pass" again`}},
	}
	for _, k := range cases {
		errs := stated(t, k.d, annex)
		if len(errs) != len(k.errs) {
			t.Errorf("%s: reported %q, want %d reports", k.name, errs, len(k.errs))
			continue
		}
		for i, e := range errs {
			if !strings.Contains(e, k.errs[i]) {
				t.Errorf("%s: report %q does not say %s", k.name, e, k.errs[i])
			}
		}
	}
	if errs := stated(t, desc(), []byte(annexTop)); len(errs) != 1 || !strings.Contains(errs[0], "no section") {
		t.Errorf("an ANNEX without the section: %q", errs)
	}
}

// noted is the keys family whose pre-check says a baseline verdict word
// its own tripwires do not list.
type noted struct{ *keys }

const goodNote = "every key has a good name"

func (n noted) Check(ctx context.Context, req sdk.Request) sdk.Checked {
	if req.Route == sdk.Precheck {
		return sdk.Assessed(map[string]any{"assessable": true, "note": goodNote})
	}
	return n.keys.Check(ctx, req)
}

// RunCorpus applies the host's baseline of verdict words as a host does:
// a pre-check saying "good" is withheld, unless the family waives the
// word.
func TestRunCorpusAppliesTheBaseline(t *testing.T) {
	precheck := map[string]any{"name": "precheck", "request": map[string]any{"method": "POST", "path": "/json-keys/precheck", "body": map[string]any{"a": 1}},
		"expect": map[string]any{"status": 200, "answer": with(common("precheck", "precheck"), "assessable", true, "note", goodNote)}}

	f := noted{&keys{desc: describe()}}
	rec, res := run(t, f, corpusOf(t, f.desc, precheck))
	if res.Passed != 0 || len(rec.errors) == 0 || !strings.Contains(rec.errors[0], "forbidden wording") {
		t.Errorf("a pre-check saying good: passed %d, errors %q", res.Passed, rec.errors)
	}

	f.desc.Tripwires.VerdictWaivers = []*pb.VerdictWaiver{{Word: "good", Reason: "the criteria print this note as written"}}
	rec, res = run(t, f, corpusOf(t, f.desc, precheck))
	if rec.fatal != "" || len(rec.errors) != 0 || res.Passed != 1 {
		t.Errorf("good waived: fatal %q, errors %q, passed %d", rec.fatal, rec.errors, res.Passed)
	}

	f.desc.Tripwires.VerdictWaivers = []*pb.VerdictWaiver{{Word: "good"}}
	if rec, _ = run(t, f, corpusOf(t, f.desc, precheck)); !strings.Contains(rec.fatal, "a host refuses this description") || !strings.Contains(rec.fatal, `"good"`) {
		t.Errorf("a waiver without a reason: fatal %q", rec.fatal)
	}
}
