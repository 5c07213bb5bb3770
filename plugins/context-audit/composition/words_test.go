package composition

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The dictionary numbers words exactly as a map in order of first sight
// would, and gives each id back its word.
func TestDictionaryNumbersAsAMap(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	var d dictionary
	want := map[string]uint32{}
	for range 200_000 {
		// a small alphabet and short words: many repeats, many near misses
		w := make([]byte, 1+rnd.IntN(6))
		for i := range w {
			w[i] = "abcdeé"[rnd.IntN(6)]
		}
		id, ok := want[string(w)]
		if !ok {
			id = uint32(len(want))
			want[string(w)] = id
		}
		if got := d.id(w); got != id {
			t.Fatalf("%q: id %d, want %d", w, got, id)
		}
	}
	if d.size() != len(want) {
		t.Errorf("size %d, want %d", d.size(), len(want))
	}
	for w, id := range want {
		if got := d.word(id); string(got) != w {
			t.Errorf("word(%d) = %q, want %q", id, got, w)
		}
	}
}

// Two different words with the same hash get two ids: the hash picks a
// slot, the bytes decide.
func TestDictionaryHashCollision(t *testing.T) {
	var d dictionary
	d.id([]byte("seeded")) // the first word seeds the table
	seen := map[uint32][]byte{}
	var a, b []byte
	for i := 0; a == nil; i++ {
		w := []byte("w" + strconv.Itoa(i))
		h := d.hash(w)
		if prev, ok := seen[h]; ok && !bytes.Equal(prev, w) {
			a, b = prev, w
		}
		seen[h] = w
	}
	ia, ib := d.id(a), d.id(b)
	if ia == ib || d.id(a) != ia || d.id(b) != ib {
		t.Errorf("colliding words %q and %q: ids %d and %d", a, b, ia, ib)
	}
}

// Words a caller built to share one slot under an unseeded hash (here
// 2,000 words equal in FNV-1a's low 10 bits) still spread over the
// table: no long run of filled slots for an insert to walk.
func TestDictionaryResistsCraftedCollisions(t *testing.T) {
	fnv := func(w []byte) uint32 {
		h := uint32(2166136261)
		for _, c := range w {
			h = (h ^ uint32(c)) * 16777619
		}
		return h
	}
	var d dictionary
	n := 0
	for i := 0; n < 2000; i++ {
		w := []byte("x" + strconv.Itoa(i))
		if fnv(w)&1023 == 0 {
			d.id(w)
			n++
		}
	}
	longest, run := 0, 0
	for _, s := range d.slots {
		if s.id1 == 0 {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	if longest > 100 {
		t.Errorf("%d crafted words in %d slots: a run of %d filled slots", n, len(d.slots), longest)
	}
}

// Words that share a prefix, or differ only by trailing zero bytes, are
// told apart.
func TestDictionaryHeadsAndLengths(t *testing.T) {
	var d dictionary
	words := []string{"abcdefgh1234", "abcdefgh5678", "abcdefgh", "abc", "abc\x00", "abc\x00\x00", "abcdefgh12345", ""}
	for i, w := range words {
		if got := d.id([]byte(w)); got != uint32(i) {
			t.Errorf("%q: id %d, want %d", w, got, i)
		}
	}
	for i, w := range words {
		if got := d.id([]byte(w)); got != uint32(i) {
			t.Errorf("%q again: id %d, want %d", w, got, i)
		}
	}
}
