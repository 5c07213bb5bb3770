package nearjoin

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func naive(sets [][]uint32) []Pair {
	norm := make([][]uint32, len(sets))
	for i, s := range sets {
		t := slices.Clone(s)
		slices.Sort(t)
		norm[i] = slices.Compact(t)
	}
	var out []Pair
	for i := range norm {
		for j := i + 1; j < len(norm); j++ {
			if len(norm[i]) > 0 && len(norm[j]) > 0 && plainSimilar(norm[i], norm[j]) {
				out = append(out, Pair{i, j})
			}
		}
	}
	return out
}

// plainSimilar is the rule read straight off the criteria, with none of
// the join's shortcuts: the reference the join is held to.
func plainSimilar(a, b []uint32) bool {
	in := map[uint32]bool{}
	for _, t := range a {
		in[t] = true
	}
	inter := 0
	for _, t := range b {
		if in[t] {
			inter++
		}
	}
	return 5*inter >= 4*(len(a)+len(b)-inter)
}

func joined(sets [][]uint32) ([]Pair, int64) {
	var out []Pair
	n := Join(sets, func(p Pair) { out = append(out, p) })
	slices.SortFunc(out, func(a, b Pair) int {
		if a.I != b.I {
			return a.I - b.I
		}
		return a.J - b.J
	})
	return out, n
}

func TestSimilarIsTheIntegerRule(t *testing.T) {
	// |A∩B| = 4, |A∪B| = 5: exactly 0.80, included
	if !Similar([]uint32{1, 2, 3, 4}, []uint32{1, 2, 3, 4, 5}) {
		t.Error("0.80 must pair")
	}
	// 79/100 and 81/100
	a := make([]uint32, 100)
	for i := range a {
		a[i] = uint32(i)
	}
	b79 := append(slices.Clone(a[:89]), 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210) // o=89, u=111: 0.8018
	if !Similar(a, b79) {
		t.Error("89/111 = 0.8018 must pair")
	}
	b := append(slices.Clone(a[:88]), 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211) // o=88, u=112: 0.7857
	if Similar(a, b) {
		t.Error("88/112 = 0.7857 must not pair")
	}
}

// near builds families of sets whose pairwise Jaccard sits around 0.80:
// a base set and variants that drop k and add m tokens, plus exact copies.
func near(r *rand.Rand, families int) [][]uint32 {
	var sets [][]uint32
	next := uint32(1 << 20)
	for f := 0; f < families; f++ {
		n := 4 + r.IntN(60)
		base := make([]uint32, n)
		for i := range base {
			base[i] = uint32(r.IntN(400)) // shared vocabulary: tokens recur across families
		}
		sets = append(sets, base)
		for v := 0; v < 1+r.IntN(5); v++ {
			s := slices.Clone(base)
			r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
			k, m := r.IntN(1+n/6), r.IntN(1+n/6)
			s = s[:len(s)-min(k, len(s)-1)]
			for i := 0; i < m; i++ {
				s = append(s, next)
				next++
			}
			sets = append(sets, s)
			if r.IntN(4) == 0 {
				sets = append(sets, slices.Clone(s)) // an identical set
			}
		}
	}
	sets = append(sets, nil, []uint32{}) // never paired
	r.Shuffle(len(sets), func(i, j int) { sets[i], sets[j] = sets[j], sets[i] })
	return sets
}

func TestJoinEqualsTheNaiveLoopNearTheThreshold(t *testing.T) {
	total := 0
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		sets := near(r, 60)
		want := naive(sets)
		got, n := joined(sets)
		if !slices.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("seed %d: join %d pairs (count %d), naive %d", seed, len(got), n, len(want))
		}
		// the same sets with dense ids take the join's other path
		got, n = joined(renumber(sets))
		if !slices.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("seed %d, dense ids: join %d pairs (count %d), naive %d", seed, len(got), n, len(want))
		}
		// and with every token that occurs once in all the sets given as
		// Unique, as M09 gives them
		occurs := map[uint32]int{}
		for _, s := range sets {
			for _, t := range s {
				occurs[t]++
			}
		}
		marked, uniques := make([][]uint32, len(sets)), 0
		for i, s := range sets {
			for _, t := range s {
				if occurs[t] == 1 {
					t = Unique
					uniques++
				}
				marked[i] = append(marked[i], t)
			}
		}
		got, n = joined(marked)
		if !slices.Equal(got, want) || n != int64(len(want)) || uniques == 0 {
			t.Fatalf("seed %d, %d Unique: join %d pairs (count %d), naive %d", seed, uniques, len(got), n, len(want))
		}
		total += len(want)
	}
	if total < 1000 {
		t.Errorf("the generator produced only %d pairs: not testing near the threshold", total)
	}
}

// dense builds sets where prefix filtering finds nearly every pair a
// candidate: every token is common to many sets. Drawn from a small
// vocabulary, the sets sit far below the threshold (Jaccard near 0.1);
// as a shared core with a few tails each, every pair sits just above it
// (192 shared of 238: 0.807), and with a smaller core, just below.
func dense(r *rand.Rand, shape string, n int) [][]uint32 {
	sets := make([][]uint32, n)
	for i := range sets {
		var s []uint32
		switch shape {
		case "small-vocabulary":
			for range 243 {
				s = append(s, uint32(r.IntN(1000)))
			}
		case "core-above", "core-below":
			core, tails := 192, 23
			if shape == "core-below" {
				core = 180 // 180 shared of 226: 0.796
			}
			for k := range core {
				s = append(s, uint32(k))
			}
			for range tails {
				s = append(s, uint32(10000+r.IntN(n*tails/2))) // each tail token in about two sets
			}
		}
		sets[i] = s
	}
	return sets
}

// The join is exact where its filters prune little: every candidate pair
// is decided as the naive loop decides it.
func TestJoinEqualsTheNaiveLoopOnDenseSets(t *testing.T) {
	for _, shape := range []string{"small-vocabulary", "core-above", "core-below"} {
		sets := dense(rand.New(rand.NewPCG(5, 9)), shape, 400)
		want := naive(sets)
		got, n := joined(sets)
		if !slices.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("%s: join %d pairs (count %d), naive %d", shape, len(got), n, len(want))
		}
		// the shapes are what they say: none paired, nearly all, and fewer
		switch {
		case shape == "small-vocabulary" && len(want) != 0,
			shape == "core-above" && len(want) < 400*399/2*9/10,
			shape == "core-below" && len(want) > 400*399/2/2:
			t.Errorf("%s: %d pairs", shape, len(want))
		}
	}
}

func TestIdenticalSetsAreCountedWithoutEnumeratingTwice(t *testing.T) {
	sets := make([][]uint32, 300)
	for i := range sets {
		sets[i] = []uint32{1, 2, 3, 4, 5}
	}
	got, n := joined(sets)
	if n != 300*299/2 || len(got) != int(n) {
		t.Errorf("count %d, pairs %d", n, len(got))
	}
}

func makeBlocks(n int, r *rand.Rand) [][]uint32 {
	sets := make([][]uint32, n)
	for i := range sets {
		s := make([]uint32, 20+r.IntN(60))
		for k := range s {
			s[k] = uint32(r.IntN(50000))
		}
		sets[i] = s
	}
	// one in twenty is a near copy of an earlier block
	for i := 20; i < n; i += 20 {
		s := slices.Clone(sets[i-7])
		s[0] = uint32(60000 + i)
		sets[i] = s
	}
	return sets
}

func BenchmarkJoin(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		sets := makeBlocks(n, rand.New(rand.NewPCG(1, 2)))
		b.Run("allpairs-"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				Join(sets, func(Pair) {})
			}
		})
		b.Run("naive-"+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				naive(sets)
			}
		})
	}
	// adversarial: every block a near-duplicate of every other
	adv := make([][]uint32, 2000)
	for i := range adv {
		s := make([]uint32, 50)
		for k := range s {
			s[k] = uint32(k)
		}
		s[i%50] = uint32(1000 + i) // each differs from the base in one token
		adv[i] = s
	}
	b.Run("adversarial-2000", func(b *testing.B) {
		for b.Loop() {
			Join(adv, func(Pair) {})
		}
	})
	for _, shape := range []string{"small-vocabulary", "core-above", "core-below"} {
		sets := dense(rand.New(rand.NewPCG(5, 9)), shape, 2000)
		b.Run(shape+"-2000", func(b *testing.B) {
			for b.Loop() {
				Join(sets, func(Pair) {})
			}
		})
	}
}

// Join works on a copy: the caller's sets are as they were.
func TestJoinLeavesTheSets(t *testing.T) {
	sets := [][]uint32{{5, 3, 3, 9}, {9, 5, 3}, {}, {7}}
	want := [][]uint32{{5, 3, 3, 9}, {9, 5, 3}, {}, {7}}
	if n := Join(sets, func(Pair) {}); n != 1 {
		t.Errorf("pairs %d", n)
	}
	for i := range sets {
		if !slices.Equal(sets[i], want[i]) {
			t.Errorf("set %d is now %v", i, sets[i])
		}
	}
}

// A join told to stop stops, and says its answer is a part; one never told
// answers as Join does.
func TestJoinOwnedUntilStops(t *testing.T) {
	sets := dense(rand.New(rand.NewPCG(5, 9)), "core-above", 2000)
	want := Join(sets, func(Pair) {})
	copyOf := func() [][]uint32 {
		out := make([][]uint32, len(sets))
		for i, s := range sets {
			out[i] = slices.Clone(s)
		}
		return out
	}
	open := make(chan struct{})
	if n, ok := JoinOwnedUntil(open, copyOf(), func(Pair) {}); !ok || n != want {
		t.Errorf("not stopped: %d pairs, ok %v; want %d", n, ok, want)
	}
	closed := make(chan struct{})
	close(closed)
	if n, ok := JoinOwnedUntil(closed, copyOf(), func(Pair) {}); ok || n >= want {
		t.Errorf("stopped: %d pairs, ok %v; want a part of %d", n, ok, want)
	}
}
