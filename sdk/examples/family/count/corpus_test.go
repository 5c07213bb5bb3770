package count

import (
	"testing"

	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/examples/adapter/lines"
	"github.com/assay-audit/assay/sdk/familytest"
)

// The corpus a host runs before it serves the family, run here in
// process with the adapter's engine: the host's own answer assembly,
// self-check and comparison, then the custody check (a canary planted in
// every string must not come back outside the exempt members).
func TestTheCorpusInProcess(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r := familytest.RunCorpus(t, f, corpus, familytest.WithAdapters(sdk.LocalAdapters{"example-lines": lines.Adapter{}}))
	if r.Cases == 0 || r.Passed != r.Cases {
		t.Errorf("%d of %d cases passed", r.Passed, r.Cases)
	}
}
