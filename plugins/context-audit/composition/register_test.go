package composition

import (
	"slices"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Worked by hand: a letta-style record with a tool definition, a system
// prompt, a packed heartbeat under role user (P-SYS over P-USER), a tool
// call (P-TCALL over P-ASST), a search result under role tool (P-TRES over
// P-RETR), an empty block under an unknown role (P-OTHER, C-EMPTY) and a
// non-serialisable block (C-UNK). C(b) and E(b) are noted per line.
func TestClassifyRecord(t *testing.T) {
	rec := &pb.SessionRecord{Level: "L2", Messages: []*pb.Message{
		{Schema: true, Blocks: []*pb.Block{txt("tool_definition", "search", `{"name":"search"}`)}},                  // 17 cp, E 5, C-STRUCT
		{RoleRaw: "system", Blocks: []*pb.Block{txt("text", "", "You are helpful.")}},                               // 16, E 4, C-TEXT
		{RoleRaw: "user", Blocks: []*pb.Block{txt("heartbeat", "", `{"type":"heartbeat"}`)}},                        // 20, E 5, C-STRUCT
		{RoleRaw: "assistant", Blocks: []*pb.Block{txt("tool_call", "archival_memory_search", `{"query":"cats"}`)}}, // 16, E 4
		{RoleRaw: "tool", Blocks: []*pb.Block{txt("text", "archival_memory_search", "cats are nice")}},              // 13, E 4
		{RoleRaw: "critic", Blocks: []*pb.Block{txt("text", "", "")}},                                               // empty
		{RoleRaw: "user", Blocks: []*pb.Block{{KindRaw: "image", Content: &pb.Block_NonSerialisable{NonSerialisable: true}}}},
	}}
	c := Classify(shipped, "letta-af", rec)
	if c.Messages != 6 || c.SchemaBlocks != 1 || c.EmptyBlocks != 1 || c.PConflicts != 3 || c.CTotal != 82 || c.T != 22 {
		// conflicts: heartbeat (P-SYS/P-USER), tool call (P-TCALL/P-ASST), search result (P-TRES/P-RETR)
		t.Errorf("header facts: %+v", c)
	}
	for class, n := range map[string]int{PTdef: 1, PSys: 2, PTcall: 1, PTres: 1, POther: 1, PUser: 1} {
		if c.PCount[class] != n {
			t.Errorf("%s count %d, want %d", class, c.PCount[class], n)
		}
	}
	if c.CCount[CStruct] != 3 || c.CCount[CText] != 2 || c.CCount[CEmpty] != 1 || c.CCount[CUnk] != 1 {
		t.Errorf("axis C counts %v", c.CCount)
	}
	// nothing fires for the critic's block: its role and (at L2) its kind
	// "text" match no class list, so both are reported (ANNEX C-9)
	if !slices.Equal(c.OtherRaw, []string{"critic", "text"}) || c.UnknownEitherN != 1 || c.UnknownEitherE != 0 {
		t.Errorf("other raw %v, unknown %d/%d", c.OtherRaw, c.UnknownEitherN, c.UnknownEitherE)
	}
	if c.Cross[[2]string{PSys, CStruct}] != 1 || c.Cross[[2]string{PUser, CUnk}] != 1 {
		t.Errorf("cross %v", c.Cross)
	}
	if b, ok := c.Largest(); !ok || b.Index != 0 || b.E != 5 {
		t.Errorf("largest %+v (ties go to the lowest index)", b)
	}
	if got := Classify(shipped, "anthropic-messages", &pb.SessionRecord{Level: "L0"}); len(got.NotIdentifiable) != 5 {
		t.Error("structural classes are not identifiable at L0")
	}
}
