package divergence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	streamdivergencecorpus "github.com/assay-audit/assay/corpus/stream-divergence"
	streamdivergence "github.com/assay-audit/assay/criteria/stream-divergence"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Family serves stream-divergence/v1 through the SDK.
type Family struct {
	desc  *pb.FamilyDescription
	fixed fixedSentences
}

type fixedSentences struct {
	ScopeText   string `json:"scope_text"`
	NoLiveLine  string `json:"no_live_line"`
	HonestyLine string `json:"honesty_line"`
}

// New reads the embedded criteria document.
func New() (*Family, error) {
	doc := streamdivergence.Document
	desc, err := sdk.DescribeFromCriteria(doc)
	if err != nil {
		return nil, err
	}
	desc.Corpus = streamdivergencecorpus.JSON
	desc.RequestSchema = streamdivergence.RequestSchema
	var fixed fixedSentences
	if err := json.Unmarshal(doc, &fixed); err != nil {
		return nil, fmt.Errorf("criteria sentences: %w", err)
	}
	desc.LedgerFields = []*pb.LedgerField{
		{Name: "op", Type: pb.LedgerField_STRING, Vocabulary: []string{"compare"}},
		{Name: "verdict_line", Type: pb.LedgerField_STRING, Pattern: ledgerLinePattern},
		{Name: "byte_equal", Type: pb.LedgerField_BOOL},
	}
	desc.Tripwires = &pb.Tripwires{
		// The wording fence and the forbidden list: no verified/integrity/
		// reliable claim, no correct or winning artefact, no score or grade.
		ForbiddenPhrases: []string{"verified", "verify", "integrity", "reliable", "correct", "authoritative", "winner", "score", "grade", "band"},
		ExemptSentences:  []string{fixed.ScopeText, fixed.NoLiveLine, fixed.HonestyLine},
		ForbiddenMembers: []string{"score", "grade", "band", "composite", "correct", "winner", "rating"},
	}
	return &Family{desc: desc, fixed: fixed}, nil
}

// ledgerLinePattern is the stored verdict line: the offset never appears
// (ANNEX A-8).
const ledgerLinePattern = `STREAM-CAPTURE DIVERGENCE — byte-equal: (YES|NO) · streamed chunks: [0-9]+ · reference chunks: [0-9]+ · first divergence: (OFFSET|NONE) · differing spans: [0-9]+ — [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z`

// Describe returns the family's description.
func (f *Family) Describe() *pb.FamilyDescription { return f.desc }

type side struct {
	ChunkCount int `json:"chunk_count"`
	ByteLength int `json:"byte_length"`
}

func sideOf(a Artefact) side { return side{ChunkCount: a.ChunkCount, ByteLength: len(a.Bytes)} }

type precheckBody struct {
	Assessable bool `json:"assessable"`
	Streamed   side `json:"streamed_capture"`
	Reference  side `json:"reference_output"`
}

// Check validates a request; on compare it returns the measurement to run
// after payment.
func (f *Family) Check(_ context.Context, req sdk.Request) sdk.Checked {
	sub, ref := Parse(req.Body)
	if ref != nil {
		return sdk.RefuseRequest(*ref)
	}
	if req.Route == sdk.Precheck {
		return sdk.Assessed(precheckBody{Assessable: true, Streamed: sideOf(sub.Streamed), Reference: sideOf(sub.Reference)})
	}
	return sdk.Accept(func(ctx context.Context, clock func() time.Time) (sdk.Report, error) {
		res := Compare(sub.Streamed.Bytes, sub.Reference.Bytes)
		return f.Render(sub, res, clock()), nil
	})
}

type firstDivergence struct {
	State  string `json:"state"`
	Offset *int   `json:"offset,omitempty"`
}

type reportBody struct {
	ByteEqual       bool            `json:"byte_equal"`
	Streamed        side            `json:"streamed_capture"`
	Reference       side            `json:"reference_output"`
	FirstDivergence firstDivergence `json:"first_divergence"`
	DifferingSpans  []Span          `json:"differing_spans"`
	fixedSentences
	VerdictLine string `json:"verdict_line"`
}

// Render builds the report and its ledger fields for a check that ended at
// checkEnd.
func (f *Family) Render(sub *Submission, res Result, checkEnd time.Time) sdk.Report {
	at := sdk.Instant(checkEnd)
	body := reportBody{
		ByteEqual:       res.ByteEqual,
		Streamed:        sideOf(sub.Streamed),
		Reference:       sideOf(sub.Reference),
		FirstDivergence: firstDivergence{State: "NONE"},
		DifferingSpans:  res.Spans,
		fixedSentences:  f.fixed,
	}
	first, stored := "NONE", "NONE"
	if !res.ByteEqual {
		off := res.FirstDivergence
		body.FirstDivergence = firstDivergence{State: "OFFSET", Offset: &off}
		first, stored = fmt.Sprint(off), "OFFSET"
	}
	body.VerdictLine = verdictLine(res.ByteEqual, sub, first, len(res.Spans), at)
	return sdk.Report{
		Body: body,
		Ledger: map[string]any{
			"op":           "compare",
			"verdict_line": verdictLine(res.ByteEqual, sub, stored, len(res.Spans), at),
			"byte_equal":   res.ByteEqual,
		},
		CheckEnd: checkEnd,
	}
}

func verdictLine(equal bool, sub *Submission, first string, spans int, at string) string {
	yes := "NO"
	if equal {
		yes = "YES"
	}
	return fmt.Sprintf("STREAM-CAPTURE DIVERGENCE — byte-equal: %s · streamed chunks: %d · reference chunks: %d · first divergence: %s · differing spans: %d — %s",
		yes, sub.Streamed.ChunkCount, sub.Reference.ChunkCount, first, spans, at)
}
