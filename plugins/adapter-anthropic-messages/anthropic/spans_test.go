package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/assay-audit/assay/sdk/adaptertest"
)

// Asked as the SDK's families ask, every text goes back as a span of the
// record, escaped ones too: the system prompt, string content, text and
// thinking blocks, a tool result's text.
func TestEscapedTextsGoBackAsSpans(t *testing.T) {
	texts := []string{"sys\té", "line one\nline \"two\"", "<&> \\ \u2028", "think\r\n", "result\n"}
	rec, _ := json.Marshal(map[string]any{"system": texts[0], "messages": []any{
		map[string]any{"role": "user", "content": texts[1]},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": texts[2]}, map[string]any{"type": "thinking", "thinking": texts[3]}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "u", "content": texts[4]}}},
	}})
	adaptertest.TextsAsSpans(t, Adapter{}, rec, texts)
}
