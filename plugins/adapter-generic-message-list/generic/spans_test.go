package generic

import (
	"encoding/json"
	"testing"

	"github.com/assay-audit/assay/sdk/adaptertest"
)

// Asked as the SDK's families ask, every text goes back as a span of the
// record, escaped ones too.
func TestEscapedTextsGoBackAsSpans(t *testing.T) {
	texts := []string{"line one\nline \"two\" é", "<&> \\ \u2028", "plain"}
	var msgs []any
	for _, s := range texts {
		msgs = append(msgs, map[string]any{"role": "user", "text": s})
	}
	rec, _ := json.Marshal(map[string]any{"messages": msgs})
	adaptertest.TextsAsSpans(t, Adapter{}, rec, texts)
}
