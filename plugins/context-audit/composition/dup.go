package composition

import (
	"container/heap"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/assay-audit/assay/plugins/context-audit/nearjoin"
)

// whiteSpace is Unicode White_Space (ANNEX C-12); Go's unicode.IsSpace is
// exactly that property.
func whiteSpace(r rune) bool { return unicode.IsSpace(r) }

// Normalise is M08's N(s): NFC, CRLF and CR to LF, trimmed, internal
// whitespace runs to one space, case preserved.
func Normalise(s string) string { return normaliseNFC(norm.NFC.String(s)) }

// normaliseNFC is N(s) of a text already in NFC. CR and LF are themselves
// whitespace, so folding line ends first changes nothing once runs become
// one space; the step is kept implicit. A text that is already normal
// (single spaces between words) is returned as itself, trimmed, without a
// copy: most prose is.
func normaliseNFC(s string) string {
	s = strings.TrimFunc(s, whiteSpace)
	if isNormalised(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
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

const (
	ones  = 0x0101010101010101
	lows  = 0x7f7f7f7f7f7f7f7f
	highs = 0x8080808080808080
)

// isNormalised reports a trimmed text whose only whitespace is single
// U+0020 characters.
func isNormalised(s string) bool {
	prevSpace := false
	for i := 0; i < len(s); {
		// eight ASCII bytes at a time, none a control character: then
		// only a space beside a space breaks the rule
		for ; i+8 <= len(s); i += 8 {
			v := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if (v|(v-ones*0x20)&^v)&highs != 0 {
				break
			}
			t := v ^ ones*' '
			sp := ^((t & lows) + lows | t | lows) // 0x80 in each byte that is a space
			if sp&(sp<<8) != 0 || prevSpace && sp&0x80 != 0 {
				return false
			}
			prevSpace = sp>>63 != 0
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == ' ':
				if prevSpace {
					return false
				}
				prevSpace = true
			case c >= '\t' && c <= '\r':
				return false
			default:
				prevSpace = false
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if whiteSpace(r) {
			return false
		}
		prevSpace = false
	}
	return true
}

// ExactGroup is one M08 group: block indexes, the kept one first.
type ExactGroup struct {
	Blocks      []int
	ExcessE     int // the non-kept members' own E
	ExcessCount int
}

// ExactDuplicates groups sized blocks by N(text), empty N(s) excluded
// (ANNEX C-12). The criteria group by the SHA-256 of N(s); grouping by
// N(s) itself gives the same groups (equal texts, equal digests) without
// hashing or copying 5 MiB, and a digest is never printed either way.
// Groups come in the order of their kept (lowest) index.
func (c *Classified) ExactDuplicates() []ExactGroup {
	byText := map[string]*ExactGroup{}
	var order []*ExactGroup
	for i, b := range c.Blocks {
		n := c.norms[i]
		if !b.Sized || n == "" {
			continue
		}
		g := byText[n]
		if g == nil {
			g = &ExactGroup{}
			byText[n] = g
			order = append(order, g)
		}
		g.Blocks = append(g.Blocks, b.Index)
		if len(g.Blocks) > 1 {
			g.ExcessE += b.E
			g.ExcessCount++
		}
	}
	var out []ExactGroup
	for _, g := range order {
		if len(g.Blocks) >= 2 {
			out = append(out, *g)
		}
	}
	return out
}

// quoteOrPunct are the characters M09 strips from a token's ends.
const quoteOrPunct = ".,;:!?()[]{}\"'`\u2018\u2019\u201c\u201d"

// Tokens is M09's word list: N(s) lowercased per code point (simple
// mapping), split on single spaces, ends stripped, empties dropped.
func Tokens(s string) []string { return tokensOf(Normalise(s)) }

func tokensOf(n string) []string {
	n = strings.Map(unicode.ToLower, n)
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

// NearResult is M09's answer.
type NearResult struct {
	Eligible int // sized blocks with at least 3 tokens
	Count    int64
	Pairs    []nearjoin.Pair // the first ListingBound by (I, J)
}

// NearDuplicates is M09: pairs of blocks whose 3-gram shingle sets reach
// Jaccard 0.80, exact-duplicate pairs (equal N(s)) dropped, counted
// exactly, listed up to ListingBound by (lower, higher) block index.
//
// Words come numbered from classification (exact dictionary ids); a
// shingle is its three word ids, numbered densely by a radix sort, so no
// hash ever stands in for equality.
func (c *Classified) NearDuplicates() NearResult {
	var r NearResult
	dense := denseIDs(c.words, c.wordAt, c.vocabulary)
	sets := make([][]uint32, len(c.Blocks))
	for i := range c.Blocks {
		if from, to := c.wordAt[i], c.wordAt[i+1]-2; to > from {
			r.Eligible++
			sets[i] = dense[from:to:to]
		}
	}
	first := &pairHeap{}
	nearjoin.JoinOwned(sets, func(p nearjoin.Pair) {
		if c.norms[p.I] == c.norms[p.J] {
			return // an exact pair: M08's
		}
		r.Count++
		if first.Len() < ListingBound {
			heap.Push(first, p)
		} else if less(p, (*first)[0]) {
			(*first)[0] = p
			heap.Fix(first, 0)
		}
	})
	r.Pairs = slices.Clone(*first)
	slices.SortFunc(r.Pairs, func(a, b nearjoin.Pair) int {
		if less(a, b) {
			return -1
		}
		return 1
	})
	return r
}

// forEachToken calls fn with each M09 token of a normalised text, in
// order, without allocating: N(s) is lowercased per code point, split on
// single spaces, and each word's ends stripped (as tokensOf). One pass
// over the bytes does all three: leading marks are skipped as they are
// read, the rest is lowercased into buf, and trailing marks are cut from
// buf (lowercasing maps no rune to or from a mark, so cutting after it is
// cutting before it).
func forEachToken(n string, buf *[]byte, fn func([]byte)) {
	b := (*buf)[:0]
	for i := 0; i <= len(n); i++ { // i++ steps over the space ending a word
		b = b[:0]
		lead := true
		for i < len(n) && n[i] != ' ' {
			c := n[i]
			if c < utf8.RuneSelf {
				i++
				if lead && asciiMark[c] {
					continue
				}
				lead = false
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				b = append(b, c)
				continue
			}
			r, size := utf8.DecodeRuneInString(n[i:])
			i += size
			if lead && isQuoteOrPunct(r) {
				continue
			}
			lead = false
			b = utf8.AppendRune(b, unicode.ToLower(r))
		}
		if b = trimMarksRight(b); len(b) > 0 {
			fn(b)
		}
	}
	*buf = b
}

// asciiMark is membership in quoteOrPunct's ASCII part.
var asciiMark = [utf8.RuneSelf]bool{'.': true, ',': true, ';': true, ':': true, '!': true, '?': true,
	'(': true, ')': true, '[': true, ']': true, '{': true, '}': true, '"': true, '\'': true, '`': true}

// trimMarksRight cuts quoteOrPunct from the end of valid UTF-8: its four
// non-ASCII marks are U+2018, U+2019, U+201C and U+201D, E2 80 98/99/9C/9D.
func trimMarksRight(b []byte) []byte {
	for len(b) > 0 {
		c := b[len(b)-1]
		switch {
		case c < utf8.RuneSelf && asciiMark[c]:
			b = b[:len(b)-1]
		case len(b) >= 3 && b[len(b)-3] == 0xE2 && b[len(b)-2] == 0x80 && (c == 0x98 || c == 0x99 || c == 0x9C || c == 0x9D):
			b = b[:len(b)-3]
		default:
			return b
		}
	}
	return b
}

// isQuoteOrPunct is membership in quoteOrPunct.
func isQuoteOrPunct(r rune) bool {
	switch r {
	case '.', ',', ';', ':', '!', '?', '(', ')', '[', ']', '{', '}', '"', '\'', '`', '\u2018', '\u2019', '\u201c', '\u201d':
		return true
	}
	return false
}

// denseIDs numbers the shingles of every block (each run of three words
// within a block) so that equal shingles get equal ids, 0..n-1 in order of
// first appearance; a shingle that occurs once in the whole record (most
// do) is nearjoin.Unique instead, so the join's arrays span only the
// repeated ones. The result is indexed like words: out[o] is the id of
// the shingle that starts at word o (positions with no shingle hold
// nothing meaningful).
//
// It is an LSD radix sort of the shingles' start positions whose digits
// are the three word ids (vocabulary buckets each), read from words as
// each pass needs them: no key is ever built or moved, so the sort holds
// two int32 arrays of positions and nothing else. The sort is stable, so a
// run of equal shingles starts at its first occurrence.
func denseIDs(words []uint32, wordAt []int32, vocabulary int) []uint32 {
	n := 0
	for i := 0; i+1 < len(wordAt); i++ {
		n += max(int(wordAt[i+1]-wordAt[i])-2, 0)
	}
	pos, tmp := make([]uint32, 0, n), make([]uint32, n)
	for i := 0; i+1 < len(wordAt); i++ {
		for o := wordAt[i]; o+2 < wordAt[i+1]; o++ {
			pos = append(pos, uint32(o))
		}
	}
	count := make([]int32, vocabulary+1)
	for digit := 2; digit >= 0; digit-- {
		// a digit's histogram does not depend on the order: count in
		// position order, reading words sequentially
		clear(count)
		for i := 0; i+1 < len(wordAt); i++ {
			if from, to := wordAt[i], wordAt[i+1]-2; to > from { // a block of three words or more
				for _, w := range words[from+int32(digit) : to+int32(digit)] {
					count[w+1]++
				}
			}
		}
		for v := 1; v < len(count); v++ {
			count[v] += count[v-1]
		}
		for _, o := range pos {
			d := words[int(o)+digit]
			tmp[count[d]] = o
			count[d]++
		}
		pos, tmp = tmp, pos
	}
	// each position names its shingle's first occurrence, then first
	// occurrences are numbered in order
	out := make([]uint32, len(words))
	for j := 0; j < len(pos); {
		k := j + 1
		for k < len(pos) && sameShingle(words, pos[k], pos[j]) {
			k++
		}
		if k == j+1 {
			out[pos[j]] = nearjoin.Unique // once in the whole record
		} else {
			for _, o := range pos[j:k] {
				out[o] = pos[j]
			}
		}
		j = k
	}
	next := uint32(0)
	for i := 0; i+1 < len(wordAt); i++ {
		for o := wordAt[i]; o+2 < wordAt[i+1]; o++ {
			if out[o] == nearjoin.Unique {
				continue
			}
			if out[o] == uint32(o) {
				out[o] = next
				next++
			} else {
				out[o] = out[out[o]]
			}
		}
	}
	return out
}

func sameShingle(words []uint32, a, b uint32) bool {
	return words[a] == words[b] && words[a+1] == words[b+1] && words[a+2] == words[b+2]
}

func less(a, b nearjoin.Pair) bool { return a.I < b.I || a.I == b.I && a.J < b.J }

// pairHeap keeps the ListingBound smallest pairs: a max-heap, so the
// largest kept pair is the one a smaller newcomer replaces.
type pairHeap []nearjoin.Pair

func (h pairHeap) Len() int           { return len(h) }
func (h pairHeap) Less(i, j int) bool { return less(h[j], h[i]) }
func (h pairHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)        { *h = append(*h, x.(nearjoin.Pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
