package composition

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	contextcomposition "github.com/assay-audit/assay/criteria/context-composition"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Could-not-measure kinds (ANNEX C-2).
const (
	KindTooManyEntries = "too_many_entries"
	KindEntryTooLarge  = "entry_too_large"
	KindZeroEntries    = "zero_entries"
	KindNothing        = "nothing_assessable"
	// KindNotYet answers a measurable submission on the paid route until
	// the metric register (part 2) is built: signed, 422, never charged.
	KindNotYet = "measurement_not_yet_offered"
)

var kindMessages = map[string]string{
	KindTooManyEntries: "the record has more entries than the published cap",
	KindEntryTooLarge:  "an entry's adapted text exceeds the published cap",
	KindZeroEntries:    "the record has no entries",
	KindNothing:        "no entry carries a textual payload",
	KindNotYet:         "this host does not yet measure reports under context-composition/v1; nothing was charged",
}

// Family serves context-composition/v1 through the SDK.
type Family struct {
	desc     *pb.FamilyDescription
	accepted []string
	levels   map[string]string
	never    []string
	price    string
}

type document struct {
	Accepted []string          `json:"accepted_formats"`
	Levels   map[string]string `json:"format_levels"`
	Never    []string          `json:"never_assessable"`
	Price    struct {
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
	var d document
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("criteria: %w", err)
	}
	desc.Formats = d.Accepted
	desc.LedgerFields = []*pb.LedgerField{
		{Name: "op", Type: pb.LedgerField_STRING, Vocabulary: []string{"audit"}},
	}
	desc.Tripwires = &pb.Tripwires{
		AbsentTokens:     []string{sdk.NotAssessable},
		ForbiddenPhrases: []string{"score", "grade", "quality", "recall degraded", "better", "worse", "good", "bad"},
		ExemptSentences:  append(append([]string{}, d.Never...), kindMessages[KindNotYet]),
		ForbiddenMembers: []string{"score", "grade", "composite", "text", "content"},
	}
	return &Family{desc: desc, accepted: d.Accepted, levels: d.Levels, never: d.Never,
		price: d.Price.Label + " " + d.Price.Basis}, nil
}

// Describe returns the family's description.
func (f *Family) Describe() *pb.FamilyDescription { return f.desc }

func couldNot(kind string, facts map[string]any) sdk.Checked {
	inner := map[string]any{"kind": kind, "message": kindMessages[kind]}
	for k, v := range facts {
		inner[k] = v
	}
	return sdk.Checked{Outcome: sdk.CouldNotMeasure, Code: kind, Body: map[string]any{"could_not_measure": inner}}
}

// Check validates a submission: envelope, format (through the host's
// adapter), caps and the could-not-measure kinds; on the pre-check it
// answers the pre-check (ANNEX C-6, C-10).
func (f *Family) Check(ctx context.Context, req sdk.Request) sdk.Checked {
	env, ref := ParseEnvelope(req.Body, f.accepted)
	if ref != nil && ref.Code != CodeStatedCounts {
		return sdk.Checked{Outcome: sdk.Refused, Body: *ref}
	}
	// the stated-counts rule comes after R-4, whose "ambiguous" half only
	// the adapter can see (an agent file with several agents)
	statedRefusal := ref
	if req.Adapters == nil {
		return sdk.Checked{Unavailable: true} // a host that offers no adapters
	}
	resp, err := req.Adapters.Adapt(ctx, &pb.AdaptRequest{FormatId: env.FormatID, Record: env.Record})
	if err != nil {
		// no adapter reachable: the measurement cannot start (503 upstream)
		return sdk.Checked{Unavailable: true}
	}
	if r := resp.GetRefusal(); (r == nil || r.GetCode() != CodeRecordRequired) && statedRefusal != nil {
		return sdk.Checked{Outcome: sdk.Refused, Body: *statedRefusal}
	}
	if r := resp.GetRefusal(); r != nil {
		code := r.GetCode()
		msg := "the record does not parse as the declared format"
		if code == CodeRecordRequired {
			msg = messages[CodeRecordRequired]
		} else if code != CodeFormat {
			code = "record_does_not_parse_as_declared_format"
		}
		return sdk.Checked{Outcome: sdk.Refused, Body: sdk.Refusal{Code: code, Message: msg}}
	}
	rec := resp.GetRecord()
	m := Summarise(env.FormatID, rec)
	var kind string
	var facts map[string]any
	switch {
	case m.Entries > EntriesCap:
		kind, facts = KindTooManyEntries, map[string]any{"cap": EntriesCap, "entries": m.Entries}
	case m.Oversize >= 0:
		kind, facts = KindEntryTooLarge, map[string]any{"cap": EntryBytesCap, "entry_index": m.Oversize}
	case m.Entries == 0:
		kind = KindZeroEntries
	case m.T == 0:
		kind = KindNothing
	}
	if req.Route == sdk.Precheck {
		// the pre-check discloses the kind (200); the paid route answers it (422)
		return sdk.Checked{Outcome: sdk.Accepted, Body: f.precheck(env, rec, m, kind, facts)}
	}
	if kind != "" {
		return couldNot(kind, facts)
	}
	return couldNot(KindNotYet, nil)
}

func (f *Family) precheck(env *Envelope, rec *pb.SessionRecord, m Summary, kind string, facts map[string]any) map[string]any {
	headline := Share(m.TresE, m.T)
	if rec.GetLevel() != "L2" {
		headline = sdk.NotStated{Token: sdk.NotAssessable, Reason: "not identifiable at this level"}
	}
	na := []map[string]any{}
	if m.NonSchemaMessages == 0 {
		na = append(na, map[string]any{"factor": "F-3", "metric": "M06", "reason": "zero denominator"})
	}
	if !m.HasUserMessage {
		na = append(na, map[string]any{"factor": "F-5", "metric": "M07", "reason": "no P-USER message"})
	}
	if reason := statedStatus(env, rec, m); reason != "" {
		na = append(na, map[string]any{"factor": "F-10", "metric": "M12", "reason": reason})
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
	if kind != "" { // the other figures are absent (ANNEX C-6)
		cnm := map[string]any{"kind": kind}
		for k, v := range facts {
			cnm[k] = v
		}
		out["could_not_measure"] = cnm
		return out
	}
	out["entry_count"] = m.Entries
	out["total"] = map[string]any{"bytes": m.Bytes, "tokens": sdk.Estimate(int64(m.T))}
	out["headline"] = map[string]any{"tool_output_share": headline}
	return out
}

// Summary is what validation and the pre-check need of an adapted record.
type Summary struct {
	Entries           int
	Oversize          int // first entry over the size cap, -1 when none
	T                 int
	Bytes             int
	TresE             int
	NonSchemaMessages int
	HasUserMessage    bool
}

// Summarise counts entries and sizes and classifies what the pre-check
// reads (ANNEX C-3, C-9, C-10).
func Summarise(format string, rec *pb.SessionRecord) Summary {
	s := Summary{Oversize: -1}
	for _, msg := range rec.GetMessages() {
		if !msg.GetSchema() {
			s.NonSchemaMessages++
		}
		for i, b := range msg.GetBlocks() {
			// axis P reads role and kind, never content: a non-serialisable
			// block is classified like any other
			p := ClassifyP(format, rec.GetLevel(), msg.GetRoleRaw(), msg.GetSchema(), b)
			if i == 0 && !msg.GetSchema() && p.Class == PUser {
				s.HasUserMessage = true
			}
			s.Entries++
			if b.GetNonSerialisable() {
				continue
			}
			if len(b.GetText()) > EntryBytesCap && s.Oversize < 0 {
				s.Oversize = s.Entries - 1
			}
			s.Bytes += len(b.GetText())
			e := Estimate(Chars(b.GetText()))
			s.T += e
			if p.Class == PTres {
				s.TresE += e
			}
		}
	}
	return s
}

type stated struct {
	Total      *json.Number      `json:"total"`
	PerMessage []json.RawMessage `json:"per_message"`
}

// statedStatus is F-10's pre-check status (ANNEX C-10): "" when covered.
func statedStatus(env *Envelope, rec *pb.SessionRecord, m Summary) string {
	var st stated
	if env.StatedCounts != nil {
		dec := json.NewDecoder(bytes.NewReader(env.StatedCounts))
		dec.UseNumber()
		_ = dec.Decode(&st)
	}
	hasTotal := st.Total != nil && *st.Total != ""
	perMessage := map[int]bool{}
	for i, raw := range st.PerMessage {
		if isNumber(raw) {
			perMessage[i] = true
		}
	}
	anyBlock := false
	covered, idx := 0, 0
	for _, msg := range rec.GetMessages() {
		if msg.GetSchema() {
			continue
		}
		all := len(msg.GetBlocks()) > 0
		for _, b := range msg.GetBlocks() {
			if b.GetHasStatedTokens() {
				anyBlock = true
			} else {
				all = false
			}
		}
		if perMessage[idx] || all {
			covered++
		}
		idx++
	}
	switch {
	case !hasTotal && len(perMessage) == 0 && !anyBlock:
		return "no stated counts"
	case !hasTotal && covered < m.NonSchemaMessages:
		return "partial coverage"
	}
	return ""
}

// isNumber reports a JSON number literal (null and strings are not).
func isNumber(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9'))
}
