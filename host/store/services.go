package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Service actions.
const (
	ServiceStop   = "stop"
	ServiceResume = "resume"
)

// ServiceEvent is one stop or resume of a service under one criteria
// version. Rows are never changed: the latest row of a version is its
// state.
type ServiceEvent struct {
	ID               int64
	At               time.Time
	Service          string
	CriteriaID       string
	CriteriaRevision string
	Action           string
	// Reason is the operator's words, or the host's (the self-check rule
	// that fired); never anything of a submission.
	Reason string
	// Actor is who or what acted: "operator", "self-check", ...
	Actor string
	// CorpusPassed and CorpusCases are the corpus run a resume required
	// (nil on a stop).
	CorpusPassed, CorpusCases *int64
}

// AppendServiceEvent writes a stop or resume row.
func (s *Store) AppendServiceEvent(ctx context.Context, e ServiceEvent) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO service_events (ts_ns, service, criteria_id, criteria_revision, action, reason, actor, corpus_passed, corpus_cases)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`), e.At.UnixNano(), e.Service, e.CriteriaID, e.CriteriaRevision, e.Action, e.Reason, e.Actor,
		e.CorpusPassed, e.CorpusCases).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: append service event: %w", err)
	}
	return id, nil
}

const serviceEventColumns = `id, ts_ns, service, criteria_id, criteria_revision, action, reason, actor, corpus_passed, corpus_cases`

func scanServiceEvent(row interface{ Scan(...any) error }) (ServiceEvent, error) {
	var e ServiceEvent
	var ns int64
	var passed, cases sql.NullInt64
	if err := row.Scan(&e.ID, &ns, &e.Service, &e.CriteriaID, &e.CriteriaRevision, &e.Action, &e.Reason, &e.Actor, &passed, &cases); err != nil {
		return e, err
	}
	e.At = time.Unix(0, ns).UTC()
	if passed.Valid {
		e.CorpusPassed = &passed.Int64
	}
	if cases.Valid {
		e.CorpusCases = &cases.Int64
	}
	return e, nil
}

// LatestServiceEvents returns the latest row of every service version that
// has one: the states every host on the store serves by.
func (s *Store) LatestServiceEvents(ctx context.Context) ([]ServiceEvent, error) {
	return s.serviceEvents(ctx, `SELECT `+serviceEventColumns+` FROM service_events e
		WHERE id = (SELECT MAX(id) FROM service_events l WHERE l.service = e.service AND l.criteria_id = e.criteria_id AND l.criteria_revision = e.criteria_revision)
		ORDER BY service, criteria_id, criteria_revision`)
}

// ServiceEvents returns every row, oldest first.
func (s *Store) ServiceEvents(ctx context.Context) ([]ServiceEvent, error) {
	return s.serviceEvents(ctx, `SELECT `+serviceEventColumns+` FROM service_events ORDER BY id`)
}

func (s *Store) serviceEvents(ctx context.Context, query string) ([]ServiceEvent, error) {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("store: service events: %w", err)
	}
	defer rows.Close()
	var out []ServiceEvent
	for rows.Next() {
		e, err := scanServiceEvent(rows)
		if err != nil {
			return nil, fmt.Errorf("store: service events: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
