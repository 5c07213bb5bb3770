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
	day, ns := Day(now), now.UnixNano()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Admission{}, fmt.Errorf("store: admit: %w", err)
	}
	defer tx.Rollback()
	var count int64
	err = tx.QueryRowContext(ctx, s.q(`
		INSERT INTO free_tier (key, day, count, last_ns) VALUES (?, ?, 1, ?)
		ON CONFLICT (key) DO UPDATE SET
			count = CASE WHEN free_tier.day = excluded.day THEN free_tier.count + 1 ELSE 1 END,
			day = excluded.day,
			last_ns = excluded.last_ns
		WHERE excluded.last_ns - free_tier.last_ns >= ?
		  AND (free_tier.day <> excluded.day OR free_tier.count < ?)
		RETURNING count`), key, day, ns, minInterval.Nanoseconds(), perDay).Scan(&count)
	switch {
	case err == nil:
		if _, err := tx.ExecContext(ctx, s.q(`
			INSERT INTO free_use (service, day, n) VALUES (?, ?, 1)
			ON CONFLICT (service, day) DO UPDATE SET n = free_use.n + 1`), usage, day); err != nil {
			return Admission{}, fmt.Errorf("store: free use: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return Admission{}, fmt.Errorf("store: admit: %w", err)
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
