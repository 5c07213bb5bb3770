package store

import (
	"context"
	"fmt"
	"time"

	"github.com/assay-audit/assay/host/signing"
)

// SigningKeys lists the shared signing keys, oldest first (the last is
// active); the seeds stay sealed (signing.OpenShared unseals them).
func (s *Store) SigningKeys(ctx context.Context) ([]signing.SealedKey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT kid, created_ns, sealed FROM signing_keys ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: signing keys: %w", err)
	}
	defer rows.Close()
	var out []signing.SealedKey
	for rows.Next() {
		var k signing.SealedKey
		var ns int64
		if err := rows.Scan(&k.KID, &ns, &k.Sealed); err != nil {
			return nil, fmt.Errorf("store: signing keys: %w", err)
		}
		k.Created = time.Unix(0, ns).UTC()
		out = append(out, k)
	}
	return out, rows.Err()
}

// AddSigningKey appends a sealed key, which becomes the active one.
func (s *Store) AddSigningKey(ctx context.Context, k signing.SealedKey) error {
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO signing_keys (kid, created_ns, sealed) VALUES (?, ?, ?)`), k.KID, k.Created.UnixNano(), k.Sealed); err != nil {
		return fmt.Errorf("store: add signing key: %w", err)
	}
	return nil
}
