package sdk

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// plainUTF16 is RFC 8785's order read literally: both strings as UTF-16
// code units, compared unit by unit.
func plainUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// CompareUTF16 orders as the literal rule does, on strings mixing ASCII,
// BMP characters on either side of the surrogate range, characters above
// U+FFFF, and bytes that are not UTF-8.
func TestCompareUTF16IsTheLiteralOrder(t *testing.T) {
	pieces := []string{"a", "b", "é", "\u00ff", "\ud7ff", "\ue000", "\uffff", "\ufffd", "\U00010000", "\U0001f600", "\U0010ffff", "\xff", "\x80", "\xe2\x82", ""}
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var sb strings.Builder
		for range r.IntN(5) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		return sb.String()
	}
	for range 200000 {
		a, b := word(), word()
		if r.IntN(4) == 0 {
			b = a + word() // a prefix
		}
		if got, want := CompareUTF16(a, b), plainUTF16(a, b); got != want {
			t.Fatalf("CompareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

// BenchmarkSortNonASCIIKeys: 100,000 member names with a non-ASCII first
// character, sorted as JCS sorts them.
func BenchmarkSortNonASCIIKeys(b *testing.B) {
	keys := make([]string, 100000)
	for i := range keys {
		keys[i] = "é" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune(0x4e00+i%5000))
	}
	for b.Loop() {
		k := slices.Clone(keys)
		slices.SortFunc(k, CompareUTF16)
	}
}
