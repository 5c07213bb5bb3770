package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// maxGroup bounds how many writes one transaction commits together.
const maxGroup = 64

// groupWrite is one caller's work in a group commit and where its result
// goes.
type groupWrite struct {
	ctx  context.Context
	work func(ctx context.Context, tx *sql.Tx) error
	done chan error
}

// group commits concurrent callers' writes to SQLite in one transaction:
// a commit costs one fsync (synchronous=FULL), and the writes that arrive while one group commits wait
// for the next, so under load many share it and alone one waits for
// nobody. Each write runs under a savepoint of its own: one that fails is
// rolled back alone, the rest commit. No caller hears of its write before
// the transaction that holds it has committed.
type group struct {
	s     *Store
	queue chan *groupWrite
	stop  chan struct{}
	ended chan struct{}
}

// inGroup runs work in the next group transaction and returns its error,
// or the commit's. The Store owns the goroutine that commits (started on
// first use, ended by Close).
func (s *Store) inGroup(ctx context.Context, work func(ctx context.Context, tx *sql.Tx) error) error {
	if s.d.name != sqliteDialect.name {
		// PostgreSQL combines concurrent commits' WAL flushes itself, and
		// a group holding several callers' row locks could deadlock with
		// another host's group taking them in another order: each write
		// is its own transaction there
		return s.alone(ctx, work)
	}
	s.groupMu.Lock()
	if s.grpClosed {
		s.groupMu.Unlock()
		return ErrClosed
	}
	if s.grp == nil {
		s.grp = &group{s: s, queue: make(chan *groupWrite, maxGroup), stop: make(chan struct{}), ended: make(chan struct{})}
		go s.grp.run()
	}
	g := s.grp
	s.groupMu.Unlock()
	w := &groupWrite{ctx: ctx, work: work, done: make(chan error, 1)}
	select {
	case g.queue <- w:
	case <-g.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// once queued the write is the group's: wait for its outcome even if
	// the caller's context ends, so a caller never returns while a commit
	// it may be part of is still undecided
	select {
	case err := <-w.done:
		return err
	case <-g.ended:
		select {
		case err := <-w.done:
			return err
		default:
			return ErrClosed // queued as the committer stopped: never run
		}
	}
}

// alone runs work in a transaction of its own.
func (s *Store) alone(ctx context.Context, work func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer tx.Rollback()
	if err := work(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// GroupStats is how many group transactions committed and how many
// writes they held (zero on PostgreSQL, which commits each alone).
func (s *Store) GroupStats() (commits, writes uint64) {
	return s.groupCommits.Load(), s.groupWrites.Load()
}

// ErrClosed is returned for a write sent after the store closed.
var ErrClosed = errors.New("store: closed")

func (g *group) run() {
	defer close(g.ended)
	batch := make([]*groupWrite, 0, maxGroup)
	for {
		select {
		case w := <-g.queue:
			batch = append(batch[:0], w)
		case <-g.stop:
			g.drain()
			return
		}
	more:
		for len(batch) < maxGroup {
			select {
			case w := <-g.queue:
				batch = append(batch, w)
			default:
				break more
			}
		}
		g.commit(batch)
	}
}

// drain answers the writes still queued when the store closes.
func (g *group) drain() {
	for {
		select {
		case w := <-g.queue:
			w.done <- ErrClosed
		default:
			return
		}
	}
}

// commit runs batch in one transaction and answers each write.
func (g *group) commit(batch []*groupWrite) {
	// the transaction's own deadline: a caller's context may end while
	// others' writes share the transaction
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make([]error, len(batch))
	tx, err := g.s.db.BeginTx(ctx, nil)
	if err != nil {
		for _, w := range batch {
			w.done <- fmt.Errorf("store: group begin: %w", err)
		}
		return
	}
	ran := 0
	for i, w := range batch {
		if err := w.ctx.Err(); err != nil {
			errs[i] = err // given up before its turn: nothing of it runs
			continue
		}
		if len(batch) == 1 {
			errs[i] = w.work(ctx, tx) // alone: the transaction is its savepoint
		} else {
			errs[i] = g.one(ctx, tx, w)
		}
		if errs[i] == nil {
			ran++
		}
	}
	if ran == 0 {
		_ = tx.Rollback()
	} else if err := tx.Commit(); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("store: group commit: %w", err)
			}
		}
	} else {
		g.s.groupCommits.Add(1)
		g.s.groupWrites.Add(uint64(ran))
	}
	for i, w := range batch {
		w.done <- errs[i]
	}
}

// one runs a write under its own savepoint.
func (g *group) one(ctx context.Context, tx *sql.Tx, w *groupWrite) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT assay_write"); err != nil {
		return fmt.Errorf("store: savepoint: %w", err)
	}
	if err := w.work(ctx, tx); err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT assay_write"); rerr != nil {
			return errors.Join(err, fmt.Errorf("store: rollback to savepoint: %w", rerr))
		}
		_, _ = tx.ExecContext(ctx, "RELEASE SAVEPOINT assay_write")
		return err
	}
	if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT assay_write"); err != nil {
		return fmt.Errorf("store: release savepoint: %w", err)
	}
	return nil
}

// closeGroup ends the committer after the write it is committing.
func (s *Store) closeGroup() {
	s.groupMu.Lock()
	defer s.groupMu.Unlock()
	if s.grp != nil && !s.grpClosed {
		s.grpClosed = true
		close(s.grp.stop)
		<-s.grp.ended
	}
}

// The hot writes (ledger lines, claims, free-tier admissions), prepared
// once when the store opens: parsed and planned again on every call they
// cost SQLite more than the write itself.
const (
	qAppendLine = `INSERT INTO ledger (service, criteria_id, criteria_revision, ts_ns, day, payer, price_usdc_units,
		tx_id, fee_lamports, house, cad_rate, cad_rate_date, cad_basis, cad_pending, family_fields)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	qDeliverClaim = `UPDATE payment_claims SET state = ?, delivered_ns = ?, line_id = ?
		WHERE payment_id = ? AND owner = ? AND state = ?`
	qAdmitFree = `
		INSERT INTO free_tier (key, day, count, last_ns) VALUES (?, ?, 1, ?)
		ON CONFLICT (key) DO UPDATE SET
			count = CASE WHEN free_tier.day = excluded.day THEN free_tier.count + 1 ELSE 1 END,
			day = excluded.day,
			last_ns = excluded.last_ns
		WHERE excluded.last_ns - free_tier.last_ns >= ?
		  AND (free_tier.day <> excluded.day OR free_tier.count < ?)
		RETURNING count`
	qOpenClaim = `INSERT INTO payment_claims (payment_id, service, op, price_usdc_units, payer, state, house, owner, lease_until_ns, created_ns, tx_id, blockhash, memo, id_lookup)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (payment_id) DO NOTHING`
	qOpenSettled = `INSERT INTO payment_claims (payment_id, service, op, price_usdc_units, payer, state, house, owner, lease_until_ns, created_ns,
		tx_id, blockhash, memo, network, fee_lamports, settled_ns, id_lookup)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (payment_id) DO NOTHING`
	qIssueAnswer = `INSERT INTO issued_answers (payment_id, seal_kid, sealed, expires_ns) VALUES (?, ?, ?, ?)`
	qGetIssued   = `SELECT seal_kid, sealed, expires_ns FROM issued_answers WHERE payment_id = ?`
	qClaimByID   = `SELECT ` + claimColumns + ` FROM payment_claims WHERE id_lookup = ?`
	qSettleClaim = `UPDATE payment_claims SET state = ?, tx_id = ?, payer = ?, network = ?, fee_lamports = ?, house = ?, settled_ns = ?,
		lease_until_ns = COALESCE(?, lease_until_ns)
		WHERE payment_id = ? AND owner = ? AND state = ?`
	qGetClaim  = `SELECT ` + claimColumns + ` FROM payment_claims WHERE payment_id = ?`
	qTxClaimed = `SELECT 1 FROM payment_claims WHERE tx_id = ?`
	qFreeUse   = `
			INSERT INTO free_use (service, day, n) VALUES (?, ?, 1)
			ON CONFLICT (service, day) DO UPDATE SET n = free_use.n + 1`
)

// prepare prepares the hot writes; it runs once the schema is migrated,
// before any transaction holds SQLite's one connection.
func (s *Store) prepare(ctx context.Context) error {
	s.stmts = map[string]*sql.Stmt{}
	for _, q := range []string{qAppendLine, qDeliverClaim, qAdmitFree, qFreeUse, qOpenClaim, qOpenSettled, qSettleClaim, qIssueAnswer} {
		st, err := s.db.PrepareContext(ctx, s.q(q))
		if err != nil {
			return fmt.Errorf("store: prepare: %w", err)
		}
		s.stmts[q] = st
	}
	// the hot reads, on the readers (kept until Close, never replaced)
	s.reads = map[string]*sql.Stmt{}
	for _, q := range []string{qGetClaim, qTxClaimed, qGetIssued, qClaimByID} {
		st, err := s.rdb.PrepareContext(ctx, s.q(q))
		if err != nil {
			return fmt.Errorf("store: prepare: %w", err)
		}
		s.reads[q] = st
	}
	return nil
}

// stmt is a hot write's prepared statement bound to tx.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	st, ok := s.stmts[query]
	s.stmtMu.Unlock()
	if !ok {
		return nil, errors.New("store: a write that was not prepared")
	}
	return tx.StmtContext(ctx, st), nil
}

// groupExec runs one prepared hot write in the next group and returns the
// rows it changed.
func (s *Store) groupExec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := s.inGroup(ctx, func(ctx context.Context, tx *sql.Tx) error {
		st, err := s.stmt(ctx, tx, query)
		if err != nil {
			return err
		}
		res, err := st.ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
