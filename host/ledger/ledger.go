// Package ledger writes and reads the append-only payments ledger: one line
// per paid-route answer, the fields every criteria shares plus the family's
// closed list, a CAD fair-market-value block from the operator's rates
// file, amendment rows for later rates and refunds, and the kill-line
// figures every criteria asks for.
package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ErrRefusedLine is wrapped when a family's ledger fields break its
// declared closed list: the line is never written.
var ErrRefusedLine = errors.New("ledger line refused")

// Fields is a family's declared ledger fields with their patterns
// compiled once: a line is checked on every paid answer.
type Fields struct {
	decl     []*pb.LedgerField
	declared map[string]*pb.LedgerField
	// patterns holds each STRING field's anchored pattern; nil where it
	// does not compile (every value outside the vocabulary is refused)
	patterns map[string]*regexp.Regexp
}

// NewFields compiles decl.
func NewFields(decl []*pb.LedgerField) *Fields {
	f := &Fields{decl: decl, declared: make(map[string]*pb.LedgerField, len(decl)), patterns: map[string]*regexp.Regexp{}}
	for _, d := range decl {
		f.declared[d.GetName()] = d
		if p := d.GetPattern(); p != "" {
			re, err := regexp.Compile(`\A(?:` + p + `)\z`)
			if err != nil {
				re = nil
			}
			f.patterns[d.GetName()] = re
		}
	}
	return f
}

// CheckFields validates a family's ledger fields (a JSON object) against
// its declaration and returns them canonical. Every declared field must be
// present; no other key may be; each value must have the declared type, a
// string must be in the declared vocabulary or match the declared pattern,
// and null only where declared nullable. Errors name the rule, never a
// value.
func CheckFields(decl []*pb.LedgerField, raw []byte) (string, error) {
	return NewFields(decl).Check(raw)
}

// Check is CheckFields with the compiled declaration.
func (f *Fields) Check(raw []byte) (string, error) {
	tree, err := signing.Decode(raw)
	if err != nil {
		return "", fmt.Errorf("%w: not JSON", ErrRefusedLine)
	}
	fields, ok := tree.(map[string]any)
	if !ok {
		return "", fmt.Errorf("%w: not an object", ErrRefusedLine)
	}
	decl, declared := f.decl, f.declared
	for k := range fields {
		if declared[k] == nil {
			return "", fmt.Errorf("%w: undeclared key", ErrRefusedLine)
		}
	}
	for name, d := range declared {
		v, present := fields[name]
		if !present {
			return "", fmt.Errorf("%w: declared field %d missing", ErrRefusedLine, indexOf(decl, name))
		}
		if err := checkValue(d, v, f.patterns[name]); err != nil {
			return "", fmt.Errorf("%w: field %d: %s", ErrRefusedLine, indexOf(decl, name), err.Error())
		}
	}
	c, err := signing.Canonical(fields)
	if err != nil {
		return "", fmt.Errorf("%w: not canonicalizable", ErrRefusedLine)
	}
	return string(c), nil
}

func indexOf(decl []*pb.LedgerField, name string) int {
	for i, d := range decl {
		if d.GetName() == name {
			return i
		}
	}
	return -1
}

func checkValue(d *pb.LedgerField, v any, pattern *regexp.Regexp) error {
	if v == nil {
		if d.GetNullable() {
			return nil
		}
		return errors.New("null where not nullable")
	}
	switch d.GetType() {
	case pb.LedgerField_NUMBER:
		if _, ok := v.(json.Number); ok {
			return nil
		}
		if s, ok := v.(string); ok {
			for _, w := range d.GetVocabulary() {
				if s == w {
					return nil
				}
			}
		}
		return errors.New("not a number")
	case pb.LedgerField_BOOL:
		if _, ok := v.(bool); !ok {
			return errors.New("not a boolean")
		}
	case pb.LedgerField_STRING:
		s, ok := v.(string)
		if !ok {
			return errors.New("not a string")
		}
		for _, w := range d.GetVocabulary() {
			if s == w {
				return nil
			}
		}
		if d.GetPattern() != "" {
			if pattern == nil {
				return errors.New("declared pattern does not compile")
			}
			if pattern.MatchString(s) {
				return nil
			}
		}
		return errors.New("string outside the declared vocabulary")
	default:
		return errors.New("declared type unknown")
	}
	return nil
}

// Rates are the operator's USD/CAD rates by UTC day.
type Rates struct {
	byDay map[string]string
	Basis string
}

var rateLine = regexp.MustCompile(`^([0-9]{4}-[0-9]{2}-[0-9]{2}),([0-9]+(\.[0-9]+)?)$`)

// LoadRates reads a rates file: an optional header line "date,usd_cad",
// then one "YYYY-MM-DD,rate" line per day (CAD per USD, a plain decimal).
func LoadRates(path, basis string) (*Rates, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rates file: %w", err)
	}
	defer f.Close()
	r := &Rates{byDay: map[string]string{}, Basis: basis}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || (n == 1 && strings.HasPrefix(line, "date,")) {
			continue
		}
		m := rateLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("rates file line %d: want YYYY-MM-DD,rate", n)
		}
		if _, err := time.Parse("2006-01-02", m[1]); err != nil {
			return nil, fmt.Errorf("rates file line %d: not a date", n)
		}
		r.byDay[m[1]] = m[2]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("rates file: %w", err)
	}
	return r, nil
}

// For returns the CAD block for a day.
func (r *Rates) For(day string) store.CAD {
	if r == nil {
		return store.CAD{Pending: true}
	}
	rate, ok := r.byDay[day]
	if !ok {
		return store.CAD{Pending: true}
	}
	d, b := day, r.Basis
	return store.CAD{Rate: &rate, RateDate: &d, Basis: &b}
}

// Writer appends lines.
type Writer struct {
	Store *store.Store
	// Rates may be nil: every line is then cad_pending.
	Rates *Rates
	// House lists the operator's own wallets; their payments never start
	// Day-0.
	House map[string]bool
}

// Entry is what the host knows about one paid answer.
type Entry struct {
	Desc        *pb.FamilyDescription
	At          time.Time
	Payer       string // "" when unknown (payments off)
	PriceUnits  int64
	TxID        string // "" when none
	FeeLamports *int64
	House       bool
	// Fields are the family's checked, canonical ledger fields.
	Fields string
}

// Append writes one line (a paid answer with no claim: payments off).
func (w *Writer) Append(ctx context.Context, e Entry) (int64, error) {
	return w.Store.AppendLine(ctx, w.line(e))
}

// Deliver writes the line of a delivered report and moves its payment's
// claim to delivered, in one transaction (store.DeliverClaim).
func (w *Writer) Deliver(ctx context.Context, e Entry, paymentID, owner string) (int64, error) {
	return w.Store.DeliverClaim(ctx, paymentID, owner, w.line(e), e.At)
}

func (w *Writer) line(e Entry) store.Line {
	l := store.Line{
		Service:          e.Desc.GetService(),
		CriteriaID:       e.Desc.GetCriteriaId(),
		CriteriaRevision: e.Desc.GetCriteriaRevision(),
		At:               e.At,
		PriceUSDCUnits:   e.PriceUnits,
		FeeLamports:      e.FeeLamports,
		House:            e.House || w.House[e.Payer],
		CAD:              w.Rates.For(store.Day(e.At)),
		FamilyFields:     e.Fields,
	}
	if e.Payer != "" {
		l.Payer = &e.Payer
	}
	if e.TxID != "" {
		l.TxID = &e.TxID
	}
	return l
}

// FillFMV writes an fmv amendment for every line still cad_pending (and not
// yet amended) whose day the rates now cover. It returns how many it wrote.
func FillFMV(ctx context.Context, st *store.Store, rates *Rates, now time.Time) (int, error) {
	lines, amends, err := load(ctx, st)
	if err != nil {
		return 0, err
	}
	filled := map[int64]bool{}
	for _, a := range amends {
		if a.Kind == "fmv" {
			filled[a.LineID] = true
		}
	}
	n := 0
	for _, l := range lines {
		if !l.CAD.Pending || filled[l.ID] {
			continue
		}
		cad := rates.For(l.Day)
		if cad.Pending {
			continue
		}
		if _, err := st.AppendAmendment(ctx, store.Amendment{LineID: l.ID, Kind: "fmv", At: now, CAD: cad}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Errors of Refund.
var (
	ErrNoSuchTx        = errors.New("no ledger line carries that transaction id")
	ErrAlreadyRefunded = errors.New("that line is already refunded")
)

// Refund writes a refund amendment for the line of a transaction.
func Refund(ctx context.Context, st *store.Store, tx string, now time.Time) (int64, error) {
	lines, amends, err := load(ctx, st)
	if err != nil {
		return 0, err
	}
	for _, l := range lines {
		if l.TxID == nil || *l.TxID != tx {
			continue
		}
		for _, a := range amends {
			if a.LineID == l.ID && a.Kind == "refund" {
				return 0, ErrAlreadyRefunded
			}
		}
		units := l.PriceUSDCUnits
		return st.AppendAmendment(ctx, store.Amendment{LineID: l.ID, Kind: "refund", At: now, RefundUnits: &units})
	}
	return 0, ErrNoSuchTx
}

func load(ctx context.Context, st *store.Store) ([]store.Line, []store.Amendment, error) {
	lines, err := st.Lines(ctx)
	if err != nil {
		return nil, nil, err
	}
	amends, err := st.Amendments(ctx)
	return lines, amends, err
}
