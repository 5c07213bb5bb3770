package composition

import (
	"testing"

	"github.com/assay-audit/assay/plugins/adapter-anthropic-messages/anthropic"
	"github.com/assay-audit/assay/plugins/adapter-generic-message-list/generic"
	"github.com/assay-audit/assay/plugins/adapter-letta-af/lettaaf"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/familytest"
)

// The family's corpus (written by the independent generator, pinned by
// its criteria) passes whole in process, each record read by the
// repository's adapters, through the host's own answer assembly,
// self-check and comparison, and no answer prints a planted string
// outside the criteria's exempt members: the kit an outside author runs
// (familytest.RunCorpus), on the family as it is served.
func TestTheCorpusInProcess(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	adapters := sdk.LocalAdapters{"anthropic-messages": anthropic.Adapter{}, "generic-message-list": generic.Adapter{}, "letta-af": lettaaf.Adapter{}}
	r := familytest.RunCorpus(t, f, f.Describe().GetCorpus(), familytest.WithAdapters(adapters))
	if r.Cases == 0 || r.Passed != r.Cases || r.Custody.Sent == 0 {
		t.Errorf("%d of %d cases passed; %d planted requests", r.Passed, r.Cases, r.Custody.Sent)
	}
}
