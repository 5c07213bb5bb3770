package familytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// WaiversHeading is the heading of the ANNEX section that states the words
// of the host's baseline of verdict words (selfcheck.VerdictWords) the
// family waives: a table "| word | reason |" with one row per waiver, or
// the sentence "None.".
const WaiversHeading = "## Verdict words the host's baseline waives"

// AnnexWaivers reads the waivers an ANNEX states in its WaiversHeading
// section, in the table's order: the section's first table, "| word |
// reason |", one row per waiver; none when, instead of a table, the
// section has the line "None.". Prose may stand before and after either.
// A missing section, a table of another shape, a row without a word or a
// reason, or a word given twice is an error. A word may be written in
// backticks; a reason holding a "|" writes it "\|".
func AnnexWaivers(annex []byte) ([]sdk.VerdictWaiver, error) {
	var lines []string
	found, in := 0, false
	sc := bufio.NewScanner(bytes.NewReader(annex))
	sc.Buffer(nil, len(annex)+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == WaiversHeading:
			found++
			in = true
			continue
		case strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "## "):
			in = false
		}
		if in {
			lines = append(lines, line)
		}
	}
	switch found {
	case 0:
		return nil, fmt.Errorf("the ANNEX has no section %q: write one, with its table or \"None.\"", WaiversHeading)
	case 1:
	default:
		return nil, fmt.Errorf("the ANNEX has the section %q %d times", WaiversHeading, found)
	}
	first := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "|") })
	none := slices.Contains(lines, "None.")
	switch {
	case first < 0 && none:
		return nil, nil
	case first < 0:
		return nil, errors.New(`the waivers section has neither a table | word | reason | nor the line "None."`)
	case none:
		return nil, errors.New(`the waivers section has both a table and the line "None."`)
	}
	table := lines[first:]
	if end := slices.IndexFunc(table, func(l string) bool { return !strings.HasPrefix(l, "|") }); end >= 0 {
		table = table[:end]
	}
	if head := cells(table[0]); len(head) != 2 || !strings.EqualFold(head[0], "word") || !strings.EqualFold(head[1], "reason") {
		return nil, errors.New("the waivers table's header is not | word | reason |")
	}
	if len(table) < 2 {
		return nil, errors.New("the waivers table has no | --- | --- | line under its header")
	}
	if sep := cells(table[1]); len(sep) != 2 || strings.Trim(sep[0], "-: ") != "" || strings.Trim(sep[1], "-: ") != "" {
		return nil, errors.New("the waivers table has no | --- | --- | line under its header")
	}
	if len(table) == 2 {
		return nil, errors.New(`the waivers table has no row: write "None." instead of a table`)
	}
	if slices.ContainsFunc(lines[first+len(table):], func(l string) bool { return strings.HasPrefix(l, "|") }) {
		return nil, errors.New("the waivers section has a second table")
	}
	var out []sdk.VerdictWaiver
	for i, line := range table[2:] {
		row := cells(line)
		if len(row) != 2 {
			return nil, fmt.Errorf("waivers table row %d: not two cells", i+1)
		}
		word := strings.Trim(row[0], "`")
		if word == "" || row[1] == "" {
			return nil, fmt.Errorf("waivers table row %d: a word and a reason", i+1)
		}
		if slices.ContainsFunc(out, func(w sdk.VerdictWaiver) bool { return w.Word == word }) {
			return nil, fmt.Errorf("waivers table row %d: the word %q again", i+1, word)
		}
		out = append(out, sdk.VerdictWaiver{Word: word, Reason: row[1]})
	}
	return out, nil
}

// cells splits one Markdown table row into its trimmed cells.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var out []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			out = append(out, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(out, strings.TrimSpace(cell.String()))
}

// WaiversStated fails tb unless the verdict waivers in d's tripwires are
// exactly those annex states in its WaiversHeading section: the same
// words, each with the same reason, order aside. A family that waives a
// word the ANNEX does not state, or whose ANNEX states one the family
// does not waive, fails; so does an ANNEX without the section (write
// "None." under it when the family waives nothing).
func WaiversStated(tb testing.TB, d *pb.FamilyDescription, annex []byte) {
	tb.Helper()
	stated, err := AnnexWaivers(annex)
	if err != nil {
		tb.Fatal(err)
	}
	declared := map[string]string{}
	for i, w := range d.GetTripwires().GetVerdictWaivers() {
		if _, twice := declared[w.GetWord()]; twice {
			tb.Errorf("the description's verdict waiver %d waives %q again", i+1, w.GetWord())
		}
		declared[w.GetWord()] = w.GetReason()
	}
	for _, w := range stated {
		reason, ok := declared[w.Word]
		switch {
		case !ok:
			tb.Errorf("the ANNEX states a waiver of %q that the family's tripwires do not declare", w.Word)
		case reason != w.Reason:
			tb.Errorf("the waiver of %q: the family's reason is %q, the ANNEX's %q", w.Word, reason, w.Reason)
		}
		delete(declared, w.Word)
	}
	for _, word := range slices.Sorted(maps.Keys(declared)) {
		tb.Errorf("the family waives %q, which its ANNEX's section %q does not state", word, WaiversHeading)
	}
}

// WaiversStatedIn is WaiversStated with the ANNEX read from path (a
// criteria folder's ANNEX.md, from the test's package folder).
func WaiversStatedIn(tb testing.TB, d *pb.FamilyDescription, path string) {
	tb.Helper()
	annex, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	WaiversStated(tb, d, annex)
}
