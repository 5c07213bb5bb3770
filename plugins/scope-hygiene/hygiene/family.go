package hygiene

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	memoryscopehygienecorpus "github.com/assay-audit/assay/corpus/memory-scope-hygiene"
	memoryscopehygiene "github.com/assay-audit/assay/criteria/memory-scope-hygiene"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Family serves memory-scope-hygiene/v1 through the SDK.
type Family struct {
	desc   *pb.FamilyDescription
	doc    document
	price  map[string]any
	matrix map[string]map[string]json.RawMessage
}

type document struct {
	ScopeText string `json:"scope_text"`
	Honesty   string `json:"honesty_line"`
	Retention string `json:"retention"`
	Price     struct {
		Units  int64  `json:"usdc_units_per_call"`
		Label  string `json:"label"`
		Status string `json:"status"`
	} `json:"price"`
	Matrix map[string]map[string]json.RawMessage `json:"assessability_matrix"`
}

// New reads the embedded criteria document.
func New() (*Family, error) {
	raw := memoryscopehygiene.Document
	desc, err := sdk.DescribeFromCriteria(raw)
	if err != nil {
		return nil, err
	}
	desc.Corpus = memoryscopehygienecorpus.JSON
	desc.RequestSchema = memoryscopehygiene.RequestSchema
	var d document
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("criteria: %w", err)
	}
	desc.LedgerFields = []*pb.LedgerField{
		{Name: "op", Type: pb.LedgerField_STRING, Vocabulary: []string{"audit"}},
		{Name: "verdict_line", Type: pb.LedgerField_STRING, Pattern: verdictPattern},
		{Name: "undeclared_cluster_count", Type: pb.LedgerField_NUMBER, Nullable: true},
	}
	desc.Tripwires = &pb.Tripwires{
		AbsentTokens: []string{notAssessable},
		// no composite or grade; no leak proof; no "verified legitimate"
		ForbiddenPhrases: []string{"score", "grade", "band", "verified", "legitimate", "leak detected", "proves", "no leak"},
		ExemptSentences:  []string{d.ScopeText, d.Honesty, d.Retention, UndeclaredLabel, SharedLabel},
		ForbiddenMembers: []string{"score", "grade", "band", "composite", "content", "content_text", "content_hash", "hash", "source"},
		ExemptMembers:    []string{"id", "record_ids", "referred_to_scope_conflicts", "scope", "scope_keys", "scope_keys_dropped"},
		VerdictWaivers:   sdk.Waivers(verdictWaivers...),
	}
	for _, op := range desc.Ops {
		op.PriceLabel = d.Price.Label + " (" + d.Price.Status + ")"
	}
	return &Family{desc: desc, doc: d, matrix: d.Matrix,
		price: map[string]any{"usdc_units": d.Price.Units, "label": d.Price.Label, "status": d.Price.Status}}, nil
}

// verdictWaivers are the words of the host's baseline of verdict words
// this family's answers use because the criteria require them, each with
// the reason its ANNEX states ("Verdict words the host's baseline
// waives"). The pre-check prints the criteria's assessability matrix row
// verbatim (ANNEX A-1), whose notes say a factor is "graded" or "grades"
// ASSESSABLE or NOT ASSESSABLE. The family's own ForbiddenPhrases still
// forbid "grade".
var verdictWaivers = []sdk.VerdictWaiver{
	{Word: "graded", Reason: "The pre-check prints the criteria's assessability matrix row verbatim (A-1); its notes use \"graded\" for the status a factor gets (ASSESSABLE or NOT ASSESSABLE), never for a judgement of the export."},
	{Word: "grades", Reason: "The pre-check prints the criteria's assessability matrix row verbatim (A-1); its notes use \"grades\" for the status a factor gets (ASSESSABLE or NOT ASSESSABLE), never for a judgement of the export."},
}

const verdictPattern = `MEMORY SCOPE-HYGIENE — records: [0-9]+ · live: [0-9]+ · unscoped: ([0-9]+\.[0-9]%|NOT ASSESSABLE) · undeclared cross-scope clusters: ([0-9]+|NOT ASSESSABLE) · conflicts: ([0-9]+|NOT ASSESSABLE) · live duplicates: ([0-9]+|NOT ASSESSABLE) — [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z`

// Describe returns the family's description.
func (f *Family) Describe() *pb.FamilyDescription { return f.desc }

// Check validates; on audit it returns the measurement to run after payment.
func (f *Family) Check(_ context.Context, req sdk.Request) sdk.Checked {
	e, ref := Parse(req.Body)
	if ref != nil {
		return sdk.RefuseRequest(*ref)
	}
	if req.Route == sdk.Precheck {
		return sdk.Assessed(f.precheck(e))
	}
	return sdk.Accept(func(ctx context.Context, clock func() time.Time) (sdk.Report, error) {
		return f.Report(e, clock()), nil
	})
}

func (f *Family) header(e *Export, a *audit) map[string]any {
	return map[string]any{"family": e.Family, "form": e.Form, "variant": e.Variant,
		"records": len(e.Records), "live_records": a.live, "price": f.price}
}

func (f *Family) precheck(e *Export) map[string]any {
	a := newAudit(e)
	out := f.header(e, a)
	out["assessable"] = true
	out["variant_defaulted"] = e.VariantDefaulted
	out["matrix_row"] = f.matrix[e.Family][e.Form]
	reasons := a.statuses()
	factors := map[string]any{}
	for _, name := range Factors {
		if r, ok := reasons[name]; ok {
			factors[name] = na(r)
		} else {
			factors[name] = map[string]any{"status": "ASSESSABLE"}
		}
	}
	out["factors"] = factors
	return out
}

// Report computes the paid report for a check that ended at checkEnd.
func (f *Family) Report(e *Export, checkEnd time.Time) sdk.Report {
	a := newAudit(e)
	reasons := a.statuses()
	factors := map[string]any{}
	var b5NotRun []int
	unscoped, undeclared, conflicts := notAssessable, notAssessable, notAssessable
	var undeclaredCount any
	if r, ok := reasons["scope_presence"]; ok {
		factors["scope_presence"] = na(r)
	} else {
		factors["scope_presence"] = a.presence()
	}
	if r, ok := reasons["unscoped_rate"]; ok {
		factors["unscoped_rate"] = na(r)
	} else {
		factors["unscoped_rate"], unscoped = a.unscoped()
	}
	if r, ok := reasons["cross_scope_clusters"]; ok {
		factors["cross_scope_clusters"] = na(r)
	} else {
		var n int
		factors["cross_scope_clusters"], n, b5NotRun = a.clusters()
		undeclared, undeclaredCount = strconv.Itoa(n), n
	}
	if r, ok := reasons["scope_conflicts"]; ok {
		factors["scope_conflicts"] = na(r)
	} else {
		var total int
		factors["scope_conflicts"], total = a.conflicts()
		conflicts = strconv.Itoa(total)
	}
	liveDuplicates := notAssessable // never a zero for a NOT ASSESSABLE factor
	if r, ok := reasons["duplicates"]; ok {
		factors["duplicates"] = na(r)
	} else {
		var excess int
		factors["duplicates"], excess = a.duplicates()
		liveDuplicates = strconv.Itoa(excess)
	}
	at := sdk.Instant(checkEnd)
	verdict := fmt.Sprintf("MEMORY SCOPE-HYGIENE — records: %d · live: %d · unscoped: %s · undeclared cross-scope clusters: %s · conflicts: %s · live duplicates: %s — %s",
		len(e.Records), a.live, unscoped, undeclared, conflicts, liveDuplicates, at)
	body := f.header(e, a)
	body["factors"] = factors
	body["coverage"] = a.coverage(b5NotRun)
	body["scope_text"], body["honesty_line"], body["retention"] = f.doc.ScopeText, f.doc.Honesty, f.doc.Retention
	body["verdict_line"] = verdict
	return sdk.Report{Body: body, CheckEnd: checkEnd,
		Ledger: map[string]any{"op": "audit", "verdict_line": verdict, "undeclared_cluster_count": undeclaredCount}}
}

// coverage is the coverage block (ANNEX A-1).
func (a *audit) coverage(b5NotRun []int) map[string]any {
	e := a.e
	keys, source := e.DeclaredKeys, "family default"
	if e.KeysFromManifest {
		source = "manifest"
	}
	dropped := e.DroppedKeys
	if dropped == nil {
		dropped = []string{}
	}
	if e.Family == "letta" {
		keys, dropped = []string{"attached_to"}, []string{}
	}
	if keys == nil {
		keys = []string{}
	}
	marked := 0
	split, contested := []string{}, []string{}
	templates, passages := 0, 0
	scopeValues, contents, ids := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, r := range e.Records {
		s := a.st[i]
		if a.markedLive(i) {
			marked++
		}
		if s.split {
			split = append(split, r.ID)
		}
		if s.contested {
			contested = append(contested, r.ID)
		}
		if s.template {
			templates++
		}
		if s.sourcePsg {
			passages++
		}
		if !s.scope.None() && s.scope.Set == nil {
			scopeValues[s.scope.Value()] = true
		}
		contents[r.Content], ids[r.ID] = true, true
	}
	absent := func(list []string, present map[string]bool) int {
		n, seen := 0, map[string]bool{}
		for _, v := range list {
			if !seen[v] && !present[v] {
				n++
			}
			seen[v] = true
		}
		return n
	}
	if b5NotRun == nil {
		b5NotRun = []int{}
	}
	return map[string]any{
		"scope_keys": keys, "scope_keys_source": source, "scope_keys_dropped": dropped,
		"marked_live": marked, "live_records": a.live, "marked_share": percent(marked, a.live),
		"declared_but_absent": map[string]any{
			"global_scopes":       absent(a.manifest.globalScopes, scopeValues),
			"global_content_keys": absent(a.manifest.globalContent, contents),
			"global_claim_ids":    absent(a.manifest.globalClaims, ids),
			"private_scopes":      absent(a.manifest.privateScopes, scopeValues),
		},
		"split_state_anomalies": map[string]any{"count": len(split), "record_ids": split},
		"contested_heads":       map[string]any{"count": len(contested), "record_ids": contested},
		"b5_not_run":            map[string]any{"count": len(b5NotRun), "cluster_indexes": b5NotRun},
		"templates":             templates, "source_passages": passages,
	}
}
