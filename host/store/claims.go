package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A claim is a paid request's hold on its payment, and the payment's
// delivery state, in one row keyed by the payment's identity (a digest of
// the payer-signed transaction, known before settlement):
//
//	settling  -> the host is settling it, or a host died while it did (the
//	             outcome is then unknown: a re-send settles again)
//	settled   -> the payment is taken and its report not yet issued: a
//	             re-send of the same payment, on any host on this store,
//	             measures and issues without settling again
//	issued    -> the report's ledger line, this state and the answer
//	             (sealed for redelivery) committed in one transaction,
//	             before the answer was written: a re-send of the payment
//	             with the same submission is answered again, with no
//	             second line and no second charge, until its redelivery
//	             window ends (then a replay)
//
// Only the host holding a claim's lease moves it; a lease runs out by
// itself, so a claim whose host died is taken over by the next re-send.
// No timer ever moves a claim back to nothing: a payer's money is never
// forfeited silently.
const (
	ClaimSettling = "settling"
	ClaimSettled  = "settled"
	ClaimIssued   = "issued"
)

// Claim is one payment's row.
type Claim struct {
	PaymentID      string
	Service, Op    string
	PriceUSDCUnits int64
	Payer          string
	State          string
	TxID           string
	Network        string
	FeeLamports    *int64
	House          bool
	Owner          string
	LeaseUntil     time.Time
	Created        time.Time
	// Blockhash is the transaction's recent blockhash (base58), when the
	// claim was opened knowing it.
	Blockhash string
	// Memo is the transaction's memo (the host's 402 gave it): how a
	// host finds on the chain a transaction a remote facilitator sent.
	Memo string
	// IDLookup is the keyed lookup of the payer's payment-identifier id
	// (never the id): one claim per id, so a fresh payment sent with an
	// id already claimed is never settled.
	IDLookup string
}

// Errors of the claim operations.
var (
	ErrNoClaim = errors.New("store: no claim for that payment")
	// ErrLeaseLost: the claim is not (or no longer) the caller's to move.
	ErrLeaseLost = errors.New("store: the claim's lease is not held")
	// ErrIdentifierClaimed: another claim holds that payment identifier.
	ErrIdentifierClaimed = errors.New("store: the payment identifier is another claim's")
)

const claimColumns = `payment_id, service, op, price_usdc_units, payer, state, tx_id, network, fee_lamports, house, owner, lease_until_ns, created_ns, blockhash, memo, id_lookup`

func scanClaim(row interface{ Scan(...any) error }) (Claim, error) {
	var c Claim
	var payer, tx, network, blockhash, memo, idLookup sql.NullString
	var fee sql.NullInt64
	var lease, created int64
	if err := row.Scan(&c.PaymentID, &c.Service, &c.Op, &c.PriceUSDCUnits, &payer, &c.State, &tx, &network, &fee, &c.House, &c.Owner, &lease, &created, &blockhash, &memo, &idLookup); err != nil {
		return c, err
	}
	c.Payer, c.TxID, c.Network, c.Blockhash, c.Memo, c.IDLookup = payer.String, tx.String, network.String, blockhash.String, memo.String, idLookup.String
	if fee.Valid {
		c.FeeLamports = &fee.Int64
	}
	c.LeaseUntil, c.Created = time.Unix(0, lease).UTC(), time.Unix(0, created).UTC()
	return c, nil
}

// GetClaim reads the claim of a payment (ErrNoClaim when none).
func (s *Store) GetClaim(ctx context.Context, paymentID string) (Claim, error) {
	c, err := scanClaim(s.reads[qGetClaim].QueryRowContext(ctx, paymentID))
	if errors.Is(err, sql.ErrNoRows) {
		return c, ErrNoClaim
	}
	if err != nil {
		return c, fmt.Errorf("store: get claim: %w", err)
	}
	return c, nil
}

// TxClaimed reports whether a transaction id is already some claim's.
func (s *Store) TxClaimed(ctx context.Context, txID string) (bool, error) {
	var one int
	err := s.reads[qTxClaimed].QueryRowContext(ctx, txID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: tx claimed: %w", err)
	}
	return true, nil
}

// OpenClaim writes a new claim in state settling, leased to c.Owner until
// c.LeaseUntil. opened is false when the payment already has a claim.
func (s *Store) OpenClaim(ctx context.Context, c Claim) (opened bool, err error) {
	// what the chain will know the payment by, known before settling,
	// lets a host look the claim up after a crash: the transaction id and
	// blockhash (the embedded facilitator's), or the blockhash and memo (a
	// remote facilitator's transaction id is known only once it settled)
	var tx *string
	if c.Blockhash != "" {
		tx = orNull(c.TxID)
	}
	n, err := s.groupExec(ctx, qOpenClaim,
		c.PaymentID, c.Service, c.Op, c.PriceUSDCUnits, orNull(c.Payer), ClaimSettling, c.House, c.Owner, c.LeaseUntil.UnixNano(), c.Created.UnixNano(),
		tx, orNull(c.Blockhash), orNull(c.Memo), orNull(c.IDLookup))
	if err != nil {
		if uniqueOn(err, "id_lookup") {
			return false, ErrIdentifierClaimed
		}
		return false, fmt.Errorf("store: open claim: %w", err)
	}
	return n == 1, nil
}

// OpenSettledClaim writes a new claim already settled (c.TxID, c.Network,
// c.FeeLamports), leased to c.Owner until c.LeaseUntil, for a settlement
// with no effect outside the host (the embedded facilitator without a
// chain): there is no outcome to wait for, so the settling state would
// guard nothing and cost a commit. opened is false when the payment
// already has a claim; ErrDuplicateTx when the transaction is another's.
func (s *Store) OpenSettledClaim(ctx context.Context, c Claim, now time.Time) (opened bool, err error) {
	n, err := s.groupExec(ctx, qOpenSettled,
		c.PaymentID, c.Service, c.Op, c.PriceUSDCUnits, orNull(c.Payer), ClaimSettled, c.House, c.Owner, c.LeaseUntil.UnixNano(), c.Created.UnixNano(),
		c.TxID, orNull(c.Blockhash), orNull(c.Memo), c.Network, c.FeeLamports, now.UnixNano(), orNull(c.IDLookup))
	if err != nil {
		if uniqueOn(err, "id_lookup") {
			return false, ErrIdentifierClaimed
		}
		if isUniqueViolation(err) {
			return false, ErrDuplicateTx
		}
		return false, fmt.Errorf("store: open settled claim: %w", err)
	}
	return n == 1, nil
}

// orNull is v, or SQL NULL when empty: a claim's unknowns are NULL, not "".
func orNull(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// LeaseClaim gives owner the lease of an undelivered claim whose lease has
// run out by now; false when the claim is delivered or leased to another.
func (s *Store) LeaseClaim(ctx context.Context, paymentID, owner string, now, until time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE payment_claims SET owner = ?, lease_until_ns = ?
		WHERE payment_id = ? AND state <> ? AND lease_until_ns <= ?`), owner, until.UnixNano(), paymentID, ClaimIssued, now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("store: lease claim: %w", err)
	}
	return affectedOne(res, "lease claim")
}

// SettleClaim records the settlement of owner's settling claim, and (when
// c.LeaseUntil is set) moves its lease's end there: what remains is the
// delivery, much shorter than a settlement. ErrDuplicateTx: that
// transaction is already another claim's.
func (s *Store) SettleClaim(ctx context.Context, paymentID, owner string, c Claim, now time.Time) error {
	var until *int64
	if !c.LeaseUntil.IsZero() {
		ns := c.LeaseUntil.UnixNano()
		until = &ns
	}
	n, err := s.groupExec(ctx, qSettleClaim,
		ClaimSettled, c.TxID, c.Payer, c.Network, c.FeeLamports, c.House, now.UnixNano(), until, paymentID, owner, ClaimSettling)
	if err != nil {
		if isUniqueViolation(err) {
			return ErrDuplicateTx
		}
		return fmt.Errorf("store: settle claim: %w", err)
	}
	if n != 1 {
		return ErrLeaseLost
	}
	return nil
}

// DropClaim deletes owner's settling claim: the facilitator refused a
// payment this request was the first to settle, so nothing was taken.
func (s *Store) DropClaim(ctx context.Context, paymentID, owner string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM payment_claims WHERE payment_id = ? AND owner = ? AND state = ?`), paymentID, owner, ClaimSettling)
	if err != nil {
		return fmt.Errorf("store: drop claim: %w", err)
	}
	return nil
}

// WithdrawClaim deletes owner's house claim that was opened settled (an
// offline facilitator's: nothing was broadcast) when its report was then
// not issued: nothing was taken, and the payment is as it was before the
// request. A claim of any other kind is never deleted here.
func (s *Store) WithdrawClaim(ctx context.Context, paymentID, owner string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM payment_claims WHERE payment_id = ? AND owner = ? AND state = ? AND house = ?`),
		paymentID, owner, ClaimSettled, true)
	if err != nil {
		return fmt.Errorf("store: withdraw claim: %w", err)
	}
	return nil
}

// RenewClaim moves the end of owner's lease to until.
func (s *Store) RenewClaim(ctx context.Context, paymentID, owner string, until time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE payment_claims SET lease_until_ns = ? WHERE payment_id = ? AND owner = ? AND state <> ?`),
		until.UnixNano(), paymentID, owner, ClaimIssued)
	if err != nil {
		return fmt.Errorf("store: renew claim: %w", err)
	}
	return nil
}

// ReleaseClaim ends owner's lease now: the report was not delivered, and
// the next re-send of the payment may take the claim at once.
func (s *Store) ReleaseClaim(ctx context.Context, paymentID, owner string) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE payment_claims SET lease_until_ns = 0 WHERE payment_id = ? AND owner = ? AND state <> ?`),
		paymentID, owner, ClaimIssued)
	if err != nil {
		return fmt.Errorf("store: release claim: %w", err)
	}
	return nil
}

// ReleaseLeasesOf ends every lease an earlier run of a host held (owners
// "host/…" other than current): a host that restarts after a crash makes
// the claims it left undelivered redeemable at once. It returns how many
// undelivered claims the store holds in all.
func (s *Store) ReleaseLeasesOf(ctx context.Context, host, current string) (undelivered int, err error) {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE payment_claims SET lease_until_ns = 0
		WHERE state <> ? AND owner LIKE ? AND owner <> ?`), ClaimIssued, likePrefix(host+"/"), current); err != nil {
		return 0, fmt.Errorf("store: release leases: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM payment_claims WHERE state <> ?`), ClaimIssued).Scan(&undelivered); err != nil {
		return 0, fmt.Errorf("store: count claims: %w", err)
	}
	return undelivered, nil
}

// likePrefix is a LIKE pattern matching strings that start with p (host
// ids are hex, so nothing needs escaping; anything else is refused by
// matching nothing).
func likePrefix(p string) string {
	for _, r := range p {
		if r == '%' || r == '_' || r == '\\' {
			return "\x00"
		}
	}
	return p + "%"
}

// Claims lists every claim in a state, oldest first.
func (s *Store) Claims(ctx context.Context, state string) ([]Claim, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+claimColumns+` FROM payment_claims WHERE state = ? ORDER BY created_ns`), state)
	if err != nil {
		return nil, fmt.Errorf("store: claims: %w", err)
	}
	defer rows.Close()
	var out []Claim
	for rows.Next() {
		c, err := scanClaim(rows)
		if err != nil {
			return nil, fmt.Errorf("store: claims: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Issued is a paid answer kept for redelivery: sealed (redelivery
// package) under a key the store never holds, by the seal key named by
// SealKID, until Expires.
type Issued struct {
	SealKID string
	Sealed  string
	Expires time.Time
}

// IssueClaim appends the ledger line of an issued report, moves owner's
// settled claim to issued and, with an answer, keeps it for redelivery,
// in one transaction, before the answer is written: a line exists exactly
// when its claim is spent and its answer can be had again. ErrLeaseLost
// (nothing written) when the claim is no longer owner's settled one.
func (s *Store) IssueClaim(ctx context.Context, paymentID, owner string, l Line, answer *Issued, now time.Time) (int64, error) {
	var id int64
	err := s.inGroup(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		id, err = issueIn(ctx, s, tx, paymentID, owner, l, answer, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// issueIn is IssueClaim's writes, in tx.
func issueIn(ctx context.Context, s *Store, tx *sql.Tx, paymentID, owner string, l Line, answer *Issued, now time.Time) (int64, error) {
	id, err := appendLine(ctx, s, tx, l)
	if err != nil {
		return 0, err
	}
	st, err := s.stmt(ctx, tx, qDeliverClaim)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, ClaimIssued, now.UnixNano(), id, paymentID, owner, ClaimSettled)
	if err != nil {
		return 0, fmt.Errorf("store: issue claim: %w", err)
	}
	if ok, err := affectedOne(res, "issue claim"); err != nil || !ok {
		// the savepoint rolls the line back with it
		return 0, errors.Join(ErrLeaseLost, err)
	}
	if answer == nil {
		return id, nil
	}
	if st, err = s.stmt(ctx, tx, qIssueAnswer); err != nil {
		return 0, err
	}
	if _, err := st.ExecContext(ctx, paymentID, answer.SealKID, answer.Sealed, answer.Expires.UnixNano()); err != nil {
		return 0, fmt.Errorf("store: issue answer: %w", err)
	}
	return id, nil
}

// ErrClaimTaken: the payment already has a claim (another request's).
var ErrClaimTaken = errors.New("store: the payment already has a claim")

// OpenAndIssueClaim writes a new claim, settled and issued at once, with
// its ledger line and kept answer, in one transaction: for a settlement
// with no effect outside the host (the embedded facilitator without a
// chain), where a claim written earlier would guard nothing a commit is
// worth, the report's issue is the payment's only write. ErrClaimTaken,
// ErrDuplicateTx or ErrIdentifierClaimed (nothing written) when another
// request got there first.
func (s *Store) OpenAndIssueClaim(ctx context.Context, c Claim, l Line, answer *Issued, now time.Time) (int64, error) {
	var id int64
	err := s.inGroup(ctx, func(ctx context.Context, tx *sql.Tx) error {
		st, err := s.stmt(ctx, tx, qOpenSettled)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, c.PaymentID, c.Service, c.Op, c.PriceUSDCUnits, orNull(c.Payer), ClaimSettled, c.House, c.Owner,
			c.LeaseUntil.UnixNano(), c.Created.UnixNano(), c.TxID, orNull(c.Blockhash), orNull(c.Memo), c.Network, c.FeeLamports, now.UnixNano(), orNull(c.IDLookup))
		switch {
		case err != nil && uniqueOn(err, "id_lookup"):
			return ErrIdentifierClaimed
		case err != nil && isUniqueViolation(err):
			return ErrDuplicateTx
		case err != nil:
			return fmt.Errorf("store: open claim: %w", err)
		}
		if ok, err := affectedOne(res, "open claim"); err != nil || !ok {
			return errors.Join(ErrClaimTaken, err)
		}
		id, err = issueIn(ctx, s, tx, c.PaymentID, c.Owner, l, answer, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// ErrNotIssued: no answer is kept for that payment (none was issued, or
// its redelivery window has ended).
var ErrNotIssued = errors.New("store: no issued answer for that payment")

// IssuedAnswer is the answer kept for a payment, while its window lasts.
func (s *Store) IssuedAnswer(ctx context.Context, paymentID string, now time.Time) (Issued, error) {
	var a Issued
	var exp int64
	err := s.reads[qGetIssued].QueryRowContext(ctx, paymentID).Scan(&a.SealKID, &a.Sealed, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return a, ErrNotIssued
	}
	if err != nil {
		return a, fmt.Errorf("store: issued answer: %w", err)
	}
	a.Expires = time.Unix(0, exp).UTC()
	if !now.Before(a.Expires) {
		return Issued{}, ErrNotIssued
	}
	return a, nil
}

// ClaimByIdentifier reads the claim holding a payment identifier's lookup
// (ErrNoClaim when none).
func (s *Store) ClaimByIdentifier(ctx context.Context, lookup string) (Claim, error) {
	c, err := scanClaim(s.reads[qClaimByID].QueryRowContext(ctx, lookup))
	if errors.Is(err, sql.ErrNoRows) {
		return c, ErrNoClaim
	}
	if err != nil {
		return c, fmt.Errorf("store: claim by identifier: %w", err)
	}
	return c, nil
}

// SweepIssued deletes the answers whose redelivery window ended by now
// and returns how many: their claims stay issued (a re-send is then a
// replay), their lines stay.
func (s *Store) SweepIssued(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM issued_answers WHERE expires_ns <= ?`), now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("store: sweep issued answers: %w", err)
	}
	return res.RowsAffected()
}

func affectedOne(res sql.Result, what string) (bool, error) {
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: %s: %w", what, err)
	}
	return n == 1, nil
}

// CountClaims is how many claims are in a state.
func (s *Store) CountClaims(ctx context.Context, state string) (int, error) {
	n, _, err := s.ClaimFigures(ctx, state)
	return n, err
}

// ClaimFigures is the count of claims in a state and the creation time of
// the oldest (zero when there is none): a claim that stays settling or
// settled is a payment to look at, and its age says so where a count
// alone cannot (a busy store always has a few settling).
func (s *Store) ClaimFigures(ctx context.Context, state string) (int, time.Time, error) {
	var n int
	var oldest sql.NullInt64
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*), MIN(created_ns) FROM payment_claims WHERE state = ?`), state).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("store: count claims: %w", err)
	}
	if !oldest.Valid {
		return n, time.Time{}, nil
	}
	return n, time.Unix(0, oldest.Int64), nil
}
