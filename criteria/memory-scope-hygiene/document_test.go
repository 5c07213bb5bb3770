package memoryscopehygiene_test

import (
	"testing"

	memoryscopehygiene "github.com/assay-audit/assay/criteria/memory-scope-hygiene"
	"github.com/assay-audit/assay/plugins/scope-hygiene/hygiene"
	"github.com/assay-audit/assay/sdk/criteriatest"
	"github.com/assay-audit/assay/sdk/familytest"
)

// The served document is the published one with only the corpus pin
// changed, and that pin is the shipped corpus's.
func TestServedDocumentIsThePublishedOneRepinned(t *testing.T) {
	criteriatest.Repinned(t, memoryscopehygiene.Document, "criteria/memory-scope-hygiene-v1.json", "../../corpus/memory-scope-hygiene/corpus.json")
}

// The words of the host's baseline of verdict words the family waives are
// the ones this ANNEX states, each with the same reason.
func TestTheFamilysVerdictWaiversAreTheAnnexs(t *testing.T) {
	f, err := hygiene.New()
	if err != nil {
		t.Fatal(err)
	}
	familytest.WaiversStatedIn(t, f.Describe(), "ANNEX.md")
}
