package composition

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Fixed sentences of the report (ANNEX C-13) that are this host's, not the
// criteria's.
const (
	notIdentifiable = "not identifiable at this level"
	nonSerialisable = "non-serialisable payload"
	zeroDenominator = "zero denominator"
	absenceNote     = "no tool definitions present in the submitted record"
	cmptNote        = "no P-CMPT block identified at this level"
	conventionM06   = "Nearest-rank percentiles and the 10 % largest-contributor threshold are fleet conventions."
	conventionM07   = "The turn definition is a fleet convention."
	conventionM09   = "Near duplication is a labelled fleet convention: word 3-gram shingles, Jaccard at least 0.80, pairs already exact under M08 excluded."
	conventionM10   = "The census thresholds are fleet conventions; the counts are mechanical facts given the tests."
	conventionM12   = "The ±5 % tolerance is a fleet convention."
	noteM12         = "Disagreement measures the gap between the harness's count and EM-1 — not an error by either side."
	byDesign        = "NOT-ASSESSABLE-BY-DESIGN in v1"
	noStatedCounts  = "no stated counts"
	noStatedLabel   = "NO-STATED-COUNT"
	partialCoverage = "partial coverage"
	rawValueCap     = 64
)

// fixedSentences are exempt from the wording fence (the criteria's own
// and the ANNEX's fixed report sentences).
var fixedSentences = []string{notIdentifiable, nonSerialisable, zeroDenominator, absenceNote, cmptNote,
	conventionM06, conventionM07, conventionM09, conventionM10, conventionM12, noteM12, byDesign, noStatedCounts, noStatedLabel}

// report is one measurement's working state.
type report struct {
	c  *Classified
	st Stated
}

func na(reason string) sdk.NotStated { return sdk.NotStated{Token: sdk.NotAssessable, Reason: reason} }

func est(n int) string { return sdk.Estimate(int64(n)) }

func (r *report) share(part int) any { return Share(part, r.c.T) }

func factor(id, metric string) map[string]any {
	m := map[string]any{"id": id, "status": "ASSESSABLE"}
	if metric == "" {
		m["metric"] = nil
	} else {
		m["metric"] = metric
	}
	return m
}

func notAssessable(id, metric, reason string) map[string]any {
	m := factor(id, metric)
	m["status"] = sdk.NotAssessable
	m["reason"] = reason
	return m
}

// mustEncode is the canonical JSON of a factor built here from numbers,
// strings and slices of them, which cannot fail. Canonical, so neither the
// SDK nor the host re-encodes it.
func mustEncode(f map[string]any) sdk.RawCanonical {
	b, err := sdk.CanonicalJSON(f)
	if err != nil {
		panic("composition: a factor does not encode") // a programming error: the SDK answers 500, uncharged
	}
	return b
}

// Measurement is a measured record: the report body and its ledger facts.
type Measurement struct {
	Body    map[string]any
	Line    string
	Limited bool
}

// Measure builds the report members of ANNEX C-13 for a classified record
// (the caller adds the criteria's other fixed texts and the envelope
// facts); literature is the criteria's F-9 line.
// It gives up with ctx's error when ctx ends while M09 runs (the request
// was abandoned: nobody will read the report).
func Measure(ctx context.Context, c *Classified, st Stated, checkEnd time.Time, literature string) (Measurement, error) {
	r := &report{c: c, st: st}
	// M09 is the one costly factor: it runs on the second core while the
	// others are computed and encoded, and Measure waits for it before
	// returning
	type nearOut struct {
		r  NearResult
		ok bool
	}
	near := make(chan nearOut, 1)
	go func() {
		n, ok := c.NearDuplicatesUntil(ctx.Done())
		near <- nearOut{n, ok}
	}()
	factors := []map[string]any{
		r.f1(), r.f2(), r.f2b(), r.f3(), r.f4(), r.f5(), nil, r.f7(), r.f8(), r.f9(literature), r.f10(),
		notAssessable("F-11", "", byDesign), r.f12(),
	}
	encoded := make([]sdk.RawCanonical, len(factors))
	for i, f := range factors {
		if f != nil {
			encoded[i] = mustEncode(f)
		}
	}
	n := <-near
	if !n.ok {
		return Measurement{}, fmt.Errorf("measure: %w", ctx.Err())
	}
	factors[6] = r.f6(n.r)
	encoded[6] = mustEncode(factors[6])
	limited := false
	for _, f := range factors {
		if f["status"] == sdk.NotAssessable && f["id"] != "F-11" {
			limited = true
		}
	}
	word := "FULL"
	if limited {
		word = "LIMITED"
	}
	line := fmt.Sprintf("CONTEXT COMPOSITION — format: %s (%s) · messages: %d · blocks: %d · total: %s · unknown blocks: %d · %s — %s",
		c.Format, c.Level, c.Messages, len(c.Blocks), est(c.T), c.UnknownEitherN, word, sdk.Instant(checkEnd))
	body := map[string]any{
		"header_facts":     r.header(),
		"factors":          encoded,
		"measurement_line": line,
	}
	return Measurement{Body: body, Line: line, Limited: limited}, nil
}

func (r *report) header() map[string]any {
	c := r.c
	unit := func(n, e int) map[string]any {
		return map[string]any{"block_count": n, "tokens": est(e), "share": r.share(e)}
	}
	cUnk := unit(0, 0)
	if n := c.CCount[CUnk]; n > 0 {
		cUnk = map[string]any{"block_count": n, "tokens": na(nonSerialisable), "share": na(nonSerialisable)}
	}
	return map[string]any{
		"M01": map[string]any{
			"message_count": c.Messages, "block_count": len(c.Blocks), "schema_block_count": c.SchemaBlocks,
			"empty_block_count": c.EmptyBlocks, "axis_p_conflict_count": c.PConflicts, "axis_c_conflict_count": c.CConflicts,
		},
		"M02": map[string]any{"characters": c.CTotal, "tokens": est(c.T), "unsized_block_count": c.Unsized},
		"M13": map[string]any{
			"p_unk":  unit(c.PCount[PUnk], c.PEst[PUnk]),
			"c_unk":  cUnk,
			"either": unit(c.UnknownEitherN, c.UnknownEitherE),
		},
	}
}

func (r *report) structuralHidden(class string) bool {
	return slices.Contains(r.c.NotIdentifiable, class)
}

// row is one table row (ANNEX C-13 "Row"); withShare false for margins.
func (r *report) row(class string, n, e int, withShare bool) map[string]any {
	if r.structuralHidden(class) {
		return map[string]any{"class": class, "note": notIdentifiable}
	}
	m := map[string]any{"class": class, "block_count": n, "tokens": est(e)}
	if withShare {
		m["share"] = r.share(e)
	}
	if class == CUnk && n > 0 {
		m["tokens"] = na(nonSerialisable)
		if withShare {
			m["share"] = na(nonSerialisable)
		}
	}
	return m
}

func capRaw(s string) string {
	if utf8.RuneCountInString(s) <= rawValueCap {
		return s
	}
	i, n := 0, 0
	for i = range s {
		if n == rawValueCap {
			break
		}
		n++
	}
	return s[:i] + "…"
}

func (r *report) f1() map[string]any {
	c := r.c
	f := factor("F-1", "M03")
	rows := make([]map[string]any, 0, len(PClasses))
	for _, p := range PClasses {
		row := r.row(p, c.PCount[p], c.PEst[p], true)
		if p == POther {
			row["raw_values"] = append([]string{}, c.OtherRaw...)
		}
		rows = append(rows, row)
	}
	conflicts := []map[string]any{}
	for _, b := range c.Blocks {
		if len(b.P.Losers) > 0 {
			conflicts = append(conflicts, map[string]any{"block_index": b.Index, "winner": b.P.Class, "losers": b.P.Losers})
		}
	}
	f["rows"], f["conflicts"] = rows, conflicts
	return f
}

func (r *report) f2() map[string]any {
	f := factor("F-2", "M04")
	rows := make([]map[string]any, 0, len(CClasses))
	for _, k := range CClasses {
		rows = append(rows, r.row(k, r.c.CCount[k], r.c.CEst[k], true))
	}
	f["rows"] = rows
	return f
}

func (r *report) f2b() map[string]any {
	c := r.c
	f := factor("F-2b", "M05")
	cells := []map[string]any{}
	for _, p := range PClasses {
		for _, k := range CClasses {
			key := [2]string{p, k}
			n := c.Cross[key]
			if n == 0 {
				continue
			}
			cell := map[string]any{"p": p, "c": k, "block_count": n, "tokens": est(c.CrossE[key])}
			if k == CUnk {
				cell["tokens"] = na(nonSerialisable)
			}
			cells = append(cells, cell)
		}
	}
	var ap, ac []map[string]any
	for _, p := range PClasses {
		ap = append(ap, r.row(p, c.PCount[p], c.PEst[p], false))
	}
	for _, k := range CClasses {
		ac = append(ac, r.row(k, c.CCount[k], c.CEst[k], false))
	}
	f["cells"] = cells
	f["margins"] = map[string]any{"axis_p": ap, "axis_c": ac}
	return f
}

func (r *report) schemaCount() int {
	for _, m := range r.c.Msgs {
		if m.Schema {
			return 1
		}
	}
	return 0
}

// f3 is M06 over the messages with at least one sized block.
func (r *report) f3() map[string]any {
	in := make([]MessageFacts, 0, len(r.c.Msgs))
	unsized := 0
	for _, m := range r.c.Msgs {
		switch {
		case m.Schema:
		case m.Sized:
			in = append(in, m)
		default:
			unsized++
		}
	}
	n := len(in)
	if n == 0 {
		return notAssessable("F-3", "M06", zeroDenominator)
	}
	total := 0
	es := make([]int, n)
	for i, m := range in {
		es[i] = m.E
		total += m.E
	}
	slices.Sort(es)
	rank := func(num int) int { return (num*n + 9) / 10 } // ceil(num·n / 10), num in tenths
	med, p90 := rank(5), rank(9)
	// the union of the top three (ties to the lowest index) and every
	// message at ≥ 10 % of the total, estimate > 0
	order := slices.Clone(in)
	slices.SortStableFunc(order, func(a, b MessageFacts) int { return b.E - a.E })
	pick := map[int]bool{}
	for i := 0; i < len(order) && i < 3; i++ {
		if order[i].E > 0 {
			pick[order[i].Index] = true
		}
	}
	contributors := []map[string]any{}
	for _, m := range in {
		if m.E > 0 && (pick[m.Index] || 10*m.E >= total) {
			contributors = append(contributors, map[string]any{"message_index": m.Index, "tokens": est(m.E), "share": r.share(m.E)})
		}
	}
	f := factor("F-3", "M06")
	f["excluded"] = map[string]any{"schema_pseudo_message_count": r.schemaCount(), "unsized_message_count": unsized}
	f["message_count"] = n
	f["total_tokens"] = est(total)
	f["min_tokens"], f["max_tokens"] = est(es[0]), est(es[n-1])
	f["mean_tokens"] = est((2*total + n) / (2 * n))
	f["lower_median"] = map[string]any{"rank": med, "tokens": est(es[med-1])}
	f["p90"] = map[string]any{"rank": p90, "tokens": est(es[p90-1])}
	f["largest_contributors"] = contributors
	f["convention"] = conventionM06
	return f
}

func (r *report) f4() map[string]any {
	f := factor("F-4", "M08")
	groups := r.c.ExactDuplicates()
	members, excessN, excessE := 0, 0, 0
	list := make([]map[string]any, 0, len(groups))
	for _, g := range groups {
		members += len(g.Blocks)
		excessN += g.ExcessCount
		excessE += g.ExcessE
		list = append(list, map[string]any{"block_indices": g.Blocks, "kept_block_index": g.Blocks[0],
			"excess_block_count": g.ExcessCount, "excess_tokens": est(g.ExcessE)})
	}
	f["group_count"] = len(groups)
	f["duplicated_block_count"] = members
	f["excess_block_count"] = excessN
	f["excess_tokens"] = est(excessE)
	f["excess_share"] = r.share(excessE)
	f["groups"] = list
	return f
}

// f5 is M07: turn 0 before the first P-USER message (listed only when it
// holds a message), then a turn per P-USER message.
func (r *report) f5() map[string]any {
	type turn struct{ first, count, e int }
	var turns []turn
	hasUser, zero := false, false
	for _, m := range r.c.Msgs {
		if m.Schema {
			continue
		}
		switch {
		case m.User:
			hasUser = true
			turns = append(turns, turn{first: m.Index})
		case len(turns) == 0:
			zero = true
			turns = append(turns, turn{first: m.Index})
		}
		turns[len(turns)-1].count++
		turns[len(turns)-1].e += m.E
	}
	if !hasUser {
		return notAssessable("F-5", "M07", "no P-USER message")
	}
	list := make([]map[string]any, 0, len(turns))
	cum := 0
	for i, t := range turns {
		k := i + 1
		if zero {
			k = i
		}
		cum += t.e
		list = append(list, map[string]any{"turn": k, "first_message_index": t.first, "message_count": t.count,
			"increment_tokens": est(t.e), "cumulative_tokens": est(cum), "cumulative_share": r.share(cum)})
	}
	f := factor("F-5", "M07")
	f["excluded"] = map[string]any{"schema_pseudo_message_count": r.schemaCount()}
	f["turn_count"] = len(turns)
	f["turns"] = list
	f["convention"] = conventionM07
	return f
}

func (r *report) f6(near NearResult) map[string]any {
	f := factor("F-6", "M09")
	pairs := make([][2]int, 0, len(near.Pairs))
	for _, p := range near.Pairs {
		pairs = append(pairs, [2]int{p.I, p.J})
	}
	f["eligible_block_count"] = near.Eligible
	f["pair_count"] = near.Count
	f["listing_bound"] = ListingBound
	f["pairs"] = pairs
	f["convention"] = conventionM09
	return f
}

func (r *report) f7() map[string]any {
	f := factor("F-7", "M10")
	std, url, chars := 0, 0, 0
	with := []map[string]any{}
	raw := []int{}
	for _, b := range r.c.Blocks {
		std += b.Std
		url += b.URL
		chars += b.SegChars
		if b.Std+b.URL > 0 {
			with = append(with, map[string]any{"block_index": b.Index, "standard_segment_count": b.Std, "url_safe_segment_count": b.URL})
		}
		if b.RawExport {
			raw = append(raw, b.Index)
		}
	}
	f["standard_segment_count"], f["url_safe_segment_count"], f["segment_characters"] = std, url, chars
	f["blocks_with_segments"] = with
	f["raw_export_block_count"], f["raw_export_blocks"] = len(raw), raw
	f["convention"] = conventionM10
	return f
}

func (r *report) f8() map[string]any {
	f := factor("F-8", "M11")
	if r.structuralHidden(PTdef) {
		f["note"], f["absence_note"] = notIdentifiable, absenceNote
		return f
	}
	n, e := r.c.PCount[PTdef], r.c.PEst[PTdef]
	f["block_count"], f["tokens"], f["share"] = n, est(e), r.share(e)
	if n == 0 {
		f["absence_note"] = absenceNote
	}
	return f
}

func (r *report) f9(literature string) map[string]any {
	f := factor("F-9", "M14")
	f["literature_line"] = literature
	list := []map[string]any{}
	offset := 0
	for _, b := range r.c.Blocks {
		if b.P.Class == PSys || b.P.Class == PCmpt {
			list = append(list, map[string]any{"block_index": b.Index, "class": b.P.Class,
				"offset_tokens": est(offset), "depth": r.share(offset)})
		}
		offset += b.E
	}
	f["blocks"] = list
	if r.structuralHidden(PCmpt) {
		f["cmpt_note"] = cmptNote
	}
	return f
}

// comparison is one M12 comparison C (ANNEX C-13).
func comparison(stated int64, e int) map[string]any {
	diff := stated - int64(e)
	abs := diff
	if abs < 0 {
		abs = -abs
	}
	rel := "equal"
	if diff > 0 {
		rel = "above"
	} else if diff < 0 {
		rel = "below"
	}
	agreement := "DISAGREE"
	switch {
	case e == 0 && stated == 0:
		agreement = "EXACT"
	case e > 0 && 20*abs <= int64(e):
		agreement = "WITHIN"
	}
	var pct any = na(zeroDenominator)
	if s, ok := sdk.EstimatePercent(abs, int64(e)); ok {
		pct = s
	}
	return map[string]any{"stated": stated, "measured_tokens": est(e), "difference_tokens": sdk.Estimate(abs),
		"difference_share": pct, "stated_relative": rel, "agreement": agreement}
}

func (r *report) f10() map[string]any {
	c, st := r.c, r.st
	if reason := st.Status(); reason != "" {
		f := notAssessable("F-10", "M12", reason)
		if reason == noStatedCounts {
			f["label"] = noStatedLabel // the criteria's own M12 label
		}
		return f
	}
	units := []map[string]any{}
	var sumS int64
	sumE, covered, allE := 0, 0, 0
	var allS int64
	for _, m := range c.Msgs {
		if m.Schema {
			continue
		}
		allE += m.E
		if !st.Covered[m.Index] {
			continue
		}
		s := st.PerMessage[m.Index]
		u := comparison(s, m.E)
		u["message_index"] = m.Index
		units = append(units, u)
		sumS += s
		allS += s
		sumE += m.E
		covered++
	}
	f := factor("F-10", "M12")
	f["message_count"], f["covered_message_count"] = c.Messages, covered
	f["ignored_entry_count"], f["invalid_entry_count"] = st.Ignored, st.Invalid
	f["units"] = units
	if covered == 0 {
		f["covered"] = na("no covered message")
	} else {
		f["covered"] = comparison(sumS, sumE)
	}
	switch {
	case st.HasTotal:
		f["whole_record"] = comparison(st.Total, c.T)
	case st.Partial(c.Messages):
		// M12: "a whole-record figure at coverage <100% is NOT-ASSESSABLE"
		f["whole_record"] = na(partialCoverage)
	default:
		f["whole_record"] = comparison(allS, allE) // every message is covered
	}
	f["convention"], f["note"] = conventionM12, noteM12
	return f
}

func (r *report) f12() map[string]any {
	f := factor("F-12", "M15")
	b, ok := r.c.Largest()
	if !ok { // unreachable in a report: T > 0 needs a sized block
		return notAssessable("F-12", "M15", zeroDenominator)
	}
	var msg any = b.Message
	if b.Message < 0 {
		msg = nil
	}
	f["block_index"], f["message_index"], f["p_class"], f["c_class"] = b.Index, msg, b.P.Class, b.C
	f["tokens"], f["share"] = est(b.E), r.share(b.E)
	return f
}

// recordFacts reads the adapter's disclosures the report prints (ANNEX
// C-8): counts only, known codes only.
func recordFacts(rec *pb.SessionRecord) (jsonString bool, leftOut int64) {
	for _, d := range rec.GetDisclosures() {
		switch d.GetCode() {
		case "record_was_json_string":
			jsonString = true
		case "messages_left_out":
			leftOut = d.GetCount()
		}
	}
	return jsonString, leftOut
}
