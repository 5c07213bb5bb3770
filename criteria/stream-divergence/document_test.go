package streamdivergence_test

import (
	"testing"

	streamdivergence "github.com/assay-audit/assay/criteria/stream-divergence"
	"github.com/assay-audit/assay/plugins/stream-divergence/divergence"
	"github.com/assay-audit/assay/sdk/criteriatest"
	"github.com/assay-audit/assay/sdk/familytest"
)

// The served document is the published one with only the corpus pin
// changed, and that pin is the shipped corpus's.
func TestServedDocumentIsThePublishedOneRepinned(t *testing.T) {
	criteriatest.Repinned(t, streamdivergence.Document, "criteria/stream-divergence-v1.json", "../../corpus/stream-divergence/corpus.json")
}

// The words of the host's baseline of verdict words the family waives are
// the ones this ANNEX states, each with the same reason.
func TestTheFamilysVerdictWaiversAreTheAnnexs(t *testing.T) {
	f, err := divergence.New()
	if err != nil {
		t.Fatal(err)
	}
	familytest.WaiversStatedIn(t, f.Describe(), "ANNEX.md")
}
