package composition

import (
	"slices"

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
}

// Classified is a record's blocks on both axes with the counts the
// register's header facts and composition tables read (M01–M05, M13).
type Classified struct {
	Level           string
	Blocks          []BlockFacts
	Messages        int // non-schema messages
	SchemaBlocks    int
	EmptyBlocks     int
	PConflicts      int
	CTotal, T       int
	PCount, PEst    map[string]int
	CCount, CEst    map[string]int
	Cross           map[[2]string]int // P × C block counts
	OtherRaw        []string          // P-OTHER raw values, distinct, first-seen order
	UnknownEitherE  int
	UnknownEitherN  int
	NotIdentifiable []string // structural P classes a level cannot show
}

// Classify measures and classifies every block of an adapted record.
func Classify(format string, rec *pb.SessionRecord) *Classified {
	c := &Classified{Level: rec.GetLevel(), PCount: map[string]int{}, PEst: map[string]int{},
		CCount: map[string]int{}, CEst: map[string]int{}, Cross: map[[2]string]int{}}
	if c.Level != "L2" {
		c.NotIdentifiable = Structural
	}
	idx, msgIdx := 0, 0
	for _, m := range rec.GetMessages() {
		mi := -1
		if !m.GetSchema() {
			mi = msgIdx
			msgIdx++
		}
		for _, b := range m.GetBlocks() {
			f := BlockFacts{Index: idx, Message: mi}
			idx++
			f.P = ClassifyP(format, c.Level, m.GetRoleRaw(), m.GetSchema(), b)
			f.C = ClassifyC(b.GetText(), !b.GetNonSerialisable())
			if !b.GetNonSerialisable() {
				f.Chars = Chars(b.GetText())
				f.E, f.Sized = Estimate(f.Chars), true
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
			for _, raw := range f.P.Raw {
				if !slices.Contains(c.OtherRaw, raw) {
					c.OtherRaw = append(c.OtherRaw, raw)
				}
			}
			c.CTotal += f.Chars
			c.T += f.E
			c.PCount[f.P.Class]++
			c.PEst[f.P.Class] += f.E
			c.CCount[f.C]++
			c.CEst[f.C] += f.E
			c.Cross[[2]string{f.P.Class, f.C}]++
			if f.P.Class == PUnk || f.C == CUnk {
				c.UnknownEitherN++
				c.UnknownEitherE += f.E
			}
			c.Blocks = append(c.Blocks, f)
		}
	}
	c.Messages = msgIdx
	return c
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
