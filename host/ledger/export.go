package ledger

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Row is one ledger line as the books export prints it: the line's fields
// with its amendments applied. Money is exact: integers in USDC units (or
// lamports), decimals as strings, never a float.
type Row struct {
	ID               int64   `json:"id"`
	Service          string  `json:"service"`
	CriteriaID       string  `json:"criteria_id"`
	CriteriaRevision string  `json:"criteria_revision"`
	Timestamp        string  `json:"timestamp"`
	Day              string  `json:"day"`
	Payer            *string `json:"payer"`
	PriceUSDCUnits   int64   `json:"price_usdc_units"`
	PriceUSDC        string  `json:"price_usdc"`
	TxID             *string `json:"tx_id"`
	FeeLamports      *int64  `json:"fee_lamports"`
	House            bool    `json:"house"`
	CADRate          *string `json:"cad_rate"`
	CADRateDate      *string `json:"cad_rate_date"`
	CADBasis         *string `json:"cad_basis"`
	CADPending       bool    `json:"cad_pending"`
	// CADAmount is the price in CAD at the rate, exact.
	CADAmount *string `json:"cad_amount"`
	// CADAmendmentID is the fmv amendment the CAD fields come from; null
	// when they are the line's own.
	CADAmendmentID    *int64  `json:"cad_amendment_id"`
	RefundUSDCUnits   *int64  `json:"refund_usdc_units"`
	RefundUSDC        *string `json:"refund_usdc"`
	RefundedAt        *string `json:"refunded_at"`
	RefundAmendmentID *int64  `json:"refund_amendment_id"`
	RefundReason      *string `json:"refund_reason"`
	// FamilyFields is the family's closed ledger fields, the JSON object
	// the line holds.
	FamilyFields json.RawMessage `json:"family_fields"`
}

// Columns is the CSV header: Row's JSON names, in Row's order.
var Columns = []string{"id", "service", "criteria_id", "criteria_revision", "timestamp", "day", "payer",
	"price_usdc_units", "price_usdc", "tx_id", "fee_lamports", "house",
	"cad_rate", "cad_rate_date", "cad_basis", "cad_pending", "cad_amount", "cad_amendment_id",
	"refund_usdc_units", "refund_usdc", "refunded_at", "refund_amendment_id", "refund_reason", "family_fields"}

// errFamilyFields is a stored line whose family fields are not JSON:
// Check writes nothing else, so the store was written some other way.
var errFamilyFields = errors.New("family fields are not JSON")

// Rows are the books' lines whose UTC day is in [from, to] ("" leaves a
// side open), oldest first.
func Rows(books []Book, from, to string) ([]Row, error) {
	out := []Row{}
	for _, b := range books {
		l := b.Line
		if (from != "" && l.Day < from) || (to != "" && l.Day > to) {
			continue
		}
		if !json.Valid([]byte(l.FamilyFields)) {
			return nil, fmt.Errorf("ledger line %d: %w", l.ID, errFamilyFields)
		}
		r := Row{ID: l.ID, Service: l.Service, CriteriaID: l.CriteriaID, CriteriaRevision: l.CriteriaRevision,
			Timestamp: l.At.UTC().Format(time.RFC3339Nano), Day: l.Day, Payer: l.Payer,
			PriceUSDCUnits: l.PriceUSDCUnits, PriceUSDC: USDC(l.PriceUSDCUnits), TxID: l.TxID, FeeLamports: l.FeeLamports, House: l.House,
			CADPending: !b.Known(), CADAmendmentID: b.CADAmendment, FamilyFields: json.RawMessage(l.FamilyFields)}
		if b.Known() {
			r.CADRate, r.CADRateDate, r.CADBasis = b.CAD.Rate, b.CAD.RateDate, b.CAD.Basis
			amount, _, err := b.CADAmount()
			if err != nil {
				return nil, err
			}
			r.CADAmount = &amount
		}
		if a := b.Refund; a != nil {
			units, dec, at, id := b.RefundedUnits(), USDC(b.RefundedUnits()), a.At.UTC().Format(time.RFC3339Nano), a.ID
			r.RefundUSDCUnits, r.RefundUSDC, r.RefundedAt, r.RefundAmendmentID, r.RefundReason = &units, &dec, &at, &id, a.Reason
		}
		out = append(out, r)
	}
	return out, nil
}

func (r Row) record() []string {
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	num := func(n *int64) string {
		if n == nil {
			return ""
		}
		return strconv.FormatInt(*n, 10)
	}
	return []string{strconv.FormatInt(r.ID, 10), r.Service, r.CriteriaID, r.CriteriaRevision, r.Timestamp, r.Day, str(r.Payer),
		strconv.FormatInt(r.PriceUSDCUnits, 10), r.PriceUSDC, str(r.TxID), num(r.FeeLamports), strconv.FormatBool(r.House),
		str(r.CADRate), str(r.CADRateDate), str(r.CADBasis), strconv.FormatBool(r.CADPending), str(r.CADAmount), num(r.CADAmendmentID),
		num(r.RefundUSDCUnits), str(r.RefundUSDC), str(r.RefundedAt), num(r.RefundAmendmentID), str(r.RefundReason), string(r.FamilyFields)}
}

// WriteCSV writes rows as RFC 4180 CSV under the Columns header; a null
// is an empty field.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(r.record()); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes rows as one JSON array with an object per line of
// output, the family fields as the line holds them (no HTML escaping).
func WriteJSON(w io.Writer, rows []Row) error {
	if len(rows) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, r := range rows {
		buf.Reset()
		if i == 0 {
			buf.WriteString("[\n")
		} else {
			buf.WriteString(",\n")
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline: the separator comes first
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "\n]\n")
	return err
}
