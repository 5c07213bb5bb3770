package composition

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
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
	r, _ := c.NearDuplicatesUntil(nil)
	return r
}

// NearDuplicatesUntil is NearDuplicates that gives up once done is closed
// (ok false, the result a part only): the join is the one step of a
// report that can run long.
func (c *Classified) NearDuplicatesUntil(done <-chan struct{}) (NearResult, bool) {
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
	_, ok := nearjoin.JoinOwnedUntil(done, sets, func(p nearjoin.Pair) {
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
	return r, ok
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
// Shingle start positions are first sorted by their first word (one
// counting pass over words in order, then one placing pass): within a
// first word's bucket positions stay in increasing order. Each bucket is
// then grouped by its second and third words, exactly (the two ids are
// one 64-bit key), in a small open-addressing table, reading those words
// in increasing order of position. Equality is always of word ids, never
// of a hash.
func denseIDs(words []uint32, wordAt []int32, vocabulary int) []uint32 {
	bucket := make([]int32, vocabulary+1) // bucket v is byFirst[bucket[v]:bucket[v+1]]
	n := 0
	for i := 0; i+1 < len(wordAt); i++ {
		for o := wordAt[i]; o+2 < wordAt[i+1]; o++ {
			bucket[words[o]+1]++
			n++
		}
	}
	for v := 1; v < len(bucket); v++ {
		bucket[v] += bucket[v-1]
	}
	byFirst := make([]uint32, n)
	next := slices.Clone(bucket[:vocabulary])
	for i := 0; i+1 < len(wordAt); i++ {
		for o := wordAt[i]; o+2 < wordAt[i+1]; o++ {
			w := words[o]
			byFirst[next[w]] = uint32(o)
			next[w]++
		}
	}
	// out[o] becomes o for a shingle's first occurrence and that first
	// position for a later one; then first occurrences are numbered in
	// order
	out := make([]uint32, len(words))
	// buckets are independent and own disjoint positions of out: the
	// first words holding half the shingles go to a second worker (the
	// other factors share the cores meanwhile)
	half := 0
	for half < vocabulary && 2*int(bucket[half]) < n {
		half++
	}
	groupRange := func(from, to int) {
		g := newGrouper()
		for v := from; v < to; v++ {
			g.group(words, byFirst[bucket[v]:bucket[v+1]], out)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { groupRange(0, half) })
	groupRange(half, vocabulary)
	wg.Wait()
	id := uint32(0)
	for i := 0; i+1 < len(wordAt); i++ {
		for o := wordAt[i]; o+2 < wordAt[i+1]; o++ {
			switch f := out[o]; {
			case f == nearjoin.Unique:
			case f == uint32(o):
				out[o] = id
				id++
			default:
				out[o] = out[f]
			}
		}
	}
	return out
}

// grouper groups one first word's shingle positions by their second and
// third words; its table is reused bucket to bucket.
//
// The slot is the key times an odd multiplier drawn at random per grouper
// (multiplicative hashing as a universal family, Dietzfelbinger et al.),
// where it was a fixed one: word ids follow the order words first appear
// in, which the caller chooses, and under the fixed multiplier a record
// built so that its word pairs fill one narrow run of slots made every
// insert walk that run (a 4.9 MiB record took 42 s). Two keys share a
// slot under a random multiplier with probability about 2/size, whatever
// the caller chose. XORing a random seed into the key under the fixed
// multiplier was tried and kept crafted keys in clusters of a few hundred;
// a full mixer (SplitMix64's finaliser) cost the max-size audit 5 %.
type grouper struct {
	mult   uint64 // odd
	keys   []uint64
	firsts []uint32 // first position + 1 (0: empty slot), repeated bit set once seen again
	used   []uint32 // the slots filled, so the sweep reads only them
}

func newGrouper() grouper { return grouper{mult: rand.Uint64() | 1} }

const repeated = 1 << 31 // positions are below 2^31: a body is at most a few MiB

func (g *grouper) group(words, positions, out []uint32) {
	switch len(positions) {
	case 0:
		return
	case 1:
		out[positions[0]] = nearjoin.Unique
		return
	}
	bits := uint(64 - 1)
	size := 2
	for size < 2*len(positions) {
		size *= 2
		bits--
	}
	if len(g.keys) < size {
		g.keys, g.firsts, g.used = make([]uint64, size), make([]uint32, size), g.used[:0]
	}
	for _, h := range g.used { // the last bucket's slots, in the whole table
		g.firsts[h] = 0
	}
	g.used = g.used[:0]
	keys, firsts := g.keys[:size], g.firsts[:size]
	mask := uint64(size - 1)
	for _, o := range positions {
		key := uint64(words[o+1])<<32 | uint64(words[o+2])
		for h := (key * g.mult) >> bits; ; h = (h + 1) & mask {
			f := firsts[h]
			if f == 0 {
				keys[h], firsts[h] = key, o+1
				g.used = append(g.used, uint32(h))
				out[o] = o
				break
			}
			if keys[h] == key {
				firsts[h] = f | repeated
				out[o] = f&^repeated - 1
				break
			}
		}
	}
	for _, h := range g.used {
		if f := firsts[h]; f&repeated == 0 {
			out[f-1] = nearjoin.Unique // once in the whole record
		}
	}
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
