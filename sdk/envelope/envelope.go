// Package envelope is how a host makes an answer of a family's body: its
// own common members around the family's, the pre-signing self-check over
// both. The host's server and a family author's in-process corpus run
// (familytest.RunCorpus) call the same functions, so what passes one
// passes the other.
package envelope

import (
	"errors"
	"maps"
	"time"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/selfcheck"
)

// Answer kinds: the common member "kind".
const (
	KindPrecheck        = "precheck"
	KindReport          = "report"
	KindRefusal         = "refusal"
	KindCouldNotMeasure = "could_not_measure"
)

// The host's refusal an author's corpus meets without a host (a body over
// the criteria's cap), and the text a route no op serves answers with.
const (
	BodyCapCode    = "body_bytes_cap"
	BodyCapMessage = "request body exceeds the published cap"
	NotCovered     = "NOT COVERED"
)

// Errors Assemble returns besides the self-check's (selfcheck.ErrTripped).
var (
	ErrNotObject = errors.New("family body is not a JSON object")
	ErrOverrides = errors.New("family body overrides a common member")
	ErrCommon    = errors.New("common members are not serialisable")
)

// Common is the host's members of every answer of a service: which
// service, criteria and corpus, which route (op is "precheck" on the free
// route), what kind of answer, and when it was issued (to the second).
// A paid route's answer adds "payment", the host's alone.
func Common(d *pb.FamilyDescription, op, kind string, issued time.Time) map[string]any {
	return map[string]any{
		"service":         d.GetService(),
		"service_version": d.GetServiceVersion(),
		"criteria":        map[string]any{"id": d.GetCriteriaId(), "revision": d.GetCriteriaRevision()},
		"corpus":          map[string]any{"id": d.GetCorpusId(), "sha256": d.GetCorpusSha256()},
		"op":              op,
		"kind":            kind,
		"issued_at":       sdk.Instant(issued),
	}
}

// Assemble merges common with the family's body (JSON, normally as the
// SDK sent it: canonical) and runs the self-check over both. The body's
// members enter the answer as slices of it, checked and signed without
// being decoded into a tree. A family member named as a common one is
// refused: the host's members are the host's.
func Assemble(check *selfcheck.Checker, familyBody []byte, common map[string]any) (map[string]any, error) {
	answer := map[string]any{}
	if len(familyBody) > 0 {
		doc, err := sdk.Canonicalize(familyBody)
		if err != nil || doc[0] != '{' {
			return nil, ErrNotObject
		}
		members, err := check.Check(doc)
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			answer[m.Name] = sdk.RawCanonical(doc[m.Start:m.End])
		}
	}
	for k := range common {
		if _, clash := answer[k]; clash {
			return nil, ErrOverrides
		}
	}
	// the host's own members pass the same check
	doc, err := sdk.CanonicalJSON(common)
	if err != nil {
		return nil, ErrCommon // static: the rule is logged, never a value
	}
	if _, err := check.Check(doc); err != nil {
		return nil, err
	}
	maps.Copy(answer, common)
	return answer, nil
}
