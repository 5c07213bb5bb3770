package sdk

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Each constructor crosses the wire as the host expects: the outcome, the
// code, the body's canonical JSON, the caller.
func TestConstructorsCrossTheWire(t *testing.T) {
	for _, c := range []struct {
		name    string
		checked Checked
		route   Route
		outcome pb.Outcome
		code    string
		body    string
	}{
		{"refusal", RefuseRequest(Refusal{Code: "body_not_object", Message: "m", Facts: map[string]any{"cap": 3}}), Op, pb.Outcome_REFUSED,
			"body_not_object", `{"error":{"cap":3,"code":"body_not_object","message":"m"}}`},
		{"a refusal of the family's shape", RefuseWith("x_refused", map[string]any{"error": map[string]any{"code": "x_refused"}, "hint": 1}), Precheck,
			pb.Outcome_REFUSED, "x_refused", `{"error":{"code":"x_refused"},"hint":1}`},
		{"could not measure", CannotMeasure("too_many", map[string]any{"could_not_measure": map[string]any{"kind": "too_many"}}), Op,
			pb.Outcome_COULD_NOT_MEASURE, "too_many", `{"could_not_measure":{"kind":"too_many"}}`},
		{"pre-check", Assessed(map[string]any{"assessable": true}).WithCaller("w"), Precheck, pb.Outcome_ACCEPTED, "", `{"assessable":true}`},
		{"op", Accept(func(context.Context, func() time.Time) (Report, error) { return Report{}, nil }), Op, pb.Outcome_ACCEPTED, "", ""},
	} {
		v, err := validatedOf(c.checked, c.route)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if v.GetOutcome() != c.outcome || v.GetCode() != c.code || string(v.GetBody()) != c.body {
			t.Errorf("%s: %v %q %s", c.name, v.GetOutcome(), v.GetCode(), v.GetBody())
		}
		if c.name == "pre-check" && (v.GetCaller() != "w" || !v.GetHasCaller()) {
			t.Errorf("the caller: %q %v", v.GetCaller(), v.GetHasCaller())
		}
	}
}

// No answer, and an answer of the other route, are described errors, never
// a silent wrong answer; AdaptersUnavailable is its own outcome.
func TestAnswersThatCannotBeSent(t *testing.T) {
	accept := Accept(func(context.Context, func() time.Time) (Report, error) { return Report{}, nil })
	for _, c := range []struct {
		checked Checked
		route   Route
		says    string
	}{
		{Checked{}, Op, "answered nothing"},
		{accept, Precheck, "answered a pre-check with sdk.Accept"},
		{Assessed(map[string]any{}), Op, "answered an op with sdk.Assessed"},
		{Accept(nil), Op, "answered an op with sdk.Assessed"},
	} {
		if _, err := validatedOf(c.checked, c.route); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v on route %d: %v", c.checked, c.route, err)
		}
	}
	if u := AdaptersUnavailable(); !u.Unavailable() || u.Outcome() != 0 {
		t.Error("AdaptersUnavailable")
	}
	if _, err := Assessed(nil).Measure(context.Background(), time.Now); err != ErrNotMeasurable {
		t.Errorf("measuring a pre-check: %v", err)
	}
}

// Borrowed.Copy does not alias the host's pages.
func TestBorrowedCopy(t *testing.T) {
	b := Borrowed(`{"a":1}`)
	c := b.Copy()
	b[2] = 'z'
	if string(c) != `{"a":1}` {
		t.Errorf("the copy changed with the body: %s", c)
	}
}

const testCriteria = `{"criteria_id":"json-keys/v1","criteria_revision":"1.0.0","service":"json-keys","version":"1.0.0","op":"list",
"corpus":{"id":"c","sha256":"` + "0000000000000000000000000000000000000000000000000000000000000000" + `"},
"accepted_formats":["example-lines"],"input_contract":{"caps":{"body_bytes":64}}}`

// Describe reads the criteria (accepted_formats included) and applies
// each option; one that cannot hold is an error naming it.
func TestDescribeOptions(t *testing.T) {
	d, err := Describe([]byte(testCriteria), WithCorpus([]byte(`{}`)), WithRequestSchema([]byte(`{"type":"object"}`)),
		WithLedgerFields(LedgerString("format", "example-lines"), LedgerNumber("keys", "NOT-COMPUTABLE").OrNull(), LedgerPattern("id", `[a-z]+`), LedgerBool("ok")),
		WithTripwires(Tripwires{ForbiddenMembers: []string{"score"}, ExemptMembers: []string{"keys"}, Limited: &LimitedRule{Line: "line", LimitedWord: "LIMITED"}}))
	if err != nil {
		t.Fatal(err)
	}
	if d.GetService() != "json-keys" || d.GetBodyBytes() != 64 || len(d.GetFormats()) != 1 || d.GetFormats()[0] != "example-lines" ||
		string(d.GetCorpus()) != `{}` || string(d.GetRequestSchema()) != `{"type":"object"}` {
		t.Errorf("description %v", d)
	}
	lf := d.GetLedgerFields()
	if len(lf) != 4 || lf[0].GetType() != pb.LedgerField_STRING || lf[0].GetVocabulary()[0] != "example-lines" ||
		lf[1].GetType() != pb.LedgerField_NUMBER || !lf[1].GetNullable() || lf[2].GetPattern() != `[a-z]+` || lf[3].GetType() != pb.LedgerField_BOOL {
		t.Errorf("ledger fields %v", lf)
	}
	if tw := d.GetTripwires(); tw.GetForbiddenMembers()[0] != "score" || tw.GetExemptMembers()[0] != "keys" || tw.GetLimited().GetLimitedWord() != "LIMITED" {
		t.Errorf("tripwires %v", tw)
	}
	for _, bad := range []DescribeOption{
		WithLedgerFields(LedgerPattern("id", `[`)),
		WithLedgerFields(LedgerBool("a"), LedgerBool("a")),
		WithLedgerFields(LedgerField{Name: "untyped"}),
		WithRequestSchema([]byte(`[1]`)),
		WithCorpus(nil),
	} {
		if _, err := Describe([]byte(testCriteria), bad); err == nil || !strings.HasPrefix(err.Error(), "describe: ") {
			t.Errorf("an option that cannot hold: %v", err)
		}
	}
}
