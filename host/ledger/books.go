package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"

	"github.com/assay-audit/assay/host/store"
)

// Book is a ledger line with its amendments applied: lines are never
// rewritten, so what the books say of a line is the line plus the rows
// that refer to it.
type Book struct {
	Line store.Line
	// CAD is the line's CAD block after its latest fmv amendment (the
	// line's own block when none).
	CAD store.CAD
	// CADAmendment is the fmv amendment CAD comes from; nil for the line's
	// own block.
	CADAmendment *int64
	// Refund is the line's refund amendment; nil when it is not refunded.
	Refund *store.Amendment
}

// LoadBooks reads every line with its amendments applied, oldest first.
func LoadBooks(ctx context.Context, st *store.Store) ([]Book, error) {
	lines, amends, err := load(ctx, st)
	if err != nil {
		return nil, err
	}
	return Apply(lines, amends), nil
}

// Apply joins lines with their amendments, in line order. The latest fmv
// amendment of a line wins: a re-rate under another basis is a later row.
func Apply(lines []store.Line, amends []store.Amendment) []Book {
	fmv := map[int64]store.Amendment{}
	refund := map[int64]store.Amendment{}
	for _, a := range amends {
		switch a.Kind {
		case "fmv":
			if cur, ok := fmv[a.LineID]; !ok || a.ID > cur.ID {
				fmv[a.LineID] = a
			}
		case "refund":
			// Refund writes one per line; were there two, the latest is
			// the one the kill-line report counts too
			refund[a.LineID] = a
		}
	}
	out := make([]Book, 0, len(lines))
	for _, l := range lines {
		b := Book{Line: l, CAD: l.CAD}
		if a, ok := fmv[l.ID]; ok && a.CAD.Rate != nil {
			id := a.ID
			b.CAD, b.CADAmendment = store.CAD{Rate: a.CAD.Rate, RateDate: a.CAD.RateDate, Basis: a.CAD.Basis}, &id
		}
		if a, ok := refund[l.ID]; ok {
			b.Refund = &a
		}
		out = append(out, b)
	}
	return out
}

// Known is whether the line has a CAD rate.
func (b Book) Known() bool { return !b.CAD.Pending && b.CAD.Rate != nil }

// Basis is the basis of the line's CAD rate ("" when it has none).
func (b Book) Basis() string {
	if !b.Known() || b.CAD.Basis == nil {
		return ""
	}
	return *b.CAD.Basis
}

// RefundedUnits is what the line's refund gave back (0 when none).
func (b Book) RefundedUnits() int64 {
	if b.Refund == nil || b.Refund.RefundUnits == nil {
		return 0
	}
	return *b.Refund.RefundUnits
}

// CADAmount is the line's price in CAD at its rate, exact (never rounded
// to cents: rounding is the filer's rule, not the ledger's); ok is false
// when the line waits for a rate.
func (b Book) CADAmount() (amount string, ok bool, err error) {
	d, ok, err := b.cad()
	if !ok || err != nil {
		return "", ok, err
	}
	return d.String(), true, nil
}

func (b Book) cad() (*decimal, bool, error) {
	if !b.Known() {
		return nil, false, nil
	}
	c, scale, err := parseDecimal(*b.CAD.Rate)
	if err != nil {
		return nil, false, fmt.Errorf("ledger line %d: %w", b.Line.ID, err)
	}
	c.Mul(c, big.NewInt(b.Line.PriceUSDCUnits))
	return &decimal{c: c, scale: scale + usdcScale}, true, nil
}

// usdcScale is USDC's decimals: a price in units is a price in
// millionths of a USDC.
const usdcScale = 6

// USDC prints USDC units as an exact decimal with six places.
func USDC(units int64) string {
	sign, u := "", uint64(units)
	if units < 0 {
		sign, u = "-", uint64(^units)+1
	}
	return fmt.Sprintf("%s%d.%06d", sign, u/1_000_000, u%1_000_000)
}

// errRate is a stored rate that is not a plain decimal: LoadRates accepts
// nothing else, so the store was written some other way.
var errRate = errors.New("CAD rate is not a plain decimal")

var plainDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

func parseDecimal(s string) (*big.Int, int, error) {
	if !plainDecimal.MatchString(s) {
		return nil, 0, errRate
	}
	whole, frac, _ := strings.Cut(s, ".")
	c, ok := new(big.Int).SetString(whole+frac, 10)
	if !ok {
		return nil, 0, errRate
	}
	return c, len(frac), nil
}

// decimal is c × 10^-scale: sums of products of decimals stay exact.
type decimal struct {
	c     *big.Int
	scale int
}

var ten = big.NewInt(10)

func (d *decimal) add(x *decimal) {
	if d.c == nil {
		d.c = new(big.Int)
	}
	for d.scale < x.scale {
		d.c.Mul(d.c, ten)
		d.scale++
	}
	y := new(big.Int).Set(x.c)
	for s := x.scale; s < d.scale; s++ {
		y.Mul(y, ten)
	}
	d.c.Add(d.c, y)
}

// String is the exact value with trailing zeros dropped down to two
// places (cents are always shown, nothing below them is lost).
func (d *decimal) String() string {
	if d.c == nil {
		return "0.00"
	}
	digits := new(big.Int).Abs(d.c).String()
	sign := ""
	if d.c.Sign() < 0 {
		sign = "-"
	}
	if len(digits) <= d.scale {
		digits = strings.Repeat("0", d.scale-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-d.scale], digits[len(digits)-d.scale:]
	frac = strings.TrimRight(frac, "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return sign + whole + "." + frac
}

// Sums is the money of a set of ledger lines, every amount exact: USDC
// in units and as a six-place decimal, CAD as the sum of each line's price
// times its own rate.
type Sums struct {
	Lines     int    `json:"lines"`
	USDCUnits int64  `json:"usdc_units"`
	USDC      string `json:"usdc"`
	// CAD sums the lines with a rate; the others are CADPendingLines.
	CAD             string `json:"cad"`
	CADLines        int    `json:"cad_lines"`
	CADPendingLines int    `json:"cad_pending_lines"`
	RefundedLines   int    `json:"refunded_lines"`
	RefundedUnits   int64  `json:"refunded_usdc_units"`
	RefundedUSDC    string `json:"refunded_usdc"`
	// NetUnits is USDCUnits less RefundedUnits, before rail fees.
	NetUnits int64  `json:"net_usdc_units"`
	NetUSDC  string `json:"net_usdc"`
}

// Totals keeps outside payments and house lines (the operator's own
// proofs, paid from its own wallets) apart: only the first is income.
type Totals struct {
	Outside Sums `json:"outside"`
	House   Sums `json:"house"`
}

// ServiceTotals is one service's totals, every criteria version together.
type ServiceTotals struct {
	Service string `json:"service"`
	Totals
}

// DayTotals is one UTC day's totals, every service together.
type DayTotals struct {
	Day string `json:"day"`
	Totals
}

// Books is the money in the ledger: all of it, by service and by day.
type Books struct {
	// CADBases are the bases the CAD sums are under; more than one means
	// the sums add rates of different bases.
	CADBases  []string        `json:"cad_bases"`
	All       Totals          `json:"all"`
	ByService []ServiceTotals `json:"by_service"`
	ByDay     []DayTotals     `json:"by_day"`
}

type sumAcc struct {
	s   Sums
	cad decimal
}

func (a *sumAcc) add(b Book) error {
	a.s.Lines++
	a.s.USDCUnits += b.Line.PriceUSDCUnits
	d, ok, err := b.cad()
	if err != nil {
		return err
	}
	if ok {
		a.cad.add(d)
		a.s.CADLines++
	} else {
		a.s.CADPendingLines++
	}
	if b.Refund != nil {
		a.s.RefundedLines++
		a.s.RefundedUnits += b.RefundedUnits()
	}
	return nil
}

func (a *sumAcc) sums() Sums {
	s := a.s
	s.NetUnits = s.USDCUnits - s.RefundedUnits
	s.USDC, s.RefundedUSDC, s.NetUSDC, s.CAD = USDC(s.USDCUnits), USDC(s.RefundedUnits), USDC(s.NetUnits), a.cad.String()
	return s
}

type totalsAcc struct{ outside, house sumAcc }

func (t *totalsAcc) add(b Book) error {
	if b.Line.House {
		return t.house.add(b)
	}
	return t.outside.add(b)
}

func (t *totalsAcc) totals() Totals {
	return Totals{Outside: t.outside.sums(), House: t.house.sums()}
}

// BuildBooks totals books.
func BuildBooks(books []Book) (Books, error) {
	var all totalsAcc
	bySvc, byDay := map[string]*totalsAcc{}, map[string]*totalsAcc{}
	bases := map[string]bool{}
	for _, b := range books {
		if b.Known() {
			bases[b.Basis()] = true
		}
		for _, t := range []*totalsAcc{&all, accFor(bySvc, b.Line.Service), accFor(byDay, b.Line.Day)} {
			if err := t.add(b); err != nil {
				return Books{}, err
			}
		}
	}
	out := Books{CADBases: sortedKeys(bases), All: all.totals(), ByService: []ServiceTotals{}, ByDay: []DayTotals{}}
	for _, k := range sortedKeys(bySvc) {
		out.ByService = append(out.ByService, ServiceTotals{Service: k, Totals: bySvc[k].totals()})
	}
	for _, k := range sortedKeys(byDay) {
		out.ByDay = append(out.ByDay, DayTotals{Day: k, Totals: byDay[k].totals()})
	}
	return out, nil
}

func accFor(m map[string]*totalsAcc, k string) *totalsAcc {
	if m[k] == nil {
		m[k] = &totalsAcc{}
	}
	return m[k]
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Text renders the books for a terminal.
func (b Books) Text() string {
	var out strings.Builder
	out.WriteString("\nbooks (USDC exact to 6 places; CAD = each line's price × its own rate, exact, not rounded")
	switch len(b.CADBases) {
	case 0:
		out.WriteString("; no CAD rate yet)\n")
	case 1:
		fmt.Fprintf(&out, "; basis %q)\n", b.CADBases[0])
	default:
		fmt.Fprintf(&out, "; MIXED bases %s: the CAD sums add rates of different bases)\n", quoteAll(b.CADBases))
	}
	out.WriteString("  all:\n" + b.All.text())
	for _, s := range b.ByService {
		out.WriteString("  service " + s.Service + ":\n" + s.text())
	}
	for _, d := range b.ByDay {
		out.WriteString("  day " + d.Day + ":\n" + d.text())
	}
	return out.String()
}

func (t Totals) text() string {
	return "    outside: " + t.Outside.text() + "\n    house:   " + t.House.text() + "\n"
}

func (s Sums) text() string {
	if s.Lines == 0 {
		return "none"
	}
	out := fmt.Sprintf("%s, %s USDC (%d units)", plural(s.Lines, "line"), s.USDC, s.USDCUnits)
	if s.RefundedLines > 0 {
		out += fmt.Sprintf(", refunded %s %s USDC (%d units), net %s USDC", plural(s.RefundedLines, "line"), s.RefundedUSDC, s.RefundedUnits, s.NetUSDC)
	}
	switch {
	case s.CADLines == 0:
		out += "; CAD unknown"
	default:
		out += fmt.Sprintf("; CAD %s on %s", s.CAD, plural(s.CADLines, "line"))
	}
	if s.CADPendingLines > 0 {
		out += fmt.Sprintf(", %s waiting for a rate", plural(s.CADPendingLines, "line"))
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
