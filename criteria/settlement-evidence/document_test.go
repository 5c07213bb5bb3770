package settlementevidence

import (
	"testing"

	"github.com/assay-audit/assay/sdk/criteriatest"
)

// The served document is the published one with only the corpus pin
// changed, and that pin is the shipped corpus's.
func TestServedDocumentIsThePublishedOneRepinned(t *testing.T) {
	criteriatest.Repinned(t, Document, "criteria/settlement-evidence-v1.json", "../../corpus/settlement-evidence/corpus.json")
}
