package realistic

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// isWhiteSpace is Unicode White_Space, the set the ANNEX (C-12) fixes for
// M08/M09 normalisation.
func isWhiteSpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0d, r == 0x20, r == 0x85, r == 0xa0, r == 0x1680,
		r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029, r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}

// stripSet is the M09 token edge set (ANNEX C-12: .,;:!?()[]{} plus ASCII
// and typographic quotes and the backtick).
const stripSet = ".,;:!?()[]{}\"'\u2018\u2019\u201c\u201d`"

// shingles is the sorted set of a block's word 3-grams under M09, each
// hashed to 64 bits (a collision in a record is vanishingly unlikely): N(s)
// lowercased per code point, split on white space, token edges stripped,
// empty tokens dropped. The generator's text is NFC already, so NFC is the
// identity here. A block with fewer than 3 tokens has no shingles.
func shingles(s string) []uint64 {
	var toks []uint64
	var tok []byte
	flush := func() {
		t := tok
		for len(t) > 0 {
			r, n := utf8.DecodeRune(t)
			if !strings.ContainsRune(stripSet, r) {
				break
			}
			t = t[n:]
		}
		for len(t) > 0 {
			r, n := utf8.DecodeLastRune(t)
			if !strings.ContainsRune(stripSet, r) {
				break
			}
			t = t[:len(t)-n]
		}
		if len(t) > 0 {
			h := uint64(14695981039346656037)
			for _, c := range t {
				h = (h ^ uint64(c)) * 1099511628211
			}
			toks = append(toks, h)
		}
		tok = tok[:0]
	}
	for _, r := range s {
		switch {
		case isWhiteSpace(r):
			flush()
		case r < 0x80:
			tok = append(tok, byte(unicode.ToLower(r)))
		default:
			tok = utf8.AppendRune(tok, unicode.ToLower(r))
		}
	}
	flush()
	if len(toks) < 3 {
		return nil
	}
	out := make([]uint64, 0, len(toks)-2)
	for i := 0; i+2 < len(toks); i++ {
		x := toks[i]*0x9e3779b97f4a7c15 ^ toks[i+1]
		x = x*0xbf58476d1ce4e5b9 ^ toks[i+2]
		x ^= x >> 31
		out = append(out, x*0x94d049bb133111eb)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nearDup reports M09's test on two sorted shingle sets, decided in
// integers as the ANNEX does: 5·|A∩B| ≥ 4·|A∪B|.
func nearDup(a, b []uint64) (inter, union int, ok bool) {
	if len(a) == 0 || len(b) == 0 {
		return 0, 0, false
	}
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	union = len(a) + len(b) - inter
	return inter, union, 5*inter >= 4*union
}

// editable returns the positions of words that can be swapped for another
// word of the same form without breaking the sentence.
func editable(words []string) []int {
	var out []int
	for i, w := range words {
		core := strings.Trim(w, stripSet)
		if i == 0 || core == "" || !strings.HasPrefix(w, core) {
			continue
		}
		if c, ok := vocab.classOf[core]; ok && c != wcNone {
			out = append(out, i)
		}
	}
	return out
}

// swapWord replaces words[i] with another word of its class, keeping its
// trailing punctuation.
func (g *gen) swapWord(words []string, i int) {
	w := words[i]
	core := strings.TrimRight(w, stripSet)
	tail := w[len(core):]
	c := vocab.classOf[core]
	pool := vocab.byClass[c]
	for k := 0; k < 8; k++ {
		n := pool[g.r.IntN(len(pool))]
		if !strings.EqualFold(n, core) {
			words[i] = n + tail
			return
		}
	}
}

// tune edits a copy of words until the block built from it sits just on
// the chosen side of M09's 0.80 threshold against aText: for above, as many
// edits as keep it at or over 0.80; for below, the first edit that takes it
// under. Because the similarity is measured on the exact adapted texts, the
// pair lands where intended whatever wrapping the format adds.
func (g *gen) tune(aText string, words []string, build func([]string) string, above bool) []string {
	sa := shingles(aText)
	cur := append([]string(nil), words...)
	pos := editable(cur)
	g.r.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
	used := map[int]bool{}
	var best []string
	for _, i := range pos {
		// Edits at least three words apart change disjoint shingles, so
		// each step moves the similarity by a predictable amount.
		if used[i-1] || used[i-2] || used[i+1] || used[i+2] {
			continue
		}
		prev := cur[i]
		g.swapWord(cur, i)
		if cur[i] == prev {
			continue
		}
		_, _, ok := nearDup(sa, shingles(build(cur)))
		if above {
			if !ok {
				cur[i] = prev
				if best != nil {
					return best
				}
				continue
			}
			used[i] = true
			best = append(best[:0], cur...)
			continue
		}
		used[i] = true
		if !ok {
			return cur
		}
	}
	if best != nil {
		return best
	}
	return cur
}
