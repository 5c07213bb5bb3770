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
	// order tokens rarest first and re-sort every set by that order. Any
	// total order is exact; rarest first keeps the prefixes' posting lists
	// short. Ties go to the smaller token id. Counting sort over dense
	// ids: no map in the hot path.
	var freq []int
	var tokens []uint32 // dense id -> token
	denseSets := make([][]uint32, len(groups))
	occurrences, maxToken := 0, uint32(0)
	for _, g := range groups {
		occurrences += len(g.tokens)
		for _, t := range g.tokens {
			maxToken = max(maxToken, t)
		}
	}
	// callers that number their tokens densely (M09 does) get a slice
	// lookup; others a map
	var lookup func(t uint32) (uint32, bool)
	var store func(t, id uint32)
	if int(maxToken) <= 4*occurrences+1024 {
		table := make([]int32, int(maxToken)+1)
		lookup = func(t uint32) (uint32, bool) { return uint32(table[t] - 1), table[t] != 0 }
		store = func(t, id uint32) { table[t] = int32(id) + 1 }
	} else {
		table := map[uint32]uint32{}
		lookup = func(t uint32) (uint32, bool) { id, ok := table[t]; return id, ok }
		store = func(t, id uint32) { table[t] = id }
	}
	for i, g := range groups {
		d := make([]uint32, len(g.tokens))
		for k, t := range g.tokens {
			id, ok := lookup(t)
			if !ok {
				id = uint32(len(freq))
				store(t, id)
				freq = append(freq, 0)
				tokens = append(tokens, t)
			}
			freq[id]++
			d[k] = id
		}
		denseSets[i] = d
	}
	byID := make([]uint32, len(tokens))
	for i := range byID {
		byID[i] = uint32(i)
	}
	slices.SortFunc(byID, func(a, b uint32) int { return int(tokens[a]) - int(tokens[b]) })
	// stable counting sort of the id-ordered tokens by frequency
	maxFreq := 0
	for _, f := range freq {
		maxFreq = max(maxFreq, f)
	}
	start := make([]int, maxFreq+2)
	for _, f := range freq {
		start[f+1]++
	}
	for f := 1; f < len(start); f++ {
		start[f] += start[f-1]
	}
	rank := make([]uint32, len(freq))
	for _, id := range byID {
		rank[id] = uint32(start[freq[id]])
		start[freq[id]]++
	}
	ranked := make([][]uint32, len(groups))
	for i, d := range denseSets {
		for k, id := range d {
			d[k] = rank[id]
		}
		slices.Sort(d)
		ranked[i] = d
	}
	// process groups by ascending size
	idx := make([]int, len(groups))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return len(ranked[a]) - len(ranked[b]) })
	index := make([][]int32, len(freq))
	seen := make([]int32, len(groups)) // the probing group's stamp (x+1)
	for _, x := range idx {
		xs := ranked[x]
		minSize := (4*len(xs) + 4) / 5 // ⌈4|x|/5⌉: a partner that small or larger
		prefix := len(xs) - minSize + 1
		stamp := int32(x + 1)
		for _, w := range xs[:prefix] {
			for _, y := range index[w] {
				if seen[y] == stamp || len(ranked[y]) < minSize {
					continue
				}
				seen[y] = stamp
				if Similar(xs, ranked[y]) {
					count += int64(len(groups[x].members)) * int64(len(groups[y].members))
					pairs(groups[x].members, groups[y].members)
				}
			}
		}
		for _, w := range xs[:prefix] {
			index[w] = append(index[w], int32(x))
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
