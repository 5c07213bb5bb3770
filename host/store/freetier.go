package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Admission is the free tier's answer for one call.
type Admission struct {
	Admitted bool
	// Exhausted: the day's allowance is spent (402). Otherwise a refusal
	// is the minimum interval (429) and RetryAfter says how long to wait.
	Exhausted  bool
	RetryAfter time.Duration
	// Count is the caller's admitted calls today, this one included.
	Count int64
}

// Day is the UTC day an instant falls in.
func Day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// AdmitFree admits or refuses one free call for key at now: at most perDay
// per UTC day, at least minInterval after the key's last admitted call
// (across midnight too); usage names the free-use counter the call adds to.
// One conditional upsert decides, so concurrent
// calls on one host or many are admitted exactly.
func (s *Store) AdmitFree(ctx context.Context, usage, key string, now time.Time, perDay int64, minInterval time.Duration) (Admission, error) {
	var out Admission
	// in a group transaction (group.go): admissions of the moment share
	// one commit, each decided in turn, so two for one key in one group
	// are decided as they would be apart
	err := s.inGroup(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.admitFree(ctx, tx, usage, key, now, perDay, minInterval)
		return err
	})
	return out, err
}

func (s *Store) admitFree(ctx context.Context, tx *sql.Tx, usage, key string, now time.Time, perDay int64, minInterval time.Duration) (Admission, error) {
	day, ns := Day(now), now.UnixNano()
	var count int64
	upsert, err := s.stmt(ctx, tx, qAdmitFree)
	if err != nil {
		return Admission{}, err
	}
	err = upsert.QueryRowContext(ctx, key, day, ns, minInterval.Nanoseconds(), perDay).Scan(&count)
	switch {
	case err == nil:
		use, err := s.stmt(ctx, tx, qFreeUse)
		if err != nil {
			return Admission{}, err
		}
		if _, err := use.ExecContext(ctx, usage, day); err != nil {
			return Admission{}, fmt.Errorf("store: free use: %w", err)
		}
		return Admission{Admitted: true, Count: count}, nil
	case errors.Is(err, sql.ErrNoRows):
	default:
		return Admission{}, fmt.Errorf("store: admit: %w", err)
	}
	var lastDay string
	var lastNS int64
	if err := tx.QueryRowContext(ctx, s.q(`SELECT day, count, last_ns FROM free_tier WHERE key = ?`), key).Scan(&lastDay, &count, &lastNS); err != nil {
		return Admission{}, fmt.Errorf("store: admit: %w", err)
	}
	if lastDay == day && count >= perDay {
		return Admission{Exhausted: true, Count: count}, nil // waiting would not help
	}
	return Admission{RetryAfter: time.Duration(lastNS + minInterval.Nanoseconds() - ns), Count: count}, nil
}

// PruneFreeTier deletes the counters of keys last admitted before before
// and returns how many it deleted.
func (s *Store) PruneFreeTier(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM free_tier WHERE last_ns < ?`), before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("store: prune free tier: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// FreeTierKeys counts the keys the free tier holds counters for.
func (s *Store) FreeTierKeys(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM free_tier`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: free tier keys: %w", err)
	}
	return n, nil
}

// DayCount is a count for one UTC day.
type DayCount struct {
	Day string
	N   int64
}

// FreeUse is a usage scope's admitted free calls per day, oldest first.
func (s *Store) FreeUse(ctx context.Context, usage string) ([]DayCount, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT day, n FROM free_use WHERE service = ? ORDER BY day`), usage)
	if err != nil {
		return nil, fmt.Errorf("store: free use: %w", err)
	}
	defer rows.Close()
	var out []DayCount
	for rows.Next() {
		var d DayCount
		if err := rows.Scan(&d.Day, &d.N); err != nil {
			return nil, fmt.Errorf("store: free use: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
