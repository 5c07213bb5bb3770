package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/assay-audit/assay/host/signing"
)

// SigningKeys lists the shared signing keys, oldest first, and names the
// active one: the key of the highest activation ("" when none is active
// yet). The seeds stay sealed (signing.OpenShared unseals them).
func (s *Store) SigningKeys(ctx context.Context) ([]signing.SealedKey, string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT kid, created_ns, sealed FROM signing_keys ORDER BY id`)
	if err != nil {
		return nil, "", fmt.Errorf("store: signing keys: %w", err)
	}
	defer rows.Close()
	var out []signing.SealedKey
	for rows.Next() {
		var k signing.SealedKey
		var ns int64
		if err := rows.Scan(&k.KID, &ns, &k.Sealed); err != nil {
			return nil, "", fmt.Errorf("store: signing keys: %w", err)
		}
		k.Created = time.Unix(0, ns).UTC()
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: signing keys: %w", err)
	}
	var active string
	err = s.db.QueryRowContext(ctx, `SELECT kid FROM signing_key_activations ORDER BY generation DESC LIMIT 1`).Scan(&active)
	if err != nil && err != sql.ErrNoRows {
		return nil, "", fmt.Errorf("store: active signing key: %w", err)
	}
	return out, active, nil
}

// AddSigningKeys stores keys that are not active (a joining host's own
// earlier keys); a kid the store holds already is left as it is.
func (s *Store) AddSigningKeys(ctx context.Context, keys []signing.SealedKey) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: add signing keys: %w", err)
	}
	defer tx.Rollback()
	for _, k := range keys {
		if err := s.insertKey(ctx, tx, k); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: add signing keys: %w", err)
	}
	return nil
}

func (s *Store) insertKey(ctx context.Context, tx *sql.Tx, k signing.SealedKey) error {
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO signing_keys (kid, created_ns, sealed) VALUES (?, ?, ?) ON CONFLICT (kid) DO NOTHING`),
		k.KID, k.Created.UnixNano(), k.Sealed); err != nil {
		return fmt.Errorf("store: add signing key: %w", err)
	}
	return nil
}

// ActivateSigningKey stores k and makes it the active key, in one
// transaction. first: only if no key is active yet (a host's first start
// on the store); false, with nothing of k kept, when another host's key
// got there first. Otherwise k takes the next generation (a rotation);
// two rotations at one instant: one fails, nothing of it kept.
func (s *Store) ActivateSigningKey(ctx context.Context, k signing.SealedKey, first bool) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: activate signing key: %w", err)
	}
	defer tx.Rollback()
	if err := s.insertKey(ctx, tx, k); err != nil {
		return false, err
	}
	q := `INSERT INTO signing_key_activations (generation, kid, ts_ns)
		SELECT COALESCE(MAX(generation), 0) + 1, ?, ? FROM signing_key_activations`
	if first {
		// the primary key decides the race: a second first start's row
		// waits for the winner's commit, then does nothing
		q = `INSERT INTO signing_key_activations (generation, kid, ts_ns) VALUES (1, ?, ?) ON CONFLICT (generation) DO NOTHING`
	}
	res, err := tx.ExecContext(ctx, s.q(q), k.KID, time.Now().UnixNano())
	if err != nil {
		if isUniqueViolation(err) {
			return false, fmt.Errorf("store: another signing key became active at the same moment; run the rotation again: %w", err)
		}
		return false, fmt.Errorf("store: activate signing key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: activate signing key: %w", err)
	}
	return true, nil
}
