package lettaaf

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// toolsRecord is an agent file with n tools, the agent's tool_ids naming
// every other one (and n/2 ids no tool has), and one message.
func toolsRecord(n int) []byte {
	tools := make([]map[string]any, n)
	var ids []string
	for i := range tools {
		tools[i] = map[string]any{"id": "t" + strconv.Itoa(i), "name": "f"}
		if i%2 == 0 {
			ids = append(ids, "t"+strconv.Itoa(i), "u"+strconv.Itoa(i))
		}
	}
	b, _ := json.Marshal(map[string]any{"tools": tools, "agents": []any{map[string]any{
		"name": "a", "tool_ids": ids, "messages": []any{map[string]any{"id": "m", "role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}}}}})
	return b
}

// The agent's tool_ids choose its tool definitions (ANNEX C-8): of n
// tools, the n/2 its ids name, in the tools' order.
func TestToolIDsChooseTheDefinitions(t *testing.T) {
	rec := Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: "letta-af", Record: toolsRecord(1000)}).GetRecord()
	if rec == nil || len(rec.GetMessages()) == 0 || !rec.GetMessages()[0].GetSchema() {
		t.Fatalf("no schema pseudo-message: %v", rec)
	}
	if n := len(rec.GetMessages()[0].GetBlocks()); n != 500 {
		t.Errorf("%d tool definitions, want 500", n)
	}
}

// BenchmarkAdaptManyTools: 100,000 tools and 100,000 tool ids (about
// 4 MiB), within the body cap.
func BenchmarkAdaptManyTools(b *testing.B) {
	rec := toolsRecord(100000)
	if len(rec) > 5<<20 {
		b.Fatalf("%d bytes", len(rec))
	}
	for b.Loop() {
		Adapter{}.Adapt(context.Background(), &pb.AdaptRequest{FormatId: "letta-af", Record: rec})
	}
}
