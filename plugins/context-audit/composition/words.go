package composition

import (
	"bytes"
	"hash/maphash"
)

// dictionary numbers words 0, 1, 2, … in order of first sight: what a
// map[string]uint32 does for M09's word ids, a third cheaper a word
// (measured on the max-size benchmark record: 995,471 tokens, 1,618
// distinct words). A record's vocabulary is small, so the table stays in
// cache. The hash only picks a slot: two words get one id only when their
// bytes are equal. It is seeded at random per dictionary, as Go's maps
// are: a record is the caller's text, and words built to share a slot
// under a known hash would make every insert walk one long cluster.
type dictionary struct {
	seed  maphash.Seed
	slots []slot // open addressing, a power of two long
	text  []byte // every word's bytes, in id order
	ends  []uint32
}

// slot is a word's hash and its id plus one (0: empty).
type slot struct{ hash, id1 uint32 }

// hash picks w's slot, never its equality.
func (d *dictionary) hash(w []byte) uint32 { return uint32(maphash.Bytes(d.seed, w)) }

// id returns w's id, giving it the next one if it is new.
func (d *dictionary) id(w []byte) uint32 {
	if 2*(len(d.ends)+1) > len(d.slots) {
		d.grow()
	}
	h := d.hash(w)
	mask := uint32(len(d.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := d.slots[i]
		if s.id1 == 0 {
			id := uint32(len(d.ends))
			d.text = append(d.text, w...)
			d.ends = append(d.ends, uint32(len(d.text)))
			d.slots[i] = slot{hash: h, id1: id + 1}
			return id
		}
		if s.hash == h && bytes.Equal(d.word(s.id1-1), w) {
			return s.id1 - 1
		}
	}
}

// word is id's bytes.
func (d *dictionary) word(id uint32) []byte {
	start := uint32(0)
	if id > 0 {
		start = d.ends[id-1]
	}
	return d.text[start:d.ends[id]]
}

// size is how many distinct words it holds.
func (d *dictionary) size() int { return len(d.ends) }

// grow doubles the table (the first holds 1,024 slots), keeping it at
// most half full.
func (d *dictionary) grow() {
	if d.slots == nil {
		d.seed = maphash.MakeSeed()
	}
	old := d.slots
	d.slots = make([]slot, max(2*len(old), 1024))
	mask := uint32(len(d.slots) - 1)
	for _, s := range old {
		if s.id1 == 0 {
			continue
		}
		i := s.hash & mask
		for d.slots[i].id1 != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = s
	}
}
