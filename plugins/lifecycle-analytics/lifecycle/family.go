package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	settlementevidencecorpus "github.com/assay-audit/assay/corpus/settlement-evidence"
	settlementevidence "github.com/assay-audit/assay/criteria/settlement-evidence"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Family serves settlement-evidence/v1 through the SDK.
type Family struct {
	desc  *pb.FamilyDescription
	fixed sentences
}

type sentences struct {
	Disclosure string `json:"disclosure_sentence"`
	Honesty    string `json:"honesty_line"`
	Retention  string `json:"retention"`
	Reasons    string `json:"reasons_line"`
}

// New reads the embedded criteria document.
func New() (*Family, error) {
	doc := settlementevidence.Document
	desc, err := sdk.DescribeFromCriteria(doc)
	if err != nil {
		return nil, err
	}
	desc.Corpus = settlementevidencecorpus.JSON
	desc.RequestSchema = settlementevidence.RequestSchema
	var s sentences
	if err := json.Unmarshal(doc, &s); err != nil {
		return nil, fmt.Errorf("criteria sentences: %w", err)
	}
	notComputable := []string{sdk.NotComputable}
	desc.LedgerFields = []*pb.LedgerField{
		{Name: "verdict_line", Type: pb.LedgerField_STRING, Pattern: verdictPattern},
		{Name: "issued_count", Type: pb.LedgerField_NUMBER},
		{Name: "used_count", Type: pb.LedgerField_NUMBER, Vocabulary: notComputable},
		{Name: "expired_unused_count", Type: pb.LedgerField_NUMBER, Vocabulary: notComputable},
	}
	desc.Tripwires = &pb.Tripwires{
		AbsentTokens: notComputable,
		// no composite, grade or band; no inferred reason, cause or intent
		ForbiddenPhrases: []string{"score", "grade", "band", "because", "likely", "probably", "abandoned", "intended", "estimated"},
		ExemptSentences:  []string{s.Disclosure, s.Honesty, s.Retention, s.Reasons},
		ForbiddenMembers: []string{"score", "grade", "band", "composite", "challenge_id", "payer", "wallet", "customer", "buyer"},
	}
	return &Family{desc: desc, fixed: s}, nil
}

const verdictPattern = `CHALLENGE LIFECYCLE — issued: [0-9]+ · used: ([0-9]+|NOT-COMPUTABLE) · expired-unused: ([0-9]+|NOT-COMPUTABLE) · pending: ([0-9]+|NOT-COMPUTABLE) — [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z`

// Describe returns the family's description.
func (f *Family) Describe() *pb.FamilyDescription { return f.desc }

type lines struct {
	Submitted int `json:"submitted"`
	Valid     int `json:"valid"`
	Malformed int `json:"malformed"`
}

type precheckBody struct {
	Assessable bool   `json:"assessable"`
	Lines      lines  `json:"lines"`
	Disclosure string `json:"disclosure_sentence"`
	Honesty    string `json:"honesty_line"`
	Retention  string `json:"retention"`
}

// Check validates a request; on analyse it returns the measurement to run
// after payment, evaluated at as_of or the host's clock.
func (f *Family) Check(_ context.Context, req sdk.Request) sdk.Checked {
	log, ref := Parse(req.Body)
	if ref != nil {
		return sdk.RefuseRequest(*ref)
	}
	ls := lines{Submitted: log.Submitted, Valid: len(log.Valid), Malformed: log.Malformed()}
	if req.Route == sdk.Precheck {
		return sdk.Assessed(precheckBody{Assessable: true, Lines: ls,
			Disclosure: f.fixed.Disclosure, Honesty: f.fixed.Honesty, Retention: f.fixed.Retention})
	}
	t, fromAsOf := FromTime(req.Now.UTC().Truncate(time.Second)), false
	if log.HasAsOf {
		t, fromAsOf = log.AsOf, true
	}
	return sdk.Accept(func(ctx context.Context, clock func() time.Time) (sdk.Report, error) {
		a := Analyse(log, t, fromAsOf)
		return f.Render(a, clock()), nil
	})
}

func usageOrNot(computable bool, n int) any {
	if computable {
		return n
	}
	return sdk.NotStated{Token: sdk.NotComputable, Reason: ReasonUsage}
}

func census(c Census, usage bool) map[string]any {
	return map[string]any{
		"issued":         c.Issued,
		"used":           usageOrNot(usage, c.Used),
		"expired_unused": usageOrNot(usage, c.ExpiredUnused),
		"pending":        usageOrNot(usage, c.Pending),
	}
}

// Render builds the report and its ledger fields.
func (f *Family) Render(a *Analysis, checkEnd time.Time) sdk.Report {
	source := "server_clock"
	if a.FromAsOf {
		source = "as_of"
	}
	buckets := map[string]any{}
	for i, name := range Buckets {
		buckets[name] = a.Buckets[i]
	}
	var perRail any = sdk.NotStated{Token: sdk.NotComputable, Reason: ReasonRail}
	if a.RailComputable {
		groups := make([]map[string]any, 0, len(a.Groups))
		for _, g := range a.Groups {
			row := census(g.Census, a.UsageComputable)
			row["first_line"] = g.FirstLine
			groups = append(groups, row)
		}
		perRail = map[string]any{"groups": groups, "rail_absent_lines": a.RailAbsent}
	}
	count := func(n int) string {
		if a.UsageComputable {
			return strconv.Itoa(n)
		}
		return sdk.NotComputable
	}
	verdict := fmt.Sprintf("CHALLENGE LIFECYCLE — issued: %d · used: %s · expired-unused: %s · pending: %s — %s",
		a.Census.Issued, count(a.Census.Used), count(a.Census.ExpiredUnused), count(a.Census.Pending), a.T)
	body := map[string]any{
		"evaluation_instant":        a.T.String(),
		"evaluation_instant_source": source,
		"lines":                     lines{Submitted: a.Submitted, Valid: a.Valid, Malformed: a.Malformed},
		"census":                    census(a.Census, a.UsageComputable),
		"expiry_windows":            buckets,
		"per_rail":                  perRail,
		"factors": map[string]any{
			"malformed_lines":            a.Malformed,
			"expiry_window_min_seconds":  Seconds(a.Min),
			"expiry_window_max_seconds":  Seconds(a.Max),
			"expiry_window_mean_seconds": a.Mean(),
		},
		"reasons_line":        f.fixed.Reasons,
		"honesty_line":        f.fixed.Honesty,
		"disclosure_sentence": f.fixed.Disclosure,
		"verdict_line":        verdict,
	}
	ledgerCount := func(n int) any {
		if a.UsageComputable {
			return n
		}
		return sdk.NotComputable
	}
	return sdk.Report{
		Body: body,
		Ledger: map[string]any{
			"verdict_line":         verdict,
			"issued_count":         a.Census.Issued,
			"used_count":           ledgerCount(a.Census.Used),
			"expired_unused_count": ledgerCount(a.Census.ExpiredUnused),
		},
		CheckEnd: checkEnd,
	}
}
