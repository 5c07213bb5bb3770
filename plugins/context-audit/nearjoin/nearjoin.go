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
//
// Prefix filtering prunes little where every token is common to many sets
// (a small vocabulary, or a shared core): nearly every pair is then a
// candidate, and whole merges made a 5 MiB record of one-letter words take
// 90 s. So candidates also meet PPJoin's positional filter (Xiao et al.,
// WWW 2008), the overlap of the most frequent tokens is counted from
// bitmaps, and the rest of a merge stops as soon as its answer is known.
// Every one of these is an exact bound; the naive loop is the test.
package nearjoin

import (
	bits64 "math/bits"
	"slices"
)

// Unique is a token that stands for one found nowhere else: JoinOwned
// counts it in its set's size and never looks for it in another set, so a
// caller that knows which of its tokens occur once need not number them.
const Unique = ^uint32(0)

// commonTokens is how many of the most frequent shared tokens the join
// also keeps as bitmaps: 16 words a set.
const commonTokens = 1024

// Pair is two set indexes, I < J.
type Pair struct{ I, J int }

// Similar reports 5·|A∩B| ≥ 4·|A∪B| for two sorted, distinct token lists.
func Similar(a, b []uint32) bool {
	// 5o ≥ 4(a + b − o), that is 9o ≥ 4(a + b)
	return atLeast(a, b, (4*(len(a)+len(b))+8)/9)
}

// atLeast reports |A∩B| ≥ need for two sorted, distinct token lists,
// stopping as soon as the answer is known: once need tokens are found, or
// once too few are left on either side to reach it. A pair far from the
// threshold is decided in a few steps, not a whole merge.
func atLeast(a, b []uint32, need int) bool {
	o, i, j := 0, 0, 0
	for o < need {
		if o+min(len(a)-i, len(b)-j) < need {
			return false
		}
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
	return true
}

// Join calls emit for every pair (I < J) of non-empty sets at Jaccard ≥
// 4/5, in no particular order, and returns how many there are. Each set is
// a list of token ids (duplicates allowed; they are removed). The sets are
// left as they were: Join works on one copy of them.
func Join(sets [][]uint32, emit func(Pair)) int64 {
	total := 0
	for _, s := range sets {
		total += len(s)
	}
	backing := make([]uint32, 0, total)
	own := make([][]uint32, len(sets))
	for i, s := range sets {
		from := len(backing)
		backing = append(backing, s...)
		own[i] = backing[from:len(backing):len(backing)]
	}
	return JoinOwned(own, emit)
}

// JoinOwned is Join on sets it may overwrite: each set's elements are
// deduplicated, replaced by their ranks and reordered in place, so the
// join holds no copy of them (M09's sets are its own, 4 MB at full size).
// Its working arrays are reused from phase to phase for the same reason.
//
// A token found in one set only (most shingles of real text: 82 % of a
// full-size record's) can never be shared, so it is counted in its set's
// size and then dropped: the sets keep only shared tokens, the index and
// the merges are that much shorter, and the rule still reads the whole
// sizes. Rarest first puts such tokens at the front of every set, so they
// fill prefixes first: a set whose prefix is all of them can pair with
// nothing and is neither probed nor indexed.
func JoinOwned(sets [][]uint32, emit func(Pair)) int64 {
	n, _ := JoinOwnedUntil(nil, sets, emit)
	return n
}

// JoinOwnedUntil is JoinOwned that gives up once done is closed (looked
// at every few hundred groups): ok is false then, and the count and the
// pairs emitted are a part only. A nil done never closes.
func JoinOwnedUntil(done <-chan struct{}, sets [][]uint32, emit func(Pair)) (count int64, ok bool) {
	stopped := func(n int) bool {
		if done == nil || n%256 != 0 {
			return false
		}
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	// dense token ids: callers that number their tokens densely (M09 does)
	// keep theirs; others are renumbered through a map
	largest := func() (uint32, int) {
		top, n := uint32(0), 0
		for _, s := range sets {
			n += len(s)
			for _, t := range s {
				if t != Unique {
					top = max(top, t)
				}
			}
		}
		return top, n
	}
	maxToken, occurrences := largest()
	if int(maxToken) > 4*occurrences+1024 {
		sets = renumber(sets)
		maxToken, _ = largest()
	}
	nTokens := int(maxToken) + 1
	// deduplicate each set in place with a stamp per token (no sort), and
	// count in how many sets each token occurs
	stamp := make([]int32, nTokens)
	freq := make([]int32, nTokens)
	size := make([]int32, len(sets)) // each set's distinct tokens, shared or not
	for i, s := range sets {
		k, own := 0, 0
		for _, t := range s {
			if t == Unique {
				own++
			} else if stamp[t] != int32(i+1) {
				stamp[t] = int32(i + 1)
				freq[t]++
				s[k] = t
				k++
			}
		}
		sets[i] = s[:k:k]
		size[i] = int32(k + own)
	}
	// rank the shared tokens rarest first, ties to the smaller id (a
	// counting sort); any total order is exact, rarest first keeps the
	// prefixes' posting lists short. A token in one set only gets -1.
	maxFreq := int32(0)
	for _, f := range freq {
		maxFreq = max(maxFreq, f)
	}
	start := make([]int32, maxFreq+2)
	for _, f := range freq {
		if f > 1 {
			start[f+1]++
		}
	}
	for f := 1; f < len(start); f++ {
		start[f] += start[f-1]
	}
	rank := stamp // reuse: every token's slot is written below
	shared := 0
	for t, f := range freq {
		if f > 1 {
			rank[t] = start[f]
			start[f]++
			shared++
		} else {
			rank[t] = -1
		}
	}
	// every set's shared tokens in rank order at once: a counting sort of
	// the occurrences by rank (a rank occurs at most once per set), then
	// each set refilled in that order: linear, where sorting set by set is
	// not
	byRank := make([]int32, shared+1)
	occurrences = 0
	for _, s := range sets {
		for _, t := range s {
			if r := rank[t]; r >= 0 {
				byRank[r+1]++
				occurrences++
			}
		}
	}
	for r := 1; r < len(byRank); r++ {
		byRank[r] += byRank[r-1]
	}
	owner := make([]int32, occurrences) // the set of each occurrence, in rank order
	next := freq[:shared]               // reuse: the counts are spent
	copy(next, byRank[:shared])
	for i, s := range sets {
		k := 0
		for _, t := range s {
			if r := rank[t]; r >= 0 {
				owner[next[r]] = int32(i)
				next[r]++
				k++
			}
		}
		sets[i] = s[:k:k]
	}
	at := make([]int32, len(sets))
	for r := 0; r < shared; r++ {
		for _, i := range owner[byRank[r]:byRank[r+1]] {
			sets[i][at[i]] = uint32(r)
			at[i]++
		}
	}
	// identical sets collapse into groups, found by a hash and confirmed
	// by comparison; a set with a token of its own is identical to none
	type group struct {
		tokens  []uint32 // shared tokens, in rank order
		size    int      // all distinct tokens
		members []int
	}
	var groups []*group
	byHash := map[uint64][]int{}
	for i, d := range sets {
		switch {
		case size[i] == 0:
			continue
		case int(size[i]) > len(d):
			groups = append(groups, &group{tokens: d, size: int(size[i]), members: []int{i}})
			continue
		}
		h := hash(d)
		found := -1
		for _, g := range byHash[h] {
			if slices.Equal(groups[g].tokens, d) && groups[g].size == len(d) {
				found = g
				break
			}
		}
		if found < 0 {
			found = len(groups)
			byHash[h] = append(byHash[h], found)
			groups = append(groups, &group{tokens: d, size: len(d)})
		}
		groups[found].members = append(groups[found].members, i)
	}
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
			if stopped(x + 1) {
				return count, false
			}
			pairs(g.members[x:x+1], g.members[x+1:])
		}
	}
	// process groups by ascending size; the index holds each processed
	// group under its prefix tokens (one backing array, sized up front).
	// The prefix over all of a set's tokens is |x| − ⌈4|x|/5⌉ + 1 long;
	// its unshared tokens come first and are gone, so the shared part of
	// it is that many fewer
	idx := make([]int, len(groups))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return groups[a].size - groups[b].size })
	prefix := func(g *group) []uint32 {
		n := g.size - (4*g.size+4)/5 + 1 - (g.size - len(g.tokens))
		return g.tokens[:max(n, 0)]
	}
	postings := byRank // reuse: the refill is done
	clear(postings)
	for _, g := range groups {
		for _, w := range prefix(g) {
			postings[w+1]++
		}
	}
	for w := 1; w < len(postings); w++ {
		postings[w] += postings[w-1]
	}
	// The most frequent shared tokens (the last ranks) are also kept as a
	// bitmap per group: where every set holds the same common tokens,
	// most candidate pairs pass the filters, and their overlap there is a
	// few words ANDed and counted rather than a merge of hundreds.
	common := min(shared, commonTokens)
	firstCommon := uint32(shared - common)
	words := (common + 63) / 64
	bits := make([]uint64, len(groups)*words)
	cut := make([]int32, len(groups)) // where each group's common tokens start
	for g, gr := range groups {
		c, _ := slices.BinarySearch(gr.tokens, firstCommon)
		cut[g] = int32(c)
		row := bits[g*words : (g+1)*words]
		for _, t := range gr.tokens[c:] {
			t -= firstCommon
			row[t/64] |= 1 << (t % 64)
		}
	}
	commonOverlap := func(x, y int) int {
		n := 0
		for k, v := range bits[x*words : (x+1)*words] {
			n += bits64.OnesCount64(v & bits[y*words+k])
		}
		return n
	}
	fill := next // reuse
	copy(fill, postings[:shared])
	index := owner[:postings[shared]] // reuse: prefixes hold at most every occurrence
	// where each indexed token sits in its group's tokens, for the
	// positional filter
	at = slices.Grow(at[:0], len(index))[:len(index)] // reuse: the refill is done
	seen := make([]int32, len(groups))                // the probing group's stamp (x+1)
	// each group's size, flat: a probe reads it for every posting it visits
	gsize := make([]int32, len(groups))
	for g, gr := range groups {
		gsize[g] = int32(gr.size)
	}
	for probed, x := range idx {
		if stopped(probed + 1) {
			return count, false
		}
		gx := groups[x]
		minSize := int32((4*gx.size + 4) / 5) // ⌈4|x|/5⌉: a partner that small or larger
		px := prefix(gx)
		mark := int32(x + 1)
		for i, w := range px {
			for k := postings[w]; k < fill[w]; k++ {
				y := index[k]
				if seen[y] == mark || gsize[y] < minSize {
					continue
				}
				seen[y] = mark
				gy := groups[y]
				// 9·|x∩y| ≥ 4·(|x| + |y|), on whole sizes (Similar)
				need := (4*(gx.size+gy.size) + 8) / 9
				// Positional filter (PPJoin): this is the first token x and
				// y share. Both lists are in rank order and y is indexed by
				// its whole prefix, so a shared token of lower rank would
				// sit in both prefixes and have been met first. Every
				// shared token is therefore at or after i in x and j in y.
				j := int(at[k])
				if 1+min(len(gx.tokens)-i-1, len(gy.tokens)-j-1) < need {
					continue
				}
				// the common tokens' overlap from the bitmaps; the rest
				// by merge, from (i, j) to the common tokens (none when
				// the first shared token is itself common)
				o := commonOverlap(x, int(y))
				if o >= need || i < int(cut[x]) && atLeast(gx.tokens[i:cut[x]], gy.tokens[j:max(j, int(cut[y]))], need-o) {
					count += int64(len(gx.members)) * int64(len(gy.members))
					pairs(gx.members, gy.members)
				}
			}
		}
		for i, w := range px {
			index[fill[w]] = int32(x)
			at[fill[w]] = int32(i)
			fill[w]++
		}
	}
	return count, true
}

// renumber maps sparse token ids to 0..n-1 (Unique stays).
func renumber(sets [][]uint32) [][]uint32 {
	ids := map[uint32]uint32{}
	out := make([][]uint32, len(sets))
	for i, s := range sets {
		d := make([]uint32, len(s))
		for k, t := range s {
			if t == Unique {
				d[k] = t
				continue
			}
			id, ok := ids[t]
			if !ok {
				id = uint32(len(ids))
				ids[t] = id
			}
			d[k] = id
		}
		out[i] = d
	}
	return out
}

// hash is FNV-1a over a sorted set; equal hashes are confirmed by
// comparing the sets, so it only narrows the search.
func hash(s []uint32) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range s {
		h ^= uint64(v)
		h *= 1099511628211
	}
	return h
}
