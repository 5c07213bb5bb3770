package hygiene

import (
	"testing"

	"github.com/assay-audit/assay/sdk/familytest"
)

// The family's corpus (written by the independent generator, pinned by
// its criteria) passes whole in process through the host's own answer
// assembly, self-check and comparison, and no answer prints a planted
// string outside the criteria's exempt members: the kit an outside
// author runs (familytest.RunCorpus), on the family as it is served.
func TestTheCorpusInProcess(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := familytest.RunCorpus(t, f, f.Describe().GetCorpus())
	if r.Cases == 0 || r.Passed != r.Cases || r.Custody.Sent == 0 {
		t.Errorf("%d of %d cases passed; %d planted requests", r.Passed, r.Cases, r.Custody.Sent)
	}
}
