package composition

import (
	"strings"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// A column placed before the "*" one maps a format's own words; every
// other format keeps the shipped words (ANNEX C-9a's example).
func TestClassListsMapANewFormatsWords(t *testing.T) {
	lists, err := ParseClassLists([]byte(`{"class_lists":"x","decided_in":"y","columns":[
	 {"formats":["gemini-generate-content"],"levels":["L0"],"reads":["role_raw"],
	  "classes":{"P-SYS":{"role_raw":["system"]},"P-USER":{"role_raw":["user"]},"P-ASST":{"role_raw":["model"]}}},
	 {"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],
	  "classes":{"P-USER":{"role_raw":["user"]},"P-ASST":{"role_raw":["assistant"]}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b := txt("text", "", "hello")
	for _, c := range []struct{ format, role, class string }{
		{"gemini-generate-content", "model", PAsst},
		{"gemini-generate-content", "assistant", POther},
		{"anthropic-messages", "model", POther},
		{"anthropic-messages", "assistant", PAsst},
		{"anthropic-messages", "system", POther}, // the "*" column here lists no P-SYS
	} {
		if got := lists.ClassifyP(c.format, "L0", c.role, false, b); got.Class != c.class {
			t.Errorf("%s role %s: %s, want %s", c.format, c.role, got.Class, c.class)
		}
	}
	// the column's reads: role only, so a kind is never reported
	if got := lists.ClassifyP("anthropic-messages", "L2", "critic", false, txt("mystery", "", "x")); got.Class != POther || len(got.Raw) != 1 {
		t.Errorf("reads role_raw only: %+v", got)
	}
}

// P-RETR's result_of_call_named fires only with the column's P-TRES test.
func TestClassListsResultOfCallNamed(t *testing.T) {
	b := &pb.Block{KindRaw: "text", Name: "archival_memory_search", Content: &pb.Block_Text{Text: "r"}}
	if got := shipped.ClassifyP("letta-af", "L2", "assistant", false, b); got.Class != PAsst || len(got.Losers) != 0 {
		t.Errorf("a block named like a search tool that is no tool result: %+v", got)
	}
	b.KindRaw = "tool_return"
	if got := shipped.ClassifyP("letta-af", "L2", "assistant", false, b); got.Class != PTres || len(got.Losers) != 2 || got.Losers[0] != PRetr {
		t.Errorf("a search result: %+v", got)
	}
}

// What the file may not say: each is refused, so no rule is dropped
// without a word.
func TestClassListsRefuseWhatTheyDoNotKnow(t *testing.T) {
	star := `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],"classes":{"P-USER":{"role_raw":["user"]}}}`
	for name, c := range map[string]string{
		"an unknown test member":   `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],"classes":{"P-USER":{"roles":["user"]}}}`,
		"a residual class":         `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],"classes":{"P-OTHER":{"role_raw":["x"]}}}`,
		"an unknown level":         `{"formats":["x"],"levels":["L3"],"reads":["role_raw"],"classes":{}},` + star,
		"reads without role":       `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["kind_raw"],"classes":{}}`,
		"an empty word":            `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],"classes":{"P-USER":{"role_raw":[""]}}}`,
		"a level with no star":     `{"formats":["*"],"levels":["L0","L1"],"reads":["role_raw"],"classes":{}}`,
		"a name given twice":       `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],"classes":{"P-USER":{"role_raw":["user"]},"P-USER":{"role_raw":["x"]}}}`,
		"a circular P-TRES":        `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],"classes":{"P-TRES":{"result_of_call_named":["x"]}}}`,
		"an unknown column member": `{"formats":["*"],"levels":["L0","L1","L2"],"reads":["role_raw"],"classes":{},"format":"x"}`,
	} {
		_, err := ParseClassLists([]byte(`{"class_lists":"x","decided_in":"y","columns":[` + c + `]}`))
		if err == nil || !strings.HasPrefix(err.Error(), "class lists") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParseClassLists([]byte(`{"class_lists":"x","decided_in":"y","columns":[` + star + `]}`)); err != nil {
		t.Errorf("the smallest valid lists: %v", err)
	}
}
