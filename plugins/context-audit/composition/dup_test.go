package composition

import (
	"slices"
	"testing"

	"github.com/assay-audit/assay/plugins/context-audit/nearjoin"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func TestNormalise(t *testing.T) {
	for in, want := range map[string]string{
		"  Hello\r\n\tWorld  ": "Hello World",
		"a\u00a0\u2003b":       "a b",       // NBSP and EM SPACE are White_Space
		"a\u200bb":             "a\u200bb",  // ZERO WIDTH SPACE is not
		"e\u0301":              "\u00e9",    // NFC
		"Case Kept":            "Case Kept", // case preserved
		"\r\r":                 "",
	} {
		if got := Normalise(in); got != want {
			t.Errorf("N(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Tokens(`"İstanbul," (big) ‘city’ …`); !slices.Equal(got, []string{"istanbul", "big", "city", "…"}) {
		t.Errorf("tokens %q", got) // U+0130 lowercases to U+0069 (simple mapping)
	}
}

func TestExactAndNearDuplicates(t *testing.T) {
	texts := []string{
		"the quick brown fox jumps over the lazy dog today",  // 0
		"The quick  brown fox jumps over the lazy dog today", // 1: not exact (case kept), near (lowercased) -> pair
		"the quick brown fox jumps over the lazy dog today ", // 2: exact with 0 after N(s)
		"",    // 3: empty, excluded
		"a b", // 4: fewer than 3 tokens, never paired
	}
	var blocks []*pb.Block
	for _, s := range texts {
		blocks = append(blocks, txt("text", "", s))
	}
	c := Classify("generic-message-list", &pb.SessionRecord{Level: "L0", Messages: []*pb.Message{{RoleRaw: "user", Blocks: blocks}}})
	groups := c.ExactDuplicates(texts)
	// blocks 0 and 2: N(s) equal; 2 is the excess (E of "...today " = ceil(51/4) = 13)
	if len(groups) != 1 || !slices.Equal(groups[0].Blocks, []int{0, 2}) || groups[0].ExcessCount != 1 || groups[0].ExcessE != 13 {
		t.Fatalf("exact groups %+v", groups)
	}
	n, list := NearDuplicates(texts)
	// 0-1 and 1-2 are near (identical shingles after lowercasing, N(s) differ); 0-2 is exact, dropped
	if n != 2 || !slices.Equal(list, []nearjoin.Pair{{I: 0, J: 1}, {I: 1, J: 2}}) {
		t.Errorf("near pairs %d %v", n, list)
	}
}
