package hygiene

import (
	"testing"

	"github.com/assay-audit/assay/sdk/familytest"
)

// The family's corpus passes whole in process, custody included: the kit
// an outside author runs (familytest.RunCorpus).
func TestTheCorpusInProcess(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	familytest.RunCorpus(t, f, f.Describe().GetCorpus()) // each failure is the test's
}
