package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Line is one ledger line: the fields every criteria shares, plus the
// family's closed fields as canonical JSON.
type Line struct {
	ID               int64
	Service          string
	CriteriaID       string
	CriteriaRevision string
	At               time.Time
	Day              string
	Payer            *string
	PriceUSDCUnits   int64
	TxID             *string
	FeeLamports      *int64
	House            bool
	CAD              CAD
	// FamilyFields is a JSON object of the family's closed ledger fields.
	FamilyFields string
}

// CAD is the fair-market-value block as first written. A rate that comes
// later is an amendment.
type CAD struct {
	Rate     *string // decimal CAD per USD, as the operator's file states it
	RateDate *string
	Basis    *string
	Pending  bool
}

// Amendment is a row that refers to a line: a later CAD rate or a refund.
type Amendment struct {
	ID     int64
	LineID int64
	// Kind is "fmv" or "refund".
	Kind        string
	At          time.Time
	CAD         CAD
	RefundUnits *int64
	// Reason is the operator's note on a refund (nil for none). It is kept
	// in refund_reasons, beside the ledger tables: the criteria's closed
	// ledger field list has a refund but no reason.
	Reason *string
}

// ErrDuplicateTx is returned when a line names a transaction already in the
// ledger.
var ErrDuplicateTx = errors.New("store: transaction already has a ledger line")

// AppendLine writes a line; the table refuses updates and deletes. It
// commits with the other writes of the moment (group.go) and returns once
// the line is committed.
func (s *Store) AppendLine(ctx context.Context, l Line) (int64, error) {
	var id int64
	err := s.inGroup(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		id, err = appendLine(ctx, s, tx, l)
		return err
	})
	return id, err
}

func appendLine(ctx context.Context, s *Store, tx *sql.Tx, l Line) (int64, error) {
	st, err := s.stmt(ctx, tx, qAppendLine)
	if err != nil {
		return 0, err
	}
	var id int64
	err = st.QueryRowContext(ctx, l.Service, l.CriteriaID, l.CriteriaRevision, l.At.UnixNano(), Day(l.At),
		l.Payer, l.PriceUSDCUnits, l.TxID, l.FeeLamports, l.House, l.CAD.Rate, l.CAD.RateDate, l.CAD.Basis, l.CAD.Pending,
		l.FamilyFields).Scan(&id)
	if err != nil {
		if l.TxID != nil && isUniqueViolation(err) {
			return 0, ErrDuplicateTx
		}
		return 0, fmt.Errorf("store: append line: %w", err)
	}
	return id, nil
}

// Lines returns every line, oldest first.
func (s *Store) Lines(ctx context.Context) ([]Line, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, service, criteria_id, criteria_revision, ts_ns, day, payer,
		price_usdc_units, tx_id, fee_lamports, house, cad_rate, cad_rate_date, cad_basis, cad_pending, family_fields
		FROM ledger ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: lines: %w", err)
	}
	defer rows.Close()
	var out []Line
	for rows.Next() {
		var l Line
		var ns int64
		var payer, tx, rate, rateDate, basis sql.NullString
		var fee sql.NullInt64
		if err := rows.Scan(&l.ID, &l.Service, &l.CriteriaID, &l.CriteriaRevision, &ns, &l.Day, &payer,
			&l.PriceUSDCUnits, &tx, &fee, &l.House, &rate, &rateDate, &basis, &l.CAD.Pending, &l.FamilyFields); err != nil {
			return nil, fmt.Errorf("store: lines: %w", err)
		}
		l.At = time.Unix(0, ns).UTC()
		l.Payer, l.TxID = nullable(payer), nullable(tx)
		l.CAD.Rate, l.CAD.RateDate, l.CAD.Basis = nullable(rate), nullable(rateDate), nullable(basis)
		if fee.Valid {
			l.FeeLamports = &fee.Int64
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

func nullable(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// AppendAmendment writes an amendment row, and its reason (when it has
// one) in the same transaction: a refund is never recorded without the
// reason the operator gave, nor a reason without its refund.
func (s *Store) AppendAmendment(ctx context.Context, a Amendment) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: append amendment: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, s.q(`INSERT INTO ledger_amendments (line_id, kind, ts_ns, cad_rate, cad_rate_date, cad_basis, refund_usdc_units)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`), a.LineID, a.Kind, a.At.UnixNano(), a.CAD.Rate, a.CAD.RateDate, a.CAD.Basis, a.RefundUnits).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: append amendment: %w", err)
	}
	if a.Reason != nil {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO refund_reasons (amendment_id, reason) VALUES (?, ?)`), id, *a.Reason); err != nil {
			return 0, fmt.Errorf("store: append amendment reason: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: append amendment: %w", err)
	}
	return id, nil
}

// Amendments returns every amendment, oldest first.
func (s *Store) Amendments(ctx context.Context) ([]Amendment, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.id, a.line_id, a.kind, a.ts_ns, a.cad_rate, a.cad_rate_date, a.cad_basis, a.refund_usdc_units, r.reason
		FROM ledger_amendments a LEFT JOIN refund_reasons r ON r.amendment_id = a.id ORDER BY a.id`)
	if err != nil {
		return nil, fmt.Errorf("store: amendments: %w", err)
	}
	defer rows.Close()
	var out []Amendment
	for rows.Next() {
		var a Amendment
		var ns int64
		var rate, rateDate, basis, reason sql.NullString
		var refund sql.NullInt64
		if err := rows.Scan(&a.ID, &a.LineID, &a.Kind, &ns, &rate, &rateDate, &basis, &refund, &reason); err != nil {
			return nil, fmt.Errorf("store: amendments: %w", err)
		}
		a.At = time.Unix(0, ns).UTC()
		a.CAD.Rate, a.CAD.RateDate, a.CAD.Basis = nullable(rate), nullable(rateDate), nullable(basis)
		a.Reason = nullable(reason)
		if refund.Valid {
			a.RefundUnits = &refund.Int64
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
