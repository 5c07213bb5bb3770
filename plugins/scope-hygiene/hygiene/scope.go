package hygiene

import (
	"slices"
	"strings"
)

// Scope is a record's scope (ANNEX A-4): the present declared keys with
// their values, or for Letta the attached_to set.
type Scope struct {
	Keys   []string // present declared keys, declared order
	Values []string // their values
	Set    []string // Letta: sorted, distinct attached_to values
}

// None reports a record without a scope.
func (s Scope) None() bool { return len(s.Values) == 0 && len(s.Set) == 0 }

// Value is the scope value: the present values joined by "|".
func (s Scope) Value() string { return strings.Join(s.Values, "|") }

// Identity distinguishes scopes: same present keys with the same values
// (Letta: the same set).
func (s Scope) Identity() string {
	if s.Set != nil {
		return "set\x00" + strings.Join(s.Set, "\x00")
	}
	return strings.Join(s.Keys, "\x00") + "\x01" + strings.Join(s.Values, "\x00")
}

// KeySet names the present keys (N5).
func (s Scope) KeySet() string { return strings.Join(s.Keys, "\x00") }

// Global reports the reserved global scope (M2; never Letta).
func (s Scope) Global() bool { return s.Set == nil && len(s.Values) > 0 && s.Value() == "global" }

// Disjoint reports two Letta scope sets with no common member: one merge
// of the two sorted sets.
func (s Scope) Disjoint(o Scope) bool {
	a, b := s.Set, o.Set
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] == b[0]:
			return false
		case a[0] < b[0]:
			a = a[1:]
		default:
			b = b[1:]
		}
	}
	return true
}

// Print is how a scope appears in a report (ANNEX A-1).
func (s Scope) Print() any {
	switch {
	case s.None():
		return nil
	case s.Set != nil:
		return s.Set
	case s.Global():
		return "global"
	}
	m := make(map[string]any, len(s.Keys))
	for i, k := range s.Keys {
		m[k] = s.Values[i]
	}
	return m
}

// state is what the factors read about each record.
type state struct {
	scope       Scope
	live        bool
	split       bool
	contested   bool
	template    bool
	sourcePsg   bool
	hasChecked  bool // carries a scope_conflicts field
	eligibleOut bool // excluded from the scope_presence / unscoped_rate denominators
}

// scopeOf is r's scope; keyAt numbers the declared keys in declared order
// (its first place, should a key repeat).
func (e *Export) scopeOf(r *Record, keyAt map[string]int) Scope {
	if e.Family == "letta" {
		vals, _, _ := r.f.strings("attached_to")
		set := make([]string, 0, len(vals))
		for _, v := range vals {
			if v != "" {
				set = append(set, v)
			}
		}
		slices.Sort(set)
		set = slices.Compact(set) // distinct
		if len(set) == 0 {
			return Scope{}
		}
		return Scope{Set: set}
	}
	// the record's members that are declared keys, in declared order: a
	// record has a few members, a manifest may declare tens of thousands
	// of keys
	keys := e.DeclaredKeys
	if len(keys) > len(r.f) {
		var at []int
		for name := range r.f {
			if p, ok := keyAt[name]; ok {
				at = append(at, p)
			}
		}
		if p, ok := keyAt["run_id"]; ok && e.Family == "mem0" && !slices.Contains(at, p) {
			at = append(at, p) // session_id stands in for a run_id that is absent
		}
		slices.Sort(at)
		keys = make([]string, len(at))
		for i, p := range at {
			keys[i] = e.DeclaredKeys[p]
		}
	}
	var s Scope
	for _, k := range keys {
		v, ok := r.f.str(k)
		if (!ok || v == "") && e.Family == "mem0" && k == "run_id" {
			v, ok = r.f.str("session_id")
		}
		if ok && v != "" {
			s.Keys = append(s.Keys, k)
			s.Values = append(s.Values, v)
		}
	}
	return s
}

var deadStates = []string{"superseded", "deleted", "expired"}

// states derives scope and liveness for every record (ANNEX ).
func (e *Export) states() []state {
	// only another record's supersedes ends a record (a record naming
	// itself does not)
	superseded := map[string]bool{}
	for _, r := range e.Records {
		if id, ok := r.f.str("supersedes"); ok && id != r.ID {
			superseded[id] = true
		}
		if ids, _, ok := r.f.strings("supersedes"); ok {
			for _, id := range ids {
				if id != r.ID {
					superseded[id] = true
				}
			}
		}
	}
	keyAt := make(map[string]int, len(e.DeclaredKeys))
	for p, k := range e.DeclaredKeys {
		if _, dup := keyAt[k]; !dup {
			keyAt[k] = p
		}
	}
	out := make([]state, len(e.Records))
	for i, r := range e.Records {
		st := &out[i]
		st.scope = e.scopeOf(r, keyAt)
		inv, exp := r.f.set("invalid_at"), r.f.set("expired_at")
		st.split = inv != exp
		lifecycle, _ := r.f.str("lifecycle_state")
		stateVal, _ := r.f.str("state")
		st.live = !superseded[r.ID] && !r.f.set("replaced_by") && !r.f.set("superseded_by") && !r.f.isTrue("is_deleted") &&
			!inv && !exp && !slices.Contains(deadStates, lifecycle) && !slices.Contains(deadStates, stateVal)
		st.contested = e.Family == "generic" && st.live && stateVal == "pending"
		if e.Family == "letta" {
			st.template = r.f.isTrue("is_template")
			st.sourcePsg = r.f.isTrue("source_passage") || (r.f.set("file_id") && st.scope.None())
			st.eligibleOut = st.template || st.sourcePsg
		}
		for _, name := range []string{"attributed_scope", "history_scope", "episode_group_ids", "endpoint_group_ids"} {
			st.hasChecked = st.hasChecked || r.f.set(name)
		}
	}
	return out
}
