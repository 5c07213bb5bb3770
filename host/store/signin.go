package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// UseSignInNonce records a sign-in challenge's nonce as spent, kept until
// keep; fresh is false when any host on the store spent it before. The
// nonce is the host fleet's own (its HMAC checked before it gets here),
// never a value a client made up.
func (s *Store) UseSignInNonce(ctx context.Context, nonce string, keep time.Time) (fresh bool, err error) {
	// in a group transaction (group.go), beside the free tier's admissions
	// it precedes: one commit for both under load
	err = s.inGroup(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO sign_in_nonces (nonce, keep_ns) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING`),
			nonce, keep.UnixNano())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		fresh = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: sign-in nonce: %w", err)
	}
	return fresh, nil
}

// SweepSignInNonces deletes the spent nonces kept until before now (no
// host accepts their challenges any more) and returns how many.
func (s *Store) SweepSignInNonces(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM sign_in_nonces WHERE keep_ns < ?`), now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("store: sweep sign-in nonces: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// SignInNonces counts the spent nonces the store keeps.
func (s *Store) SignInNonces(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sign_in_nonces`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: sign-in nonces: %w", err)
	}
	return n, nil
}
