package settlementevidence_test

import (
	"testing"

	settlementevidence "github.com/assay-audit/assay/criteria/settlement-evidence"
	"github.com/assay-audit/assay/plugins/lifecycle-analytics/lifecycle"
	"github.com/assay-audit/assay/sdk/criteriatest"
	"github.com/assay-audit/assay/sdk/familytest"
)

// The served document is the published one with only the corpus pin
// changed, and that pin is the shipped corpus's.
func TestServedDocumentIsThePublishedOneRepinned(t *testing.T) {
	criteriatest.Repinned(t, settlementevidence.Document, "criteria/settlement-evidence-v1.json", "../../corpus/settlement-evidence/corpus.json")
}

// The words of the host's baseline of verdict words the family waives are
// the ones this ANNEX states, each with the same reason.
func TestTheFamilysVerdictWaiversAreTheAnnexs(t *testing.T) {
	f, err := lifecycle.New()
	if err != nil {
		t.Fatal(err)
	}
	familytest.WaiversStatedIn(t, f.Describe(), "ANNEX.md")
}
