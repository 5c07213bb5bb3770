package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Proof is a launch proof a service passed on this store: its corpus and
// its custody check, run against one plugin set. Key is a digest of
// everything the proof depends on (the plugins' binaries, the criteria
// revision, the corpus pin, the host's build); a start whose key is here
// serves without running the proof again.
type Proof struct {
	Key              string
	Service          string
	CriteriaID       string
	CriteriaRevision string
	// Kind is which proof: "launch" (corpus and custody) or "canary-proof"
	// (every surface, assay serve --canary-proof).
	Kind string
	// Passed is when; HostID and Version are the host that ran it and its
	// build.
	Passed          time.Time
	HostID, Version string
	// Cases is the corpus cases passed, Planted the custody check's planted
	// requests (or the canary proof's requests).
	Cases, Planted int64
}

// PutProof records a passed proof. A proof already recorded under its key
// (another host of the fleet proved the same set meanwhile) is kept.
func (s *Store) PutProof(ctx context.Context, p Proof) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO launch_proofs (proof_key, service, criteria_id, criteria_revision, kind, passed_ns, host_id, version, cases, planted)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (proof_key) DO NOTHING`),
		p.Key, p.Service, p.CriteriaID, p.CriteriaRevision, p.Kind, p.Passed.UnixNano(), p.HostID, p.Version, p.Cases, p.Planted)
	if err != nil {
		return fmt.Errorf("store: put proof: %w", err)
	}
	return nil
}

// ProofOf is the proof recorded under key (ok false: none).
func (s *Store) ProofOf(ctx context.Context, key string) (p Proof, ok bool, err error) {
	var ns int64
	err = s.db.QueryRowContext(ctx, s.q(`SELECT proof_key, service, criteria_id, criteria_revision, kind, passed_ns, host_id, version, cases, planted
		FROM launch_proofs WHERE proof_key = ?`), key).Scan(&p.Key, &p.Service, &p.CriteriaID, &p.CriteriaRevision, &p.Kind, &ns, &p.HostID, &p.Version, &p.Cases, &p.Planted)
	if errors.Is(err, sql.ErrNoRows) {
		return Proof{}, false, nil
	}
	if err != nil {
		return Proof{}, false, fmt.Errorf("store: proof: %w", err)
	}
	p.Passed = time.Unix(0, ns).UTC()
	return p, true, nil
}

// ForgetProofs deletes every recorded proof: the next start of every host
// proves its plugin set again (assay plugins reprove).
func (s *Store) ForgetProofs(ctx context.Context) (int64, error) {
	r, err := s.db.ExecContext(ctx, `DELETE FROM launch_proofs`)
	if err != nil {
		return 0, fmt.Errorf("store: forget proofs: %w", err)
	}
	n, _ := r.RowsAffected()
	return n, nil
}
