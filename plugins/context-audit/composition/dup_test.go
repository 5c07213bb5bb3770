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
	groups := c.ExactDuplicates()
	// blocks 0 and 2: N(s) equal; 2 is the excess (E of "...today " = ceil(51/4) = 13)
	if len(groups) != 1 || !slices.Equal(groups[0].Blocks, []int{0, 2}) || groups[0].ExcessCount != 1 || groups[0].ExcessE != 13 {
		t.Fatalf("exact groups %+v", groups)
	}
	r := c.NearDuplicates()
	// 0-1 and 1-2 are near (identical shingles after lowercasing, N(s) differ); 0-2 is exact, dropped
	if r.Count != 2 || r.Eligible != 3 || !slices.Equal(r.Pairs, []nearjoin.Pair{{I: 0, J: 1}, {I: 1, J: 2}}) {
		t.Errorf("near pairs %+v", r)
	}
}

// 30 blocks that differ only in case: every pair is near (same shingles
// after lowercasing) and none is exact, so 435 pairs, of which the first
// 100 by (i, j) are listed: (0,1) … (0,29) is 29, (1,2) … (1,29) 28,
// (2,3) … (2,29) 27: 84, then (3,4) … (3,19): 16 more.
func TestNearListingIsBoundedAndOrdered(t *testing.T) {
	var blocks []*pb.Block
	for i := 0; i < 30; i++ {
		w := []byte("aaaaa bbbbb ccccc ddddd")
		for k := 0; k < 5; k++ {
			if i&(1<<k) != 0 {
				w[k] = 'A'
			}
		}
		blocks = append(blocks, txt("text", "", string(w)))
	}
	c := Classify("generic-message-list", &pb.SessionRecord{Level: "L0", Messages: []*pb.Message{{RoleRaw: "user", Blocks: blocks}}})
	r := c.NearDuplicates()
	if r.Count != 435 || len(r.Pairs) != ListingBound {
		t.Fatalf("count %d, listed %d", r.Count, len(r.Pairs))
	}
	if r.Pairs[0] != (nearjoin.Pair{I: 0, J: 1}) || r.Pairs[84] != (nearjoin.Pair{I: 3, J: 4}) || r.Pairs[99] != (nearjoin.Pair{I: 3, J: 19}) {
		t.Errorf("listing %v … %v … %v", r.Pairs[0], r.Pairs[84], r.Pairs[99])
	}
}
