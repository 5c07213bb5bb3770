package hygiene

import (
	"sort"

	"github.com/assay-audit/assay/sdk"
)

// Factor names, in report order.
var Factors = []string{"scope_presence", "unscoped_rate", "cross_scope_clusters", "scope_conflicts", "duplicates"}

// The criteria's spelling of the cannot-be-stated status.
const notAssessable = sdk.NotAssessableSpaced

// Fixed labels.
const (
	UndeclaredLabel = "undeclared cross-scope identical content — contamination indicator, not proof of a runtime leak"
	SharedLabel     = "declared shared by the operator"
)

// NOT ASSESSABLE reasons (ANNEX A-6..A-9), exact strings.
const (
	reasonNoKeys       = "no scope key declared (generic schema defines none)"
	reasonZero         = "zero denominator"
	reasonFiltered     = "scope-filtered export"
	reasonMultiScope   = "multi-scope not demonstrated"
	reasonZepCloud     = "single scope: not assessable by construction"
	reasonSingleGraph  = "single graph: not assessable intra-graph"
	reasonNoFieldFam   = "no source/target scope field in this family"
	reasonNoFields     = "no record carries attributed_scope, history_scope, episode_group_ids or endpoint_group_ids"
	reasonMalformed    = "malformed sharing marker"
	reasonContradicts  = "contradictory sharing declarations"
	reasonPointer      = "origin pointer does not resolve"
	reasonPartition    = "copies carry different sets of declared scope keys"
	reasonAttribution  = "attribution conflict: sources disagree"
	reasonPartialCover = "partial marker coverage"
)

func na(reason string) map[string]any {
	return map[string]any{"status": notAssessable, "reason": reason}
}

// audit holds one export's derived state.
type audit struct {
	e        *Export
	st       []state
	live     int
	distinct int
	byID     map[string]*Record
	keyCount map[string]int // live scoped records per content key (M4 depth bound)
	manifest manifestLists
	// resolved remembers resolves per record (0: not yet, 1: yes, 2: no):
	// four passes ask it of every record, and a pointer chain is up to a
	// thousand hops long
	resolved []int8
	// walked stamps the records met by the walk numbered walk
	walked []int32
	walk   int32
}

// manifestLists are the manifest's lists as given (declared_but_absent
// counts them) and as sets: a record is looked up in each, several times
// an audit, and a list may hold tens of thousands of values.
type manifestLists struct {
	globalScopes, globalContent, globalClaims, privateScopes []string

	isGlobalScope, isGlobalContent, isGlobalClaim, isPrivateScope map[string]bool
}

func setOf(list []string) map[string]bool {
	set := make(map[string]bool, len(list))
	for _, v := range list {
		set[v] = true
	}
	return set
}

func newAudit(e *Export) *audit {
	a := &audit{e: e, st: e.states(), byID: map[string]*Record{}, keyCount: map[string]int{}}
	seen := map[string]bool{}
	for i, r := range e.Records {
		a.byID[r.ID] = r
		s := a.st[i]
		if s.live {
			a.live++
		}
		if !s.scope.None() {
			seen[s.scope.Identity()] = true
			if s.live {
				a.keyCount[r.Content]++
			}
		}
	}
	a.distinct = len(seen)
	if m := e.Manifest; m != nil {
		a.manifest.globalScopes, _, _ = m.strings("global_scopes")
		a.manifest.globalContent, _, _ = m.strings("global_content_keys")
		a.manifest.globalClaims, _, _ = m.strings("global_claim_ids")
		a.manifest.privateScopes, _, _ = m.strings("private_scopes")
	}
	a.manifest.isGlobalScope, a.manifest.isGlobalContent = setOf(a.manifest.globalScopes), setOf(a.manifest.globalContent)
	a.manifest.isGlobalClaim, a.manifest.isPrivateScope = setOf(a.manifest.globalClaims), setOf(a.manifest.privateScopes)
	a.resolved, a.walked = make([]int8, len(e.Records)), make([]int32, len(e.Records))
	return a
}

func (a *audit) manifestTrue(name string) bool {
	return a.e.Manifest != nil && a.e.Manifest.isTrue(name)
}

func (a *audit) eligible() (eligible, scoped int) {
	for _, s := range a.st {
		if s.eligibleOut {
			continue
		}
		eligible++
		if !s.scope.None() {
			scoped++
		}
	}
	return
}

// statuses resolves every factor's assessability for this export: the
// reason it is NOT ASSESSABLE, or "" (the pre-check prints this; the report
// computes the figures of the assessable ones).
func (a *audit) statuses() map[string]string {
	e, out := a.e, map[string]string{}
	noKeys := e.Family == "generic" && len(e.DeclaredKeys) == 0
	eligible, _ := a.eligible()
	multi := a.distinct >= 2 || a.manifestTrue("multi_scope")
	switch {
	case noKeys:
		out["scope_presence"], out["unscoped_rate"] = reasonNoKeys, reasonNoKeys
	case eligible == 0:
		out["scope_presence"], out["unscoped_rate"] = reasonZero, reasonZero
	case e.Family == "mem0" && a.manifestTrue("scope_filtered"):
		out["unscoped_rate"] = reasonFiltered
	case e.Family == "zep_graphiti" && e.Variant == "graphiti" && !multi:
		out["unscoped_rate"] = reasonMultiScope
	case e.Family == "zep_graphiti" && e.Variant == "zep_cloud" && !multi:
		out["unscoped_rate"] = reasonZepCloud
	}
	switch {
	case noKeys:
		out["cross_scope_clusters"] = reasonNoKeys
	case e.Family == "zep_graphiti" && e.Variant == "zep_cloud" && a.distinct < 2:
		out["cross_scope_clusters"] = reasonSingleGraph
	case a.live == 0: // its marked share divides by live records
		out["cross_scope_clusters"] = reasonZero
	}
	hasChecked := false
	for _, s := range a.st {
		hasChecked = hasChecked || s.hasChecked
	}
	switch {
	case e.Family == "letta" || e.Family == "generic":
		out["scope_conflicts"] = reasonNoFieldFam
	case !hasChecked:
		out["scope_conflicts"] = reasonNoFields
	}
	if a.live == 0 {
		out["duplicates"] = reasonZero
	}
	return out
}

func percent(part, whole int) any {
	s, ok := sdk.Percent(int64(part), int64(whole), 1)
	if !ok {
		return na(reasonZero)
	}
	return s
}

func (a *audit) presence() map[string]any {
	eligible, scoped := a.eligible()
	// the rate is read with the distinct-scope count (the criteria's matrix:
	// it "travels with the rate")
	return map[string]any{"status": "ASSESSABLE", "rate": percent(scoped, eligible), "scoped": scoped, "eligible": eligible, "distinct_scopes": a.distinct}
}

func (a *audit) unscoped() (map[string]any, string) {
	eligible, scoped := a.eligible()
	rate := percent(eligible-scoped, eligible)
	return map[string]any{"status": "ASSESSABLE", "rate": rate, "unscoped": eligible - scoped, "eligible": eligible, "distinct_scopes": a.distinct}, rate.(string)
}

// markers (ANNEX A-7).

func (a *audit) m1(r *Record) bool {
	for _, f := range []fields{r.f, r.f.object("metadata")} {
		if f == nil {
			continue
		}
		if f.isTrue("shared") {
			return true
		}
		if s, ok := f.str("sharing"); ok && s == "global" {
			return true
		}
	}
	return false
}

// markedLive: a live, scoped (P0), non-global record carrying a marker.
func (a *audit) markedLive(i int) bool {
	s := a.st[i]
	return s.live && !s.scope.None() && !s.scope.Global() && a.covered(i)
}

func (a *audit) covered(i int) bool {
	r, s := a.e.Records[i], a.st[i]
	return a.m1(r) ||
		(!s.scope.None() && s.scope.Set == nil && a.manifest.isGlobalScope[s.scope.Value()]) ||
		a.manifest.isGlobalContent[r.Content] ||
		a.manifest.isGlobalClaim[r.ID] ||
		(r.f.set("origin_claim_id") && a.resolves(r))
}

func (a *audit) nonSharing(i int) bool {
	r, s := a.e.Records[i], a.st[i]
	for _, f := range []fields{r.f, r.f.object("metadata")} {
		if f != nil && f.isFalse("shared") {
			return true
		}
	}
	return !s.scope.None() && s.scope.Set == nil && a.manifest.isPrivateScope[s.scope.Value()]
}

func (a *audit) malformedMarker(r *Record) bool {
	for _, f := range []fields{r.f, r.f.object("metadata")} {
		if f != nil && f.set("shared") && !f.isTrue("shared") && !f.isFalse("shared") {
			return true
		}
	}
	if r.f.set("origin_claim_id") {
		if id, ok := r.f.str("origin_claim_id"); !ok || id == "" {
			return true
		}
	}
	if r.f.set("origin_scope") {
		if _, ok := r.f.str("origin_scope"); !ok {
			return true
		}
	}
	return false
}

// resolves follows origin_claim_id to its root (M4).
func (a *audit) resolves(copy *Record) bool {
	if r := a.resolved[copy.Index]; r != 0 {
		return r == 1
	}
	ok := a.follow(copy)
	a.resolved[copy.Index] = 2
	if ok {
		a.resolved[copy.Index] = 1
	}
	return ok
}

func (a *audit) follow(copy *Record) bool {
	limit := a.keyCount[copy.Content]
	// the ids met on this walk, as a stamp on the record each names (an
	// id names one record, byID's): no map to fill per walk
	a.walk++
	seen := func(id string) bool { return a.walked[a.byID[id].Index] == a.walk }
	a.walked[a.byID[copy.ID].Index] = a.walk
	cur := copy
	for hops := 0; ; hops++ {
		oid, ok := cur.f.str("origin_claim_id")
		if !ok || oid == "" || hops >= limit {
			return false
		}
		if a.manifest.isGlobalClaim[oid] {
			return true
		}
		origin := a.byID[oid]
		if origin == nil || origin.Content != cur.Content || seen(oid) {
			return false
		}
		if cur.f.set("origin_scope") {
			if os, ok := cur.f.str("origin_scope"); !ok || os != a.st[origin.Index].scope.Value() {
				return false
			}
		}
		a.walked[origin.Index] = a.walk
		if !origin.f.set("origin_claim_id") {
			return true
		}
		cur = origin
	}
}

type member struct {
	ID    string `json:"id"`
	Scope any    `json:"scope"`
}

// clusters computes factor 3 and the figures coverage shares with it.
func (a *audit) clusters() (factor map[string]any, undeclared int, b5NotRun []int) {
	groups := map[string][]int{}
	var order []string
	for i, r := range a.e.Records {
		s := a.st[i]
		if !s.live || s.scope.None() || s.template {
			continue
		}
		if _, ok := groups[r.Content]; !ok {
			order = append(order, r.Content)
		}
		groups[r.Content] = append(groups[r.Content], i)
	}
	counts := map[string]int{"marked shared": 0, "undeclared": 0, notAssessable: 0, "template lineage": 0}
	list := []map[string]any{}
	for _, key := range order {
		idx := groups[key]
		var copies, globals []int
		for _, i := range idx {
			if a.st[i].scope.Global() {
				globals = append(globals, i)
			} else {
				copies = append(copies, i)
			}
		}
		if !a.candidate(copies) {
			continue
		}
		c := a.classify(copies, len(list), &b5NotRun)
		c["members"] = a.members(copies)
		c["global_members"] = a.members(globals)
		c["distinct_scopes"] = a.distinctAmong(copies)
		counts[c["classification"].(string)]++
		list = append(list, c)
	}
	live := a.live
	marked := 0
	for i := range a.e.Records {
		if a.markedLive(i) {
			marked++
		}
	}
	return map[string]any{
		"status": "ASSESSABLE", "candidates": len(list),
		"marked_shared": counts["marked shared"], "undeclared": counts["undeclared"], "ambiguous": counts[notAssessable],
		"template_lineage": counts["template lineage"],
		"marked_live":      marked, "live_records": live, "marked_share": percent(marked, live),
		"clusters": list,
	}, counts["undeclared"], b5NotRun
}

func (a *audit) candidate(copies []int) bool {
	if a.e.Family == "letta" {
		for x := range copies {
			for y := x + 1; y < len(copies); y++ {
				if a.st[copies[x]].scope.Disjoint(a.st[copies[y]].scope) {
					return true
				}
			}
		}
		return false
	}
	return a.distinctAmong(copies) >= 2
}

func (a *audit) distinctAmong(idx []int) int {
	seen := map[string]bool{}
	for _, i := range idx {
		seen[a.st[i].scope.Identity()] = true
	}
	return len(seen)
}

func (a *audit) members(idx []int) []member {
	out := make([]member, 0, len(idx))
	for _, i := range idx {
		out = append(out, member{ID: a.e.Records[i].ID, Scope: a.st[i].scope.Print()})
	}
	return out
}

// classify applies the decision precedence to one candidate's copies.
func (a *audit) classify(copies []int, index int, b5NotRun *[]int) map[string]any {
	ambiguous := func(reason string) map[string]any {
		return map[string]any{"classification": notAssessable, "reason": reason}
	}
	for _, i := range copies {
		if a.malformedMarker(a.e.Records[i]) {
			return ambiguous(reasonMalformed)
		}
	}
	coveredN := 0
	scopeLists := func(i int, set map[string]bool) bool {
		s := a.st[i].scope
		return !s.None() && s.Set == nil && set[s.Value()]
	}
	for _, i := range copies {
		cov := a.covered(i)
		if cov {
			coveredN++
		}
		if (cov && a.nonSharing(i)) || (scopeLists(i, a.manifest.isGlobalScope) && scopeLists(i, a.manifest.isPrivateScope)) {
			return ambiguous(reasonContradicts)
		}
	}
	for _, i := range copies {
		r := a.e.Records[i]
		if r.f.set("origin_claim_id") && !a.resolves(r) {
			return ambiguous(reasonPointer)
		}
	}
	if a.e.Family != "letta" {
		for _, i := range copies[1:] {
			if a.st[i].scope.KeySet() != a.st[copies[0]].scope.KeySet() {
				return ambiguous(reasonPartition)
			}
		}
	}
	all, none := coveredN == len(copies), coveredN == 0
	sources, b5 := map[string]bool{}, true
	for _, i := range copies {
		src, ok := a.e.Records[i].f.str("source")
		if !ok {
			b5 = false
			break
		}
		sources[src] = true
	}
	disagree := b5 && len(sources) >= 2
	if !b5 {
		*b5NotRun = append(*b5NotRun, index)
	}
	if disagree && all {
		c := ambiguous(reasonAttribution)
		ids := []string{}
		for _, i := range copies {
			ids = append(ids, a.e.Records[i].ID)
		}
		c["referred_to_scope_conflicts"] = ids
		return c
	}
	if !all && !none {
		return ambiguous(reasonPartialCover)
	}
	if a.e.Family == "letta" && a.sameLineage(copies) {
		return map[string]any{"classification": "template lineage"}
	}
	if all {
		return map[string]any{"classification": "marked shared", "label": SharedLabel}
	}
	c := map[string]any{"classification": "undeclared", "label": UndeclaredLabel}
	if disagree {
		c["distinct_sources"] = len(sources)
	}
	return c
}

func (a *audit) sameLineage(copies []int) bool {
	for _, field := range []string{"template_id", "base_template_id"} {
		first, ok := a.e.Records[copies[0]].f.str(field)
		if !ok || first == "" {
			continue
		}
		same := true
		for _, i := range copies[1:] {
			if v, ok := a.e.Records[i].f.str(field); !ok || v != first {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// conflicts computes factor 4 (ANNEX A-8).
func (a *audit) conflicts() (map[string]any, int) {
	sub := map[string][]string{"attributed_vs_storage": {}, "history_vs_storage": {}, "episode_groups": {}, "endpoint_groups": {}}
	for i, r := range a.e.Records {
		storage, hasStorage := r.f.str("storage_scope")
		if !hasStorage && !a.st[i].scope.None() {
			storage, hasStorage = a.st[i].scope.Value(), true
		}
		for field, name := range map[string]string{"attributed_scope": "attributed_vs_storage", "history_scope": "history_vs_storage"} {
			if !r.f.set(field) {
				continue
			}
			v, ok := r.f.str(field)
			if !ok || !hasStorage || v != storage {
				sub[name] = append(sub[name], r.ID)
			}
		}
		group, hasGroup := r.f.str("group_id")
		for field, name := range map[string]string{"episode_group_ids": "episode_groups", "endpoint_group_ids": "endpoint_groups"} {
			vals, all, ok := r.f.strings(field)
			if !ok {
				continue
			}
			conflict := !all // a non-string value never equals a group_id
			for _, v := range vals {
				if !hasGroup || v != group {
					conflict = true
				}
			}
			if conflict {
				sub[name] = append(sub[name], r.ID)
			}
		}
	}
	total := 0
	out := map[string]any{"status": "ASSESSABLE"}
	for name, ids := range sub {
		out[name] = map[string]any{"conflicts": len(ids), "record_ids": ids}
		total += len(ids)
	}
	out["total"] = total
	return out, total
}

// duplicates computes factor 5 (ANNEX A-9).
func (a *audit) duplicates() (map[string]any, int) {
	type group struct {
		first int
		ids   []string
		scope any
	}
	groups := map[string]*group{}
	for i, r := range a.e.Records {
		s := a.st[i]
		if !s.live || s.contested {
			continue
		}
		k := s.scope.Identity() + "\x02" + r.Content
		g := groups[k]
		if g == nil {
			g = &group{first: i, scope: s.scope.Print()}
			groups[k] = g
		}
		g.ids = append(g.ids, r.ID)
	}
	excess := 0
	var dup []*group
	for _, g := range groups {
		if n := len(g.ids); n >= 2 {
			excess += n - 1
			dup = append(dup, g)
		}
	}
	sort.Slice(dup, func(i, j int) bool { return dup[i].first < dup[j].first })
	clusters := make([]map[string]any, 0, len(dup))
	for _, g := range dup {
		clusters = append(clusters, map[string]any{"scope": g.scope, "count": len(g.ids), "record_ids": g.ids})
	}
	return map[string]any{"status": "ASSESSABLE", "excess": excess, "live_records": a.live, "rate": percent(excess, a.live), "clusters": clusters}, excess
}
