package composition

import (
	"sync"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/unicode/norm"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// PClasses and CClasses are the table rows, in the criteria's order.
var (
	PClasses = []string{PTdef, PCmpt, PTcall, PTres, PRetr, PSys, PUser, PAsst, POther, PUnk}
	CClasses = []string{CEmpty, CUnk, CBlob, CRaw, CStruct, CCode, CText}
)

// BlockFacts is one classified, measured block.
type BlockFacts struct {
	Index   int // block index over the record, schema blocks first
	Message int // message index (the schema pseudo-message is -1)
	P       PClass
	C       string
	Chars   int  // C(b); 0 for a non-serialisable block
	E       int  // E(b); 0 for a non-serialisable block
	Sized   bool // false for a non-serialisable block (its size is not assessable)
	// the M10 census and the axis-C conflict flag
	CConflict bool
	Std, URL  int
	SegChars  int
	RawExport bool
}

// MessageFacts is one message of the adapted record.
type MessageFacts struct {
	Index  int // message index; -1 for the schema pseudo-message
	Schema bool
	First  int // first block index; Blocks is the count
	Blocks int
	E      int  // sum of its sized blocks' E
	Sized  bool // at least one sized block
	User   bool // its first block is P-USER (M07)
	// Stated is the sum of its blocks' stated tokens when every block
	// carries one (a generic record); HasStated says so.
	Stated    int64
	HasStated bool
}

// Classified is a record's blocks on both axes with the counts the
// register's header facts and composition tables read (M01–M05, M13).
type Classified struct {
	Format          string
	Level           string
	Blocks          []BlockFacts
	Msgs            []MessageFacts
	Messages        int // non-schema messages
	SchemaBlocks    int
	EmptyBlocks     int
	Unsized         int
	PConflicts      int
	CConflicts      int
	CTotal, T       int
	Bytes           int // UTF-8 bytes of every sized block's adapted text
	PCount, PEst    map[string]int
	CCount, CEst    map[string]int
	Cross           map[[2]string]int // P × C block counts
	CrossE          map[[2]string]int // P × C sized estimates
	OtherRaw        []string          // P-OTHER raw values as printed (capped), distinct, first-seen order
	UnknownEitherE  int
	UnknownEitherN  int
	NotIdentifiable []string // structural P classes a level cannot show
	AnyBlockStated  bool     // some block carries a valid stated_tokens
	// norms holds N(s) per block for M08 and M09 ("" for unsized blocks):
	// computed once, never printed.
	norms []string
	// words holds every block's M09 tokens as word ids, blocks in order
	// (one dictionary for the record, so equal ids are equal words); block
	// i's are words[wordAt[i]:wordAt[i+1]]. vocabulary is the dictionary's
	// size.
	words      []uint32
	wordAt     []int32
	vocabulary int
}

// Classify measures and classifies every block of an adapted record: NFC
// once per block, every axis-C test and the census once. The per-block
// work is independent, so the blocks are split between two workers (this
// host's two cores); the counts are then summed in block order.
func Classify(lists *ClassLists, format string, rec *pb.SessionRecord) *Classified {
	c := &Classified{Format: format, Level: rec.GetLevel(), PCount: map[string]int{}, PEst: map[string]int{},
		CCount: map[string]int{}, CEst: map[string]int{}, Cross: map[[2]string]int{}, CrossE: map[[2]string]int{}}
	if c.Level != "L2" {
		c.NotIdentifiable = Structural
	}
	col := lists.column(format, c.Level)
	type item struct {
		m *pb.Message
		b *pb.Block
	}
	n := 0
	for _, m := range rec.GetMessages() {
		n += len(m.GetBlocks())
	}
	items := make([]item, 0, n)
	otherSeen := map[string]bool{}
	for _, m := range rec.GetMessages() {
		for _, b := range m.GetBlocks() {
			items = append(items, item{m, b})
		}
	}
	c.Blocks = make([]BlockFacts, len(items))
	c.norms = make([]string, len(items))
	// each worker numbers words in its own dictionary, into an array of
	// its own, noting where each of its blocks ends; the two arrays are
	// then joined into one with the second's ids renumbered into the
	// first's dictionary (one lookup per distinct word)
	var dicts [2]dictionary
	var arrays [2][]uint32
	ends := make([]int32, len(items))
	// one array holds both workers' ids, each in a region sized for a
	// word every four bytes of its text; a worker that needs more moves
	// to an array of its own (append past a region's capacity reallocates)
	var region [3]int
	var shared []uint32
	work := func(w, from, to int) {
		var buf []byte
		dict := &dicts[w]
		ids := shared[region[w]:region[w]:region[w+1]]
		for i := from; i < to; i++ {
			c.Blocks[i], c.norms[i] = measureBlock(col, items[i].m, items[i].b)
			if c.Blocks[i].Sized {
				forEachToken(c.norms[i], &buf, func(word []byte) {
					ids = append(ids, dict.id(word))
				})
			}
			ends[i] = int32(len(ids))
		}
		arrays[w] = ids
	}
	// split where half the text lies before, so one huge block does not
	// leave a worker idle
	total, half := 0, 0
	for _, it := range items {
		total += len(it.b.GetText())
	}
	acc := 0
	for ; half < len(items) && 2*acc < total; half++ {
		acc += len(items[half].b.GetText())
	}
	region = [...]int{0, acc/4 + 16, total/4 + 32}
	shared = make([]uint32, region[2])
	var wg sync.WaitGroup
	wg.Go(func() { work(0, 0, half) })
	work(1, half, len(items))
	wg.Wait()
	remap := make([]uint32, dicts[1].size())
	for local := range remap {
		remap[local] = dicts[0].id(dicts[1].word(uint32(local)))
	}
	// the second worker's ids follow the first's, renumbered; in the
	// shared array this moves them down, each written at or before where
	// it is read
	first := len(arrays[0])
	if unsafe.SliceData(arrays[0]) == unsafe.SliceData(shared) && first+len(arrays[1]) <= len(shared) {
		c.words = shared[:first+len(arrays[1])]
	} else {
		c.words = make([]uint32, first+len(arrays[1]))
		copy(c.words, arrays[0])
	}
	for k, local := range arrays[1] {
		c.words[first+k] = remap[local]
	}
	c.wordAt = make([]int32, len(items)+1)
	for i, end := range ends {
		if i >= half {
			end += int32(first)
		}
		c.wordAt[i+1] = end
	}
	c.vocabulary = dicts[0].size()

	idx, msgIdx := 0, 0
	c.Msgs = make([]MessageFacts, 0, len(rec.GetMessages()))
	for _, m := range rec.GetMessages() {
		mf := MessageFacts{Index: -1, Schema: m.GetSchema(), First: idx, Blocks: len(m.GetBlocks())}
		if !m.GetSchema() {
			mf.Index = msgIdx
			msgIdx++
		}
		allStated := len(m.GetBlocks()) > 0
		for bi, b := range m.GetBlocks() {
			f := &c.Blocks[idx]
			f.Index, f.Message = idx, mf.Index
			idx++
			if f.Sized {
				mf.Sized = true
				mf.E += f.E
			} else {
				c.Unsized++
			}
			if bi == 0 && f.P.Class == PUser {
				mf.User = true
			}
			if b.GetHasStatedTokens() && b.GetStatedTokens() >= 0 && b.GetStatedTokens() <= maxStated {
				mf.Stated += b.GetStatedTokens()
				c.AnyBlockStated = true
			} else {
				allStated = false
			}
			if m.GetSchema() {
				c.SchemaBlocks++
			}
			if f.C == CEmpty {
				c.EmptyBlocks++
			}
			if len(f.P.Losers) > 0 {
				c.PConflicts++
			}
			if f.CConflict {
				c.CConflicts++
			}
			for _, raw := range f.P.Raw {
				// listed once per printed value (ANNEX C-14); a set, as
				// 10,000 blocks may carry 20,000 distinct values
				if printed := capRaw(raw); !otherSeen[printed] {
					otherSeen[printed] = true
					c.OtherRaw = append(c.OtherRaw, printed)
				}
			}
			c.CTotal += f.Chars
			c.Bytes += len(b.GetText())
			c.T += f.E
			c.PCount[f.P.Class]++
			c.PEst[f.P.Class] += f.E
			c.CCount[f.C]++
			c.CEst[f.C] += f.E
			c.Cross[[2]string{f.P.Class, f.C}]++
			c.CrossE[[2]string{f.P.Class, f.C}] += f.E
			if f.P.Class == PUnk || f.C == CUnk {
				c.UnknownEitherN++
				c.UnknownEitherE += f.E
			}
		}
		mf.HasStated = allStated
		c.Msgs = append(c.Msgs, mf)
	}
	c.Messages = msgIdx
	return c
}

// measureBlock is one block's classification and measures, and its N(s)
// ("" for a non-serialisable block).
func measureBlock(col *column, m *pb.Message, b *pb.Block) (BlockFacts, string) {
	var f BlockFacts
	f.P = col.classify(m.GetRoleRaw(), m.GetSchema(), b)
	if b.GetNonSerialisable() {
		f.C = CUnk
		return f, ""
	}
	nfc := b.GetText()
	if sdk.IsASCII(nfc) {
		f.Chars = len(nfc) // ASCII is its own NFC form, a code point a byte
	} else {
		if !norm.NFC.IsNormalString(nfc) {
			nfc = norm.NFC.String(nfc)
		}
		f.Chars = utf8.RuneCountInString(nfc)
	}
	f.E, f.Sized = Estimate(f.Chars), true
	k := contentTests(nfc, f.Chars)
	f.C, f.CConflict, f.Std, f.URL, f.SegChars, f.RawExport = k.class, k.conflict, k.std, k.url, k.segChars, k.rawExport
	return f, normaliseNFC(nfc)
}

// Largest is M15: the block with the largest E, ties to the lowest index;
// ok is false when no block is sized.
func (c *Classified) Largest() (BlockFacts, bool) {
	var best BlockFacts
	found := false
	for _, b := range c.Blocks {
		if b.Sized && (!found || b.E > best.E) {
			best, found = b, true
		}
	}
	return best, found
}
