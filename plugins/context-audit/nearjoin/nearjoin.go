// Package nearjoin finds every pair of sets whose Jaccard similarity is at
// least 4/5, exactly, without comparing all pairs: the M09 near-duplicate
// join of context-composition/v1 over blocks' word-3-gram shingle sets.
//
// It is AllPairs (Bayardo, Ma and Srikant, WWW 2007): tokens are ordered
// rarest first, each set is probed and indexed by its prefix — a set that
// shares no token with another's first |A| − ⌈4|A|/5⌉ + 1 tokens cannot
// reach the threshold with it — and candidates pass the size filter before
// an exact merge count decides, in integers: 5·|A∩B| ≥ 4·|A∪B|. Sets that
// are identical are joined once and their pairs expanded, so a record whose
// blocks are all the same costs one set, not n².
package nearjoin

import (
	"slices"
	"strings"
)

// Pair is two set indexes, I < J.
type Pair struct{ I, J int }

// Similar reports 5·|A∩B| ≥ 4·|A∪B| for two sorted, distinct token lists.
func Similar(a, b []uint32) bool {
	o := overlap(a, b)
	return 9*o >= 4*(len(a)+len(b)) // 5o ≥ 4(a + b − o)
}

func overlap(a, b []uint32) int {
	o, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			o++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return o
}

// Join calls emit for every pair (I < J) of non-empty sets at Jaccard ≥
// 4/5, in no particular order, and returns how many there are. Each set is
// a list of token ids (duplicates allowed; they are removed).
func Join(sets [][]uint32, emit func(Pair)) int64 {
	// identical sets collapse into groups
	type group struct {
		tokens  []uint32
		members []int
	}
	byKey := map[string]*group{}
	var groups []*group
	for i, s := range sets {
		t := slices.Clone(s)
		slices.Sort(t)
		t = slices.Compact(t)
		if len(t) == 0 {
			continue
		}
		k := key(t)
		g := byKey[k]
		if g == nil {
			g = &group{tokens: t}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, i)
	}
	var count int64
	pairs := func(a, b []int) {
		for _, x := range a {
			for _, y := range b {
				if x < y {
					emit(Pair{x, y})
				} else {
					emit(Pair{y, x})
				}
			}
		}
	}
	for _, g := range groups {
		n := int64(len(g.members))
		count += n * (n - 1) / 2
		for x := 0; x < len(g.members); x++ {
			pairs(g.members[x:x+1], g.members[x+1:])
		}
	}
	// order tokens rarest first (ties by id) and re-sort every set by it
	freq := map[uint32]int{}
	for _, g := range groups {
		for _, t := range g.tokens {
			freq[t]++
		}
	}
	rank := make(map[uint32]uint32, len(freq))
	order := make([]uint32, 0, len(freq))
	for t := range freq {
		order = append(order, t)
	}
	slices.SortFunc(order, func(a, b uint32) int {
		if freq[a] != freq[b] {
			return freq[a] - freq[b]
		}
		return int(a) - int(b)
	})
	for r, t := range order {
		rank[t] = uint32(r)
	}
	ranked := make([][]uint32, len(groups))
	for i, g := range groups {
		r := make([]uint32, len(g.tokens))
		for k, t := range g.tokens {
			r[k] = rank[t]
		}
		slices.Sort(r)
		ranked[i] = r
	}
	// process groups by ascending size
	idx := make([]int, len(groups))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return len(ranked[a]) - len(ranked[b]) })
	index := map[uint32][]int{}
	seen := map[int]int{}
	for _, x := range idx {
		xs := ranked[x]
		minSize := (4*len(xs) + 4) / 5 // ⌈4|x|/5⌉: a partner that small or larger
		prefix := len(xs) - minSize + 1
		clear(seen)
		for _, w := range xs[:prefix] {
			for _, y := range index[w] {
				if _, done := seen[y]; done || len(ranked[y]) < minSize {
					continue
				}
				seen[y] = 1
				if Similar(xs, ranked[y]) {
					count += int64(len(groups[x].members)) * int64(len(groups[y].members))
					pairs(groups[x].members, groups[y].members)
				}
			}
		}
		for _, w := range xs[:prefix] {
			index[w] = append(index[w], x)
		}
	}
	return count
}

func key(t []uint32) string {
	var b strings.Builder
	for _, v := range t {
		b.WriteByte(byte(v))
		b.WriteByte(byte(v >> 8))
		b.WriteByte(byte(v >> 16))
		b.WriteByte(byte(v >> 24))
	}
	return b.String()
}
