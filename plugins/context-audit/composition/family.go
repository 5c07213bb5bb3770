package composition

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	contextcompositioncorpus "github.com/assay-audit/assay/corpus/context-composition"
	contextcomposition "github.com/assay-audit/assay/criteria/context-composition"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Could-not-measure kinds (ANNEX C-2).
const (
	KindTooManyEntries sdk.CannotMeasureKind = "too_many_entries"
	KindEntryTooLarge  sdk.CannotMeasureKind = "entry_too_large"
	KindZeroEntries    sdk.CannotMeasureKind = "zero_entries"
	KindNothing        sdk.CannotMeasureKind = "nothing_assessable"
)

var kindMessages = map[sdk.CannotMeasureKind]string{
	KindTooManyEntries: "the record has more entries than the published cap",
	KindEntryTooLarge:  "an entry's adapted text exceeds the published cap",
	KindZeroEntries:    "the record has no entries",
	KindNothing:        "no entry carries a textual payload",
}

// Family serves context-composition/v1 through the SDK.
type Family struct {
	desc     *pb.FamilyDescription
	accepted []string
	levels   map[string]string
	never    []string
	price    string
	scope    string
	label    string
	f9       string
	criteria string
	lists    *ClassLists
}

type document struct {
	Accepted []string          `json:"accepted_formats"`
	Levels   map[string]string `json:"format_levels"`
	Never    []string          `json:"never_assessable"`
	ID       string            `json:"criteria_id"`
	Scope    string            `json:"scope_block"`
	F9       string            `json:"f9_line"`
	Method   struct {
		Labelling string `json:"labelling"`
	} `json:"estimation_method"`
	Price struct {
		Label string `json:"label"`
		Basis string `json:"basis"`
	} `json:"price"`
}

// New reads the embedded criteria document.
func New() (*Family, error) {
	raw := contextcomposition.Document
	desc, err := sdk.DescribeFromCriteria(raw)
	if err != nil {
		return nil, err
	}
	desc.Corpus = contextcompositioncorpus.JSON
	desc.RequestSchema = contextcomposition.RequestSchema
	// the record's shapes are its adapters': the host publishes each
	// accepted format's in place of request.schema.json's "record"
	desc.FormatMember, desc.RecordMember = "declared_format_id", "record"
	var d document
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("criteria: %w", err)
	}
	lists, err := ParseClassLists(contextcomposition.ClassLists)
	if err != nil {
		return nil, err
	}
	desc.Formats = d.Accepted
	desc.LedgerFields = []*pb.LedgerField{
		{Name: "op", Type: pb.LedgerField_STRING, Vocabulary: []string{"audit"}},
		{Name: "measurement_line", Type: pb.LedgerField_STRING, Pattern: linePattern(d.Accepted)},
		{Name: "declared_format_id", Type: pb.LedgerField_STRING, Vocabulary: d.Accepted},
		{Name: "entry_count", Type: pb.LedgerField_NUMBER},
		{Name: "record_bytes", Type: pb.LedgerField_NUMBER},
		{Name: "outcome", Type: pb.LedgerField_STRING, Vocabulary: []string{"measured_full", "measured_limited"}},
	}
	exempt := append(append([]string{d.Scope, d.Method.Labelling, d.F9}, d.Never...), fixedSentences...)
	desc.Tripwires = &pb.Tripwires{
		AbsentTokens:     []string{sdk.NotAssessable},
		ForbiddenPhrases: []string{"score", "grade", "quality", "recall degraded", "better", "worse", "good", "bad", "healthy", "rotten", "certified", "degraded", "improved", "pass", "fail"},
		ExemptSentences:  exempt,
		ForbiddenMembers: []string{"score", "grade", "composite", "verdict", "text", "content", "fetched_at"},
		// P-OTHER raw values are printed because the criteria require it
		ExemptMembers:    []string{"raw_values"},
		CountNames:       []string{"characters", "bytes"},
		CountSuffixes:    []string{"_count", "_bytes"},
		EstimateNames:    []string{"tokens", "share", "depth"},
		EstimateSuffixes: []string{"_tokens", "_share"},
		Limited: &pb.LimitedRule{Line: "measurement_line", Factors: "factors", IdMember: "id", StatusMember: "status",
			ExemptIds: []string{"F-11"}, LimitedWord: "· LIMITED —", FullWord: "· FULL —"},
	}
	return &Family{desc: desc, accepted: d.Accepted, levels: d.Levels, never: d.Never,
		price: d.Price.Label + " " + d.Price.Basis, scope: d.Scope, label: d.Method.Labelling, f9: d.F9, criteria: d.ID, lists: lists}, nil
}

// linePattern is the measurement line's grammar (ANNEX C-13): the ledger
// keeps the line only when it is this shape, so it can hold no content.
func linePattern(formats []string) string {
	ids := make([]string, len(formats))
	for i, f := range formats {
		ids[i] = regexp.QuoteMeta(f)
	}
	return `CONTEXT COMPOSITION — format: (` + strings.Join(ids, "|") + `) \((L0|L1|L2)\) · messages: [0-9]+ · blocks: [0-9]+ · total: est:~[0-9]+ · unknown blocks: [0-9]+ · (FULL|LIMITED) — [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z`
}

// Describe returns the family's description.
func (f *Family) Describe() *pb.FamilyDescription { return f.desc }

func couldNot(kind sdk.CannotMeasureKind, facts map[string]any) sdk.Checked {
	inner := map[string]any{"kind": kind, "message": kindMessages[kind]}
	for k, v := range facts {
		inner[k] = v
	}
	return sdk.CannotMeasure(kind, map[string]any{"could_not_measure": inner})
}

// Check validates a submission: envelope, format (through the host's
// adapter), caps and the could-not-measure kinds; on the pre-check it
// answers the pre-check (ANNEX C-6, C-10).
func (f *Family) Check(ctx context.Context, req sdk.Request) sdk.Checked {
	env, ref := ParseEnvelope(req.Body, f.accepted)
	if ref != nil && ref.Code != CodeStatedCounts {
		return sdk.RefuseRequest(*ref)
	}
	// the stated-counts rule comes after R-4, whose "ambiguous" half only
	// the adapter can see (an agent file with several agents)
	statedRefusal := ref
	if req.Adapters == nil {
		return sdk.AdaptersUnavailable() // a host that offers no adapters
	}
	// the record goes by span: the host already holds the body
	resp, err := req.Adapters.Adapt(ctx, &pb.AdaptRequest{FormatId: env.FormatID, RecordSpan: env.RecordSpan})
	if err != nil {
		// no adapter reachable: the measurement cannot start (503 upstream)
		return sdk.AdaptersUnavailable()
	}
	if r := resp.GetRefusal(); (r == nil || sdk.RefusalCode(r.GetCode()) != CodeRecordRequired) && statedRefusal != nil {
		return sdk.RefuseRequest(*statedRefusal)
	}
	if r := resp.GetRefusal(); r != nil {
		code := sdk.RefusalCode(r.GetCode())
		msg := "the record does not parse as the declared format"
		if code == CodeRecordRequired {
			msg = messages[CodeRecordRequired]
		} else if code != CodeFormat {
			code = sdk.RecordDoesNotParse
		}
		return sdk.RefuseRequest(sdk.Refusal{Code: code, Message: msg})
	}
	rec := resp.GetRecord()
	// the caps are read from the adapted record before anything is
	// measured; classification then runs once and serves the pre-check,
	// the could-not-measure kinds that need sizes, and the report
	entries, oversize := 0, -1
	for _, msg := range rec.GetMessages() {
		for _, b := range msg.GetBlocks() {
			if oversize < 0 && len(b.GetText()) > EntryBytesCap {
				oversize = entries
			}
			entries++
		}
	}
	var kind sdk.CannotMeasureKind
	var facts map[string]any
	switch {
	case entries > EntriesCap:
		kind, facts = KindTooManyEntries, map[string]any{"cap": EntriesCap, "entries": entries}
	case oversize >= 0:
		kind, facts = KindEntryTooLarge, map[string]any{"cap": EntryBytesCap, "entry_index": oversize}
	case entries == 0:
		kind = KindZeroEntries
	}
	if kind != "" && req.Route != sdk.Precheck {
		return couldNot(kind, facts) // nothing more is needed to answer it
	}
	c := Classify(f.lists, env.FormatID, rec)
	if kind == "" && c.T == 0 {
		kind = KindNothing
	}
	if req.Route == sdk.Precheck {
		// the pre-check discloses the kind (200); the paid route answers it (422)
		st := ReadStated(env.StatedCounts, c, rec.GetStatedTotal(), rec.GetHasStatedTotal())
		return sdk.Assessed(f.precheck(env, rec, c, st, kind, facts))
	}
	if kind != "" {
		return couldNot(kind, facts)
	}
	return sdk.Accept(func(ctx context.Context, clock func() time.Time) (sdk.Report, error) {
		return f.Report(ctx, env, rec, c, clock)
	})
}

// Report measures an accepted submission (ANNEX C-13); clock gives the
// check-end instant once the figures are computed. It fails only when ctx
// ends first.
func (f *Family) Report(ctx context.Context, env *Envelope, rec *pb.SessionRecord, c *Classified, clock func() time.Time) (sdk.Report, error) {
	st := ReadStated(env.StatedCounts, c, rec.GetStatedTotal(), rec.GetHasStatedTotal())
	checkEnd := clock()
	ms, err := Measure(ctx, c, st, checkEnd, f.f9)
	if err != nil {
		return sdk.Report{}, err
	}
	jsonString, leftOut := recordFacts(rec)
	body := ms.Body
	body["method"] = map[string]any{"id": Method, "criteria": f.criteria}
	body["labelling"] = f.label
	body["declared_format"] = map[string]any{"id": env.FormatID, "level": rec.GetLevel(), "version_supplied": env.VersionGiven}
	body["record_bytes"] = len(env.Record)
	body["record_was_json_string"] = jsonString
	body["messages_left_out_count"] = leftOut
	body["unknown_top_level_members"] = env.UnknownMembers
	body["scope"] = f.scope
	body["never_assessable"] = f.never
	outcome := "measured_full"
	if ms.Limited {
		outcome = "measured_limited"
	}
	return sdk.Report{Body: body, CheckEnd: checkEnd, Ledger: map[string]any{
		"op": "audit", "measurement_line": ms.Line, "declared_format_id": env.FormatID,
		"entry_count": len(c.Blocks), "record_bytes": len(env.Record), "outcome": outcome,
	}}, nil
}

func (f *Family) precheck(env *Envelope, rec *pb.SessionRecord, c *Classified, st Stated, kind sdk.CannotMeasureKind, facts map[string]any) map[string]any {
	headline := Share(c.PEst[PTres], c.T)
	if rec.GetLevel() != "L2" {
		headline = sdk.NotStated{Token: sdk.NotAssessable, Reason: "not identifiable at this level"}
	}
	na := []map[string]any{}
	sized, user := false, false
	for _, msg := range c.Msgs {
		sized = sized || (!msg.Schema && msg.Sized)
		user = user || (!msg.Schema && msg.User)
	}
	if !sized {
		na = append(na, map[string]any{"factor": "F-3", "metric": "M06", "reason": "zero denominator"})
	}
	if !user {
		na = append(na, map[string]any{"factor": "F-5", "metric": "M07", "reason": "no P-USER message"})
	}
	if reason := st.Status(); reason != "" {
		entry := map[string]any{"factor": "F-10", "metric": "M12", "reason": reason}
		if reason == noStatedCounts {
			entry["label"] = noStatedLabel
		}
		na = append(na, entry)
	}
	na = append(na, map[string]any{"factor": "F-11", "metric": nil, "reason": "NOT-ASSESSABLE-BY-DESIGN in v1"})
	out := map[string]any{
		"declared_format":           map[string]any{"id": env.FormatID, "accepted": true, "level": rec.GetLevel(), "version_supplied": env.VersionGiven},
		"unknown_top_level_members": env.UnknownMembers,
		"not_assessable":            na,
		"never_assessable":          f.never,
		"could_not_measure":         nil,
		"price":                     f.price,
	}
	if kind != "" { // the figures stay (ANNEX C-6)
		cnm := map[string]any{"kind": kind}
		for k, v := range facts {
			cnm[k] = v
		}
		out["could_not_measure"] = cnm
	}
	out["entry_count"] = len(c.Blocks)
	out["total"] = map[string]any{"bytes": c.Bytes, "tokens": sdk.Estimate(int64(c.T))}
	out["headline"] = map[string]any{"tool_output_share": headline}
	return out
}
