package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// FloorVersion is the schema_migrations row a store gets with its payment
// identity: far above any real migration, so every build since the
// "at most one version ahead" check (commit ebf7df0, migration 11) stops
// at a store that takes money ("its schema is version 1000000 … run a
// newer Assay") instead of serving house proofs on it. This build and
// later ones leave it out of their own schema version (migrate).
const FloorVersion = 1_000_000

// identitySetting is the settings row that holds the stamp.
const identitySetting = "payment_identity"

// PaymentIdentity is what a store that settles on a chain takes money as:
// the network, the asset and the wallet paid. All three are public.
type PaymentIdentity struct {
	Network   string    `json:"network"`
	Asset     string    `json:"asset"`
	PayTo     string    `json:"pay_to"`
	StampedAt time.Time `json:"stamped_at"`
}

// Same is whether two identities take the same money (the stamp's
// instant aside).
func (p PaymentIdentity) Same(o PaymentIdentity) bool {
	return p.Network == o.Network && p.Asset == o.Asset && p.PayTo == o.PayTo
}

// PaymentIdentity is the store's stamp: ok false on a store that has not
// settled on a chain under a build that stamps.
func (s *Store) PaymentIdentity(ctx context.Context) (PaymentIdentity, bool, error) {
	var raw string
	err := s.rdb.QueryRowContext(ctx, s.q(`SELECT value FROM settings WHERE name = ?`), identitySetting).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return PaymentIdentity{}, false, nil
	}
	if err != nil {
		return PaymentIdentity{}, false, fmt.Errorf("store: payment identity: %w", err)
	}
	var id PaymentIdentity
	if err := json.Unmarshal([]byte(raw), &id); err != nil {
		return PaymentIdentity{}, false, fmt.Errorf("store: payment identity: %w", err)
	}
	return id, true, nil
}

// StampPaymentIdentity stamps the store with id unless it carries a stamp
// already, and returns the stamp in force (id, or the earlier one: a
// caller whose identity differs must not settle). The first stamp also
// writes the floor row (FloorVersion) in the same transaction; from then
// on the database itself refuses a house proof's claim and a payments-off
// line (onChainTriggers): a build too old for the floor still cannot
// record a house proof on a store that takes money.
func (s *Store) StampPaymentIdentity(ctx context.Context, id PaymentIdentity) (PaymentIdentity, error) {
	raw, err := json.Marshal(id)
	if err != nil {
		return id, fmt.Errorf("store: stamp: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return id, fmt.Errorf("store: stamp: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), identitySetting, string(raw))
	if err != nil {
		return id, fmt.Errorf("store: stamp: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return id, fmt.Errorf("store: stamp: %w", err)
	} else if n == 1 {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version) VALUES (?) ON CONFLICT (version) DO NOTHING`), FloorVersion); err != nil {
			return id, fmt.Errorf("store: stamp: %w", err)
		}
	}
	var inForce string
	if err := tx.QueryRowContext(ctx, s.q(`SELECT value FROM settings WHERE name = ?`), identitySetting).Scan(&inForce); err != nil {
		return id, fmt.Errorf("store: stamp: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return id, fmt.Errorf("store: stamp: %w", err)
	}
	var got PaymentIdentity
	if err := json.Unmarshal([]byte(inForce), &got); err != nil {
		return id, fmt.Errorf("store: stamp: %w", err)
	}
	return got, nil
}

// onChainRefusal is what the database answers a build that would write a
// house proof or a payments-off line on a stamped store: static words.
const onChainRefusal = "this store settles on a chain (its payment identity is stamped): it records no house proof and no payments-off line; run an Assay that takes its payments on that chain"

// onChainTriggers refuse, once the store is stamped, the two rows only a
// host that takes no money writes: a claim of a house proof
// (payment_claims.house, written by every build since migration 3) and a
// ledger line with no transaction that is a house line (payments off). A
// house wallet's real payment has its transaction id, and is not refused.
// They are made by migration 12 (so that a test or an operator re-running
// it finds them made) and look the stamp up at each such insert,
// so the stamp itself is two inserts and takes no lock on the ledger (a
// trigger made at the first settlement would wait for every writer of the
// ledger, with the payer's transfer waiting behind it).
func (s *Store) onChainTriggers() []string {
	if s.d.name == "postgres" {
		return []string{
			`CREATE OR REPLACE FUNCTION assay_settles_on_chain() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF EXISTS (SELECT 1 FROM settings WHERE name = '` + identitySetting + `') THEN RAISE EXCEPTION '` + onChainRefusal + `'; END IF; RETURN NEW; END $$`,
			`DROP TRIGGER IF EXISTS payment_claims_on_chain ON payment_claims`,
			`CREATE TRIGGER payment_claims_on_chain BEFORE INSERT ON payment_claims FOR EACH ROW WHEN (NEW.house) EXECUTE FUNCTION assay_settles_on_chain()`,
			`DROP TRIGGER IF EXISTS ledger_on_chain ON ledger`,
			`CREATE TRIGGER ledger_on_chain BEFORE INSERT ON ledger FOR EACH ROW WHEN (NEW.house AND NEW.tx_id IS NULL) EXECUTE FUNCTION assay_settles_on_chain()`,
		}
	}
	stamped := `EXISTS (SELECT 1 FROM settings WHERE name = '` + identitySetting + `')`
	return []string{
		`CREATE TRIGGER IF NOT EXISTS payment_claims_on_chain BEFORE INSERT ON payment_claims WHEN NEW.house AND ` + stamped + ` BEGIN SELECT RAISE(ABORT, '` + onChainRefusal + `'); END`,
		`CREATE TRIGGER IF NOT EXISTS ledger_on_chain BEFORE INSERT ON ledger WHEN NEW.house AND NEW.tx_id IS NULL AND ` + stamped + ` BEGIN SELECT RAISE(ABORT, '` + onChainRefusal + `'); END`,
	}
}

// SettledOnChain is whether the store holds a payment settled for real
// (a claim that is no house proof, with its transaction; migration 3's
// carried-over rows, which name no service, are not known to be): a
// store that took money under a build from before the stamp.
func (s *Store) SettledOnChain(ctx context.Context) (bool, error) {
	var n int
	err := s.rdb.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM (SELECT 1 FROM payment_claims WHERE house = ? AND tx_id IS NOT NULL AND service <> '' AND state IN (?, ?) LIMIT 1) AS c`),
		false, ClaimSettled, ClaimIssued).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: settled on chain: %w", err)
	}
	return n > 0, nil
}
