package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Marker is a delivery marker: a payment that was checked but whose report
// was not delivered. It holds the payment, never the submission.
type Marker struct {
	ID      string
	Service string
	Op      string
	// Payment is the client's PAYMENT-SIGNATURE header value.
	Payment string
	Created time.Time
	Expires time.Time
	Spent   bool
}

// ErrNoMarker is returned for an id the store does not hold.
var ErrNoMarker = errors.New("store: no such marker")

// PutMarker stores a new marker.
func (s *Store) PutMarker(ctx context.Context, m Marker) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO delivery_markers (id, service, op, payment, created_ns, expires_ns) VALUES (?, ?, ?, ?, ?, ?)`),
		m.ID, m.Service, m.Op, m.Payment, m.Created.UnixNano(), m.Expires.UnixNano())
	if err != nil {
		return fmt.Errorf("store: put marker: %w", err)
	}
	return nil
}

// GetMarker reads a marker.
func (s *Store) GetMarker(ctx context.Context, id string) (Marker, error) {
	m := Marker{ID: id}
	var created, expires int64
	var spent sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT service, op, payment, created_ns, expires_ns, spent_ns FROM delivery_markers WHERE id = ?`), id).
		Scan(&m.Service, &m.Op, &m.Payment, &created, &expires, &spent)
	if errors.Is(err, sql.ErrNoRows) {
		return m, ErrNoMarker
	}
	if err != nil {
		return m, fmt.Errorf("store: get marker: %w", err)
	}
	m.Created, m.Expires, m.Spent = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC(), spent.Valid
	return m, nil
}
