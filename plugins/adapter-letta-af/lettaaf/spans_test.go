package lettaaf

import (
	"encoding/json"
	"testing"

	"github.com/assay-audit/assay/sdk/adaptertest"
)

// Asked as the SDK's families ask, every text goes back as a span of the
// record, escaped ones too: content parts, tool-call arguments, tool
// returns.
func TestEscapedTextsGoBackAsSpans(t *testing.T) {
	texts := []string{"line one\nline \"two\" é\t<&>", `{"q": "x\ny"}`, "a\u2028b \\ c"}
	rec, _ := json.Marshal(map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": texts[0]}}},
		map[string]any{"role": "assistant", "content": []any{}, "tool_calls": []any{
			map[string]any{"id": "c1", "function": map[string]any{"name": "f", "arguments": texts[1]}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "tool_returns": []any{map[string]any{"func_response": texts[2]}}},
	}})
	adaptertest.TextsAsSpans(t, Adapter{}, rec, texts)
}
