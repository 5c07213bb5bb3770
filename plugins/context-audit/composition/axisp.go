package composition

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Axis-P classes in the criteria's total order.
const (
	PTdef  = "P-TDEF"
	PCmpt  = "P-CMPT"
	PTcall = "P-TCALL"
	PTres  = "P-TRES"
	PRetr  = "P-RETR"
	PSys   = "P-SYS"
	PUser  = "P-USER"
	PAsst  = "P-ASST"
	POther = "P-OTHER"
	PUnk   = "P-UNK"
)

// Structural classes cannot be identified from a bare role list (L0/L1).
var Structural = []string{PTdef, PCmpt, PTcall, PTres, PRetr}

// testable is the classes a list can fire, in the criteria's total order;
// P-OTHER and P-UNK are the residual, never a list's.
var testable = []string{PTdef, PCmpt, PTcall, PTres, PRetr, PSys, PUser, PAsst}

// PClass is one block's axis-P result: the winner and the classes that
// also fired (a conflict when there are any).
type PClass struct {
	Class  string
	Losers []string
	// Raw holds the unmatched raw values when the class is P-OTHER.
	Raw []string
}

// ClassLists are the words each axis-P class reads, per format and level:
// the criteria folder's class-lists.json (ANNEX C-9a). They are data so
// that a criteria revision, not an engine change, maps a new format's
// words; the independent generator reads the same file.
type ClassLists struct {
	columns []column
}

// column is one column of ANNEX C-9's table.
type column struct {
	formats, levels []string
	readsKind       bool
	// tests is indexed like testable; a nil entry never fires
	tests [8]*classTest
}

type classTest struct {
	Roles        []string `json:"role_raw"`
	Kinds        []string `json:"kind_raw"`
	Schema       bool     `json:"schema"`
	TextContains []string `json:"text_contains"`
	ResultOf     []string `json:"result_of_call_named"`
}

// ParseClassLists reads class-lists.json. Anything it does not know is an
// error: a misspelt member would otherwise drop a rule without a word.
func ParseClassLists(raw []byte) (*ClassLists, error) {
	var doc struct {
		Name    string `json:"class_lists"`
		Decided string `json:"decided_in"`
		Columns []struct {
			Formats []string              `json:"formats"`
			Levels  []string              `json:"levels"`
			Reads   []string              `json:"reads"`
			Classes map[string]*classTest `json:"classes"`
		} `json:"columns"`
	}
	if err := uniqueNames(json.NewDecoder(bytes.NewReader(raw))); err != nil {
		return nil, fmt.Errorf("class lists: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("class lists: %w", err)
	}
	l := &ClassLists{}
	anyFormat := map[string]bool{}
	for i, c := range doc.Columns {
		col := column{formats: c.Formats, levels: c.Levels}
		if len(c.Formats) == 0 || len(c.Levels) == 0 {
			return nil, fmt.Errorf("class lists: column %d names no format or no level", i)
		}
		for _, lv := range c.Levels {
			if lv != "L0" && lv != "L1" && lv != "L2" {
				return nil, fmt.Errorf("class lists: column %d: a level other than L0, L1, L2", i)
			}
			if slices.Contains(c.Formats, "*") {
				anyFormat[lv] = true
			}
		}
		if !slices.Contains(c.Reads, "role_raw") || len(c.Reads) > 2 || (len(c.Reads) == 2 && !slices.Contains(c.Reads, "kind_raw")) {
			return nil, fmt.Errorf("class lists: column %d: reads is role_raw, or role_raw and kind_raw", i)
		}
		col.readsKind = slices.Contains(c.Reads, "kind_raw")
		for class, t := range c.Classes {
			k := slices.Index(testable, class)
			if k < 0 || t == nil {
				return nil, fmt.Errorf("class lists: column %d: %q is not a testable axis-P class", i, class)
			}
			if class == PTres && t.ResultOf != nil {
				return nil, fmt.Errorf("class lists: column %d: result_of_call_named is defined by the P-TRES test itself", i)
			}
			for _, words := range [][]string{t.Roles, t.Kinds, t.TextContains, t.ResultOf} {
				if slices.Contains(words, "") {
					return nil, fmt.Errorf("class lists: column %d: %s lists an empty word", i, class)
				}
			}
			col.tests[k] = t
		}
		l.columns = append(l.columns, col)
	}
	for _, lv := range []string{"L0", "L1", "L2"} {
		if !anyFormat[lv] {
			return nil, errors.New("class lists: level " + lv + " has no \"*\" column")
		}
	}
	return l, nil
}

// column is the first column for format at level; ParseClassLists makes
// sure there is one for every level.
func (l *ClassLists) column(format, level string) *column {
	for i := range l.columns {
		c := &l.columns[i]
		if slices.Contains(c.levels, level) && (slices.Contains(c.formats, format) || slices.Contains(c.formats, "*")) {
			return c
		}
	}
	return nil // a level outside L0-L2: nothing fires, the raw role is reported
}

// ClassifyP applies ANNEX C-9 to a block of a message with the given role,
// with the words of the column for format at level.
func (l *ClassLists) ClassifyP(format, level, role string, schema bool, b *pb.Block) PClass {
	return l.column(format, level).classify(role, schema, b)
}

func (c *column) classify(role string, schema bool, b *pb.Block) PClass {
	var fired []string
	kind := b.GetKindRaw()
	if c != nil {
		for k, t := range c.tests {
			if t != nil && c.fires(k, role, kind, schema, b) {
				fired = append(fired, testable[k])
			}
		}
	}
	if len(fired) > 0 {
		return PClass{Class: fired[0], Losers: fired[1:]}
	}
	// nothing fired: every non-empty raw value the column reads matched no
	// class list (a value on a list always fires its class), so all of
	// them are reported (ANNEX C-9)
	var raw []string
	if role != "" {
		raw = append(raw, role)
	}
	if c != nil && c.readsKind && kind != "" {
		raw = append(raw, kind)
	}
	if len(raw) > 0 {
		return PClass{Class: POther, Raw: raw}
	}
	return PClass{Class: PUnk}
}

// fires is test k of the column, any of its members (ANNEX C-9a).
func (c *column) fires(k int, role, kind string, schema bool, b *pb.Block) bool {
	t := c.tests[k]
	switch {
	case role != "" && slices.Contains(t.Roles, role), kind != "" && slices.Contains(t.Kinds, kind), t.Schema && schema:
		return true
	}
	if len(t.TextContains) > 0 && !b.GetNonSerialisable() {
		text := b.GetText()
		for _, s := range t.TextContains {
			if strings.Contains(text, s) {
				return true
			}
		}
	}
	if len(t.ResultOf) > 0 && slices.Contains(t.ResultOf, b.GetName()) {
		tres := slices.Index(testable, PTres)
		return c.tests[tres] != nil && tres != k && c.fires(tres, role, kind, schema, b)
	}
	return false
}

// uniqueNames reads one JSON value and refuses an object naming a member
// twice: the decoder would keep the last, dropping the first's words.
func uniqueNames(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return err
			}
			if s, _ := name.(string); seen[s] {
				return errors.New("a member name given twice")
			} else {
				seen[s] = true
			}
			if err := uniqueNames(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := uniqueNames(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}
