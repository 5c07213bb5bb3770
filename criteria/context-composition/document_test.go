package contextcomposition_test

import (
	"testing"

	contextcomposition "github.com/assay-audit/assay/criteria/context-composition"
	"github.com/assay-audit/assay/plugins/context-audit/composition"
	"github.com/assay-audit/assay/sdk/criteriatest"
	"github.com/assay-audit/assay/sdk/familytest"
)

// The served document is the published one with only the corpus pin
// changed, and that pin is the shipped corpus's.
func TestServedDocumentIsThePublishedOneRepinned(t *testing.T) {
	criteriatest.Repinned(t, contextcomposition.Document, "criteria/context-composition-v1.json", "../../corpus/context-composition/corpus.json")
}

// The words of the host's baseline of verdict words the family waives are
// the ones this ANNEX states, each with the same reason.
func TestTheFamilysVerdictWaiversAreTheAnnexs(t *testing.T) {
	f, err := composition.New()
	if err != nil {
		t.Fatal(err)
	}
	familytest.WaiversStatedIn(t, f.Describe(), "ANNEX.md")
}
