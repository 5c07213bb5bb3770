package composition

import (
	"crypto/sha256"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/assay-audit/assay/plugins/context-audit/nearjoin"
)

// whiteSpace is Unicode White_Space (ANNEX C-12); Go's unicode.IsSpace is
// exactly that property.
func whiteSpace(r rune) bool { return unicode.IsSpace(r) }

// Normalise is M08's N(s): NFC, CRLF and CR to LF, trimmed, internal
// whitespace runs to one space, case preserved.
func Normalise(s string) string {
	s = norm.NFC.String(s)
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	var b strings.Builder
	space := false
	for _, r := range strings.TrimFunc(s, whiteSpace) {
		if whiteSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ExactGroup is one M08 group: block indexes, the kept one first.
type ExactGroup struct {
	Blocks      []int
	ExcessE     int // the non-kept members' own E
	ExcessCount int
}

// ExactDuplicates groups sized blocks by SHA-256 of N(text) (the digest is
// internal and never printed); empty N(s) is excluded (ANNEX C-12).
func (c *Classified) ExactDuplicates(texts []string) []ExactGroup {
	byKey := map[[32]byte]*ExactGroup{}
	var order [][32]byte
	for i, b := range c.Blocks {
		if !b.Sized {
			continue
		}
		n := Normalise(texts[i])
		if n == "" {
			continue
		}
		k := sha256.Sum256([]byte(n))
		g := byKey[k]
		if g == nil {
			g = &ExactGroup{}
			byKey[k] = g
			order = append(order, k)
		}
		g.Blocks = append(g.Blocks, b.Index)
		if len(g.Blocks) > 1 {
			g.ExcessE += b.E
			g.ExcessCount++
		}
	}
	var out []ExactGroup
	for _, k := range order {
		if g := byKey[k]; len(g.Blocks) >= 2 {
			out = append(out, *g)
		}
	}
	return out
}

// quoteOrPunct are the characters M09 strips from a token's ends.
const quoteOrPunct = ".,;:!?()[]{}\"'`\u2018\u2019\u201c\u201d"

// Tokens is M09's word list: N(s) lowercased per code point (simple
// mapping), split on single spaces, ends stripped, empties dropped.
func Tokens(s string) []string {
	n := strings.Map(unicode.ToLower, Normalise(s))
	var out []string
	for _, w := range strings.Split(n, " ") {
		if w = strings.Trim(w, quoteOrPunct); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// ListingBound is how many M09 pairs a report lists (the count is exact).
const ListingBound = 100

// NearDuplicates is M09: pairs of blocks whose 3-gram shingle sets reach
// Jaccard 0.80, exact-duplicate pairs (equal N(s)) dropped; it returns the
// exact count and the first ListingBound pairs by (lower, higher) index.
func NearDuplicates(texts []string) (int64, []nearjoin.Pair) {
	ids := map[string]uint32{}
	sets := make([][]uint32, len(texts))
	norms := make([]string, len(texts))
	for i, t := range texts {
		norms[i] = Normalise(t)
		tok := Tokens(t)
		for k := 0; k+3 <= len(tok); k++ {
			sh := tok[k] + " " + tok[k+1] + " " + tok[k+2]
			id, ok := ids[sh]
			if !ok {
				id = uint32(len(ids))
				ids[sh] = id
			}
			sets[i] = append(sets[i], id)
		}
	}
	var count int64
	var list []nearjoin.Pair
	nearjoin.Join(sets, func(p nearjoin.Pair) {
		if norms[p.I] == norms[p.J] {
			return // an exact pair: M08's
		}
		count++
		list = append(list, p)
	})
	slices.SortFunc(list, func(a, b nearjoin.Pair) int {
		if a.I != b.I {
			return a.I - b.I
		}
		return a.J - b.J
	})
	if len(list) > ListingBound {
		list = list[:ListingBound]
	}
	return count, list
}
