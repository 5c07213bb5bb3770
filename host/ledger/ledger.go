// Package ledger writes and reads the append-only payments ledger: one line
// per paid-route answer, the fields every criteria shares plus the family's
// closed list, a CAD fair-market-value block from the operator's rates
// file, amendment rows for later rates and refunds, and the kill-line
// figures every criteria asks for.
package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/store"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/selfcheck"
)

// ErrRefusedLine is wrapped when a family's ledger fields break its
// declared closed list (selfcheck.ErrRefusedLine): the line is never
// written.
var ErrRefusedLine = selfcheck.ErrRefusedLine

// Fields is a family's declared ledger fields, compiled once
// (selfcheck.LedgerFields: the check an author's in-process test runs).
type Fields = selfcheck.LedgerFields

// NewFields compiles decl.
func NewFields(decl []*pb.LedgerField) *Fields { return selfcheck.NewLedgerFields(decl) }

// CheckFields validates a family's ledger fields against its declaration
// (selfcheck.CheckLedgerFields).
func CheckFields(decl []*pb.LedgerField, raw []byte) (string, error) {
	return selfcheck.CheckLedgerFields(decl, raw)
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

// Issue writes the line of a report about to be written, moves its
// payment's claim to issued and keeps the sealed answer for redelivery
// (nil: none), in one transaction (store.IssueClaim).
func (w *Writer) Issue(ctx context.Context, e Entry, paymentID, owner string, answer *store.Issued) (int64, error) {
	return w.Store.IssueClaim(ctx, paymentID, owner, w.line(e), answer, e.At)
}

// OpenAndIssue writes a claim not yet written (payment.Claim.Pending)
// already issued, with the line and the kept answer, in one transaction
// (store.OpenAndIssueClaim).
func (w *Writer) OpenAndIssue(ctx context.Context, e Entry, c store.Claim, answer *store.Issued) (int64, error) {
	return w.Store.OpenAndIssueClaim(ctx, c, w.line(e), answer, e.At)
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

// FillOptions are a fill-fmv run's choices.
type FillOptions struct {
	// Rebasis re-rates under the rates' basis every line whose CAD rate
	// states another; without it such lines refuse the run, so books never
	// change basis by a typo in --basis.
	Rebasis bool
}

// Unrated is a line without a CAD rate under a fill-fmv run's basis.
type Unrated struct {
	LineID int64
	Day    string
	// Basis is the other basis the line keeps; "" when it has no rate.
	Basis string
}

// Filled is what a fill-fmv run wrote and what it left.
type Filled struct {
	Written int
	// Rebased counts the written rows that re-rate a line from another
	// basis.
	Rebased int
	// Waiting are the lines still without any rate, oldest first.
	Waiting []Unrated
	// OtherBasis are the lines a rebasis run left on their old basis: the
	// rates have no rate for their day.
	OtherBasis []Unrated
}

// BasisConflictError refuses a fill-fmv run whose rates state another
// basis than lines already carry.
type BasisConflictError struct {
	Want  string
	Have  []string
	Lines int
}

// Error names both bases: which one is right is the operator's call.
func (e *BasisConflictError) Error() string {
	return fmt.Sprintf("%d lines already carry a CAD rate under basis %s, not %q", e.Lines, quoteAll(e.Have), e.Want)
}

// FillFMV writes an fmv amendment for every line without a rate whose day
// the rates now cover and, with opts.Rebasis, for every line rated under
// another basis; it refuses (BasisConflictError, writing nothing) when
// lines carry another basis and opts.Rebasis is not set.
func FillFMV(ctx context.Context, st *store.Store, rates *Rates, now time.Time, opts FillOptions) (Filled, error) {
	books, err := LoadBooks(ctx, st)
	if err != nil {
		return Filled{}, err
	}
	var f Filled
	conflict := &BasisConflictError{Want: rates.Basis}
	have := map[string]bool{}
	for _, b := range books {
		if b.Known() && b.Basis() != rates.Basis {
			conflict.Lines++
			have[b.Basis()] = true
		}
	}
	if conflict.Lines > 0 && !opts.Rebasis {
		conflict.Have = sortedKeys(have)
		return f, conflict
	}
	for _, b := range books {
		rebase := b.Known() && b.Basis() != rates.Basis
		if b.Known() && !rebase {
			continue
		}
		cad := rates.For(b.Line.Day)
		if cad.Pending {
			u := Unrated{LineID: b.Line.ID, Day: b.Line.Day, Basis: b.Basis()}
			if rebase {
				f.OtherBasis = append(f.OtherBasis, u)
			} else {
				f.Waiting = append(f.Waiting, u)
			}
			continue
		}
		if _, err := st.AppendAmendment(ctx, store.Amendment{LineID: b.Line.ID, Kind: "fmv", At: now, CAD: cad}); err != nil {
			return f, err
		}
		f.Written++
		if rebase {
			f.Rebased++
		}
	}
	return f, nil
}

// Errors of Refund.
var (
	ErrNoSuchTx        = errors.New("no ledger line carries that transaction id")
	ErrAlreadyRefunded = errors.New("that line is already refunded")
	// ErrHouseLine is a refund of a house line: the operator's own proof,
	// paid from its own wallet, so no one outside is owed anything.
	ErrHouseLine = errors.New("that line is a house line (the operator's own proof): no outside payer paid for it")
)

// RefundRequest names the line to refund and why.
type RefundRequest struct {
	TxID string
	// Reason is the operator's note ("" for none): 1 to 300 printable
	// characters, never anything a payer submitted.
	Reason string
	// Force records a refund of a house line too.
	Force bool
}

// Refunded is the refund a Refund recorded.
type Refunded struct {
	AmendmentID int64
	Line        store.Line
	Units       int64
}

// Refund records a refund of a transaction's line: the line's whole price,
// as an amendment row. It records; it moves no money (the operator pays
// the payer back on chain).
func Refund(ctx context.Context, st *store.Store, req RefundRequest, now time.Time) (Refunded, error) {
	var reason *string
	if req.Reason != "" {
		if err := servicestate.CheckReason(req.Reason); err != nil {
			return Refunded{}, err
		}
		reason = &req.Reason
	}
	lines, amends, err := load(ctx, st)
	if err != nil {
		return Refunded{}, err
	}
	for _, l := range lines {
		if l.TxID == nil || *l.TxID != req.TxID {
			continue
		}
		for _, a := range amends {
			if a.LineID == l.ID && a.Kind == "refund" {
				return Refunded{Line: l}, ErrAlreadyRefunded
			}
		}
		if l.House && !req.Force {
			return Refunded{Line: l}, ErrHouseLine
		}
		units := l.PriceUSDCUnits
		id, err := st.AppendAmendment(ctx, store.Amendment{LineID: l.ID, Kind: "refund", At: now, RefundUnits: &units, Reason: reason})
		if err != nil {
			return Refunded{Line: l}, err
		}
		return Refunded{AmendmentID: id, Line: l, Units: units}, nil
	}
	return Refunded{}, ErrNoSuchTx
}

func load(ctx context.Context, st *store.Store) ([]store.Line, []store.Amendment, error) {
	lines, err := st.Lines(ctx)
	if err != nil {
		return nil, nil, err
	}
	amends, err := st.Amendments(ctx)
	return lines, amends, err
}
