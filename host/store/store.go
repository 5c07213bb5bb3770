// Package store is the host's memory: the ledger and its amendment rows,
// the free-tier counters, payment claims and delivery markers, on
// SQLite (one host, the embedded default) or PostgreSQL (several hosts
// sharing one database). One SQL implementation serves both through a small
// dialect; every statement that decides something (an admission, a claim)
// is a single atomic statement, so several hosts agree exactly.
//
// Nothing submitted is ever passed to this package: it stores identifiers
// (keyed digests of free-tier callers, payer wallets, transaction ids),
// counts, prices and the families' closed ledger fields.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// Store is one database.
type Store struct {
	db *sql.DB
	// rdb serves the hot reads (claims): on SQLite a pool of read-only
	// connections of its own, so a read never queues behind the one
	// writer's commit and its fsync (WAL lets readers run beside it and
	// see every commit made before they began); on PostgreSQL it is db
	rdb  *sql.DB
	d    dialect
	desc string
	// schema is the postgres search_path's first schema ("" for none)
	schema string
	// where names the database for an operator: never a password
	where string
	// the group committer (group.go), started by the first grouped write
	groupMu   sync.Mutex
	grp       *group
	grpClosed bool
	// what the group committed, for the operator's metrics
	groupCommits, groupWrites atomic.Uint64
	// stmts are the hot writes' prepared statements (stmt)
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
	// reads are the hot reads' prepared statements, on rdb
	reads map[string]*sql.Stmt
	// ahead: how many versions the store's schema is ahead of this
	// binary's (a newer Assay migrated it: a rolling upgrade under way)
	ahead int
}

// SchemaAhead is how many versions the store's schema is ahead of this
// binary's: 1 while a newer Assay's hosts share the store with this one
// during a rolling upgrade (0 otherwise).
func (s *Store) SchemaAhead() int { return s.ahead }

type dialect struct {
	name     string
	autoinc  string
	boolType string
	falseLit string
	rebind   func(string) string
}

var sqliteDialect = dialect{
	name:     "sqlite",
	autoinc:  "INTEGER PRIMARY KEY AUTOINCREMENT",
	boolType: "INTEGER",
	falseLit: "0",
	rebind:   func(q string) string { return q },
}

var postgresDialect = dialect{
	name:     "postgres",
	autoinc:  "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
	boolType: "BOOLEAN",
	falseLit: "false",
	rebind: func(q string) string {
		var b strings.Builder
		n := 0
		for _, c := range q {
			if c == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(c)
		}
		return b.String()
	},
}

// Open opens the store a spec names: "" or "sqlite" for dataDir/assay.db,
// "sqlite:PATH", or a postgres:// / postgresql:// URL.
func Open(ctx context.Context, spec, dataDir string) (*Store, error) {
	switch {
	case spec == "" || spec == "sqlite":
		return OpenSQLite(ctx, filepath.Join(dataDir, "assay.db"))
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		// the data dir is the host's to make; a folder named in a path is
		// the operator's, and a mistyped one must not become a new, empty
		// store somewhere unexpected
		if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
			return nil, errors.New("store: the folder of the sqlite:PATH store does not exist; create it first (the host makes only its data dir)")
		}
		return OpenSQLite(ctx, path)
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return OpenPostgres(ctx, spec)
	}
	return nil, errors.New("store: expected sqlite, sqlite:PATH or a postgres:// URL")
}

// OpenSQLite opens (creating) a SQLite database in WAL mode.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	return openSQLite(ctx, path, true)
}

func openSQLite(ctx context.Context, path string, create bool) (*Store, error) {
	mode := "rw"
	if create {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("store: data dir: %w", err)
		}
		mode = "rwc"
	} else if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: sqlite %s", ErrNoStore, absPath(path))
	}
	// synchronous=FULL under WAL fsyncs the WAL at every commit, so a
	// committed claim (the only record that a payer paid) or ledger line
	// survives power loss; NORMAL could roll back the last commits. The
	// cost, one fsync per commit, is measured in docs/benchmarks.md.
	//
	// The writer keeps 16 MiB of pages (SQLite's default is 2 MiB): it is
	// the only connection that changes the file, so its cache stays valid,
	// and the claims' and ledger's random-key indexes (payment and
	// transaction ids) then stay in memory instead of being read back at
	// every commit. Readers map the file (mmap_size), since a reader's
	// cache is dropped whenever the writer commits.
	//
	// Its transactions begin IMMEDIATE: one that began deferred, read, and
	// then wrote while another process (assay ledger, a second command)
	// held the write lock got SQLITE_BUSY at once, since SQLite runs no
	// busy handler for a read transaction's upgrade; taken at BEGIN, the
	// lock waits its busy_timeout like any other.
	dsn := "file:" + path + "?mode=" + mode + "&_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_pragma=cache_size(-16384)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	// One connection: SQLite has one writer anyway, and a single connection
	// turns would-be SQLITE_BUSY races into an orderly queue.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, rdb: db, d: sqliteDialect, desc: "sqlite", where: "sqlite " + absPath(path)}
	if err := s.migrate(ctx, create); err != nil {
		db.Close()
		return nil, err
	}
	// opened once the schema exists: query_only makes any write on these
	// connections an error, so the one-writer rule holds by construction
	rdb, err := sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(10000)&_pragma=query_only(1)&_pragma=mmap_size(268435456)")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open sqlite readers: %w", err)
	}
	rdb.SetMaxOpenConns(readers)
	rdb.SetMaxIdleConns(readers)
	s.rdb = rdb
	if err := s.prepare(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("store: db mode: %w", err)
	}
	return s, nil
}

// OpenPostgres connects to PostgreSQL. A search_path parameter in the URL
// selects the schema: its first entry is created when missing, so an
// operator can point a new deployment at a schema of its own.
func OpenPostgres(ctx context.Context, url string) (*Store, error) {
	return openPostgres(ctx, url, true)
}

func openPostgres(ctx context.Context, url string, create bool) (*Store, error) {
	if err := checkSchemaName(searchPathSchema(url)); err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	db.SetMaxOpenConns(16)
	db.SetConnMaxIdleTime(time.Minute)
	s := &Store{db: db, rdb: db, d: postgresDialect, desc: "postgres", schema: searchPathSchema(url), where: describePostgres(url)}
	if err := s.migrate(ctx, create); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// checkSchemaName refuses a search_path schema PostgreSQL would not take
// as written: unquoted in search_path it is folded to lower case (so a
// schema created as "Audits" is never the one selected) and cut to 63
// bytes (so a longer name silently becomes another). "" is no schema.
func checkSchemaName(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > 63 {
		return fmt.Errorf("store: the search_path schema is %d bytes long; PostgreSQL keeps 63", len(name))
	}
	for i, c := range name {
		if c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return errors.New("store: the search_path schema must be lower-case letters, digits and _, starting with a letter or _ (PostgreSQL folds an unquoted name to lower case)")
	}
	return nil
}

// searchPathSchema is the first schema a postgres URL's search_path names
// ("" when none, or when it is $user).
func searchPathSchema(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(u.Query().Get("search_path"), ",")
	first = strings.Trim(strings.TrimSpace(first), `"`)
	if first == "$user" {
		return ""
	}
	return first
}

// OpenExisting opens a store that a host has already made, as Open does,
// and refuses one that does not exist yet (ErrNoStore): the operator's
// commands use it, so a mistyped or missing store is an error, not a
// fresh empty database the command then reports success on.
func OpenExisting(ctx context.Context, spec, dataDir string) (*Store, error) {
	switch {
	case spec == "" || spec == "sqlite" || strings.HasPrefix(spec, "sqlite:"):
		path := filepath.Join(dataDir, "assay.db")
		if p, ok := strings.CutPrefix(spec, "sqlite:"); ok {
			path = p
		}
		return openSQLite(ctx, path, false)
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return openPostgres(ctx, spec, false)
	}
	return nil, errors.New("store: expected sqlite, sqlite:PATH or a postgres:// URL")
}

// Where names the database for an operator ("sqlite /abs/path" or
// "postgres host:port/database schema S"); it never holds a password.
func (s *Store) Where() string { return s.where }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// describePostgres is a postgres URL without its user info or parameters
// but the schema.
func describePostgres(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "postgres (unparsable URL)"
	}
	d := "postgres " + u.Host + u.Path
	if schema := searchPathSchema(raw); schema != "" {
		d += " schema " + schema
	} else {
		d += " schema public"
	}
	return d
}

// HasSchema is whether a PostgreSQL store's URL names its schema
// (search_path); false on SQLite.
func (s *Store) HasSchema() bool { return s.schema != "" }

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.desc }

// Close closes the database.
func (s *Store) Close() error {
	s.closeGroup()
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		_ = st.Close()
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	for _, st := range s.reads {
		_ = st.Close()
	}
	return s.closeDBs()
}

// readers is how many read-only connections a SQLite store keeps: enough
// for the claim reads of every request a 2-core host has in flight, each
// a page cache of its own.
const readers = 4

func (s *Store) closeDBs() error {
	var rerr error
	if s.rdb != s.db {
		rerr = s.rdb.Close()
	}
	return errors.Join(s.db.Close(), rerr)
}

func (s *Store) q(query string) string { return s.d.rebind(query) }

// migrations are applied in order, each once, each in its own transaction.
func (s *Store) migrations() []string {
	ai, bt := s.d.autoinc, s.d.boolType
	appendOnly := []string{}
	if s.d.name == "postgres" {
		appendOnly = append(appendOnly,
			`CREATE FUNCTION assay_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'append-only table'; END $$`)
	}
	appendOnly = append(append(appendOnly, s.appendOnly("ledger")...), s.appendOnly("ledger_amendments")...)
	v1 := strings.Join(append([]string{
		`CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE free_tier (key TEXT PRIMARY KEY, day TEXT NOT NULL, count BIGINT NOT NULL, last_ns BIGINT NOT NULL)`,
		`CREATE TABLE free_use (service TEXT NOT NULL, day TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (service, day))`,
		`CREATE TABLE ledger (
			id ` + ai + `,
			service TEXT NOT NULL, criteria_id TEXT NOT NULL, criteria_revision TEXT NOT NULL,
			ts_ns BIGINT NOT NULL, day TEXT NOT NULL,
			payer TEXT, price_usdc_units BIGINT NOT NULL,
			tx_id TEXT, fee_lamports BIGINT,
			house ` + bt + ` NOT NULL,
			cad_rate TEXT, cad_rate_date TEXT, cad_basis TEXT, cad_pending ` + bt + ` NOT NULL,
			family_fields TEXT NOT NULL)`,
		`CREATE UNIQUE INDEX ledger_tx ON ledger (tx_id) WHERE tx_id IS NOT NULL`,
		`CREATE TABLE ledger_amendments (
			id ` + ai + `,
			line_id BIGINT NOT NULL REFERENCES ledger (id),
			kind TEXT NOT NULL, ts_ns BIGINT NOT NULL,
			cad_rate TEXT, cad_rate_date TEXT, cad_basis TEXT,
			refund_usdc_units BIGINT)`,
		`CREATE TABLE settled_tx (tx_id TEXT PRIMARY KEY, ts_ns BIGINT NOT NULL)`,
	}, appendOnly...), ";\n")
	v2 := `CREATE TABLE delivery_markers (
			id TEXT PRIMARY KEY, service TEXT NOT NULL, op TEXT NOT NULL,
			payment TEXT NOT NULL, created_ns BIGINT NOT NULL, expires_ns BIGINT NOT NULL, spent_ns BIGINT)`
	// v3: a paid request's claim of its payment and its delivery state are
	// one row (see claims.go); settled_tx's ids become delivered claims, so
	// a payment settled before the upgrade is still refused as a replay
	v3 := `CREATE TABLE payment_claims (
			payment_id TEXT PRIMARY KEY, service TEXT NOT NULL, op TEXT NOT NULL,
			price_usdc_units BIGINT NOT NULL, payer TEXT, state TEXT NOT NULL,
			tx_id TEXT, network TEXT, fee_lamports BIGINT, house ` + bt + ` NOT NULL,
			owner TEXT NOT NULL, lease_until_ns BIGINT NOT NULL,
			created_ns BIGINT NOT NULL, settled_ns BIGINT, delivered_ns BIGINT, line_id BIGINT);
		CREATE UNIQUE INDEX payment_claims_tx ON payment_claims (tx_id) WHERE tx_id IS NOT NULL;
		CREATE INDEX payment_claims_state ON payment_claims (state);
		INSERT INTO payment_claims (payment_id, service, op, price_usdc_units, state, tx_id, house, owner, lease_until_ns, created_ns, settled_ns, delivered_ns)
			SELECT 'tx:' || tx_id, '', '', 0, 'delivered', tx_id, ` + s.d.falseLit + `, '', 0, ts_ns, ts_ns, ts_ns FROM settled_tx;
		DROP TABLE settled_tx`
	// v4: stop-serving and resume, per service and criteria version, as
	// amendment-style rows (append-only); a service version's state is its
	// latest row
	v4 := []string{`CREATE TABLE service_events (
			id ` + ai + `,
			ts_ns BIGINT NOT NULL, service TEXT NOT NULL, criteria_id TEXT NOT NULL, criteria_revision TEXT NOT NULL,
			action TEXT NOT NULL, reason TEXT NOT NULL, actor TEXT NOT NULL,
			corpus_passed BIGINT, corpus_cases BIGINT)`,
		`CREATE INDEX service_events_version ON service_events (service, criteria_id, criteria_revision, id)`}
	v4 = append(v4, s.appendOnly("service_events")...)
	// v5: signing keys every host on the store signs with, their seeds
	// sealed with the operator's key secret (append-only: the latest key
	// is active, every one stays published)
	v5 := []string{`CREATE TABLE signing_keys (
			id ` + ai + `, kid TEXT NOT NULL UNIQUE, created_ns BIGINT NOT NULL, sealed TEXT NOT NULL)`}
	v5 = append(v5, s.appendOnly("signing_keys")...)
	// v6: which key is active is its own append-only row, numbered: a key
	// becomes active by taking the next generation, which the primary key
	// lets one host alone do (the first start's race, and a rotation's);
	// keys with no activation are retired (a joining host's own earlier
	// keys), published so what they signed still verifies. Every key so
	// far had been active in its turn. hosts is each running host's own
	// view, rewritten by it every few seconds.
	v6 := []string{`CREATE TABLE signing_key_activations (
			generation BIGINT PRIMARY KEY, kid TEXT NOT NULL REFERENCES signing_keys (kid), ts_ns BIGINT NOT NULL)`,
		`INSERT INTO signing_key_activations (generation, kid, ts_ns) SELECT id, kid, created_ns FROM signing_keys`,
		`CREATE TABLE hosts (
			host_id TEXT PRIMARY KEY, label TEXT NOT NULL, started_ns BIGINT NOT NULL, seen_ns BIGINT NOT NULL,
			ready ` + bt + ` NOT NULL, events_seen BIGINT NOT NULL, services TEXT NOT NULL)`}
	v6 = append(v6, s.appendOnly("signing_key_activations")...)
	// v7: a claim's transaction blockhash, when known before settling: with
	// its transaction id, what a host needs to learn from the chain whether
	// a claim its crash left settling landed, or can never land
	v7 := `ALTER TABLE payment_claims ADD COLUMN blockhash TEXT`
	// v8: a claim's memo, which finds on the chain a transaction a remote
	// facilitator sent (its id is known only from the facilitator)
	v8 := `ALTER TABLE payment_claims ADD COLUMN memo TEXT`
	// v9: the operator's reason for a refund, beside the ledger rather
	// than in it: every criteria's ledger field list is closed (adding a
	// field is a criteria version change) and names the refund, not why
	v9 := []string{`CREATE TABLE refund_reasons (
			amendment_id BIGINT PRIMARY KEY REFERENCES ledger_amendments (id), reason TEXT NOT NULL)`}
	v9 = append(v9, s.appendOnly("refund_reasons")...)
	// v10: a paid report is issued before it is written (#41): its claim
	// moves to issued (was: delivered, inferred from bytes written) with
	// its ledger line and its answer, sealed for redelivery, in one
	// transaction. A claim may carry the keyed lookup of the payer's x402
	// payment-identifier id (one claim per id), and issued_answers keeps
	// each sealed answer until its redelivery window ends (redelivery.go)
	v10 := strings.Join([]string{
		`UPDATE payment_claims SET state = 'issued' WHERE state = 'delivered'`,
		`ALTER TABLE payment_claims ADD COLUMN id_lookup TEXT`,
		`CREATE UNIQUE INDEX payment_claims_id_lookup ON payment_claims (id_lookup) WHERE id_lookup IS NOT NULL`,
		`CREATE TABLE issued_answers (
			payment_id TEXT PRIMARY KEY, seal_kid TEXT NOT NULL, sealed TEXT NOT NULL, expires_ns BIGINT NOT NULL)`,
		`CREATE INDEX issued_answers_expiry ON issued_answers (expires_ns)`,
	}, ";\n")
	// v11: the build each host runs, for an operator watching a rolling
	// upgrade. Additive, as every migration is (docs/operators.md,
	// "Upgrades"): a host of the previous version writes its row without
	// it and goes on serving on the migrated store
	v11 := `ALTER TABLE hosts ADD COLUMN version TEXT`
	// v12: the launch proofs a plugin set passed on this store (proofs.go):
	// a host whose set has passed serves at once, every host of a fleet
	// reading the proof one of them made
	// and the triggers by which a store stamped with its payment identity
	// (identity.go) refuses house proofs from any build
	v12 := append([]string{`CREATE TABLE launch_proofs (
			proof_key TEXT PRIMARY KEY, service TEXT NOT NULL, criteria_id TEXT NOT NULL, criteria_revision TEXT NOT NULL,
			kind TEXT NOT NULL, passed_ns BIGINT NOT NULL, host_id TEXT NOT NULL, version TEXT NOT NULL,
			cases BIGINT NOT NULL, planted BIGINT NOT NULL)`}, s.onChainTriggers()...)
	// v13: the sign-in nonces spent (signin.go), each kept until no host
	// would accept its challenge. IF NOT EXISTS: a store whose schema rows
	// were set back (an operator's, or a test's, downgrade) keeps them
	v13 := strings.Join([]string{
		`CREATE TABLE IF NOT EXISTS sign_in_nonces (nonce TEXT PRIMARY KEY, keep_ns BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS sign_in_nonces_keep ON sign_in_nonces (keep_ns)`,
	}, ";\n")
	return []string{v1, v2, v3, strings.Join(v4, ";\n"), strings.Join(v5, ";\n"), strings.Join(v6, ";\n"), v7, v8, strings.Join(v9, ";\n"), v10, v11,
		strings.Join(v12, ";\n"), v13}
}

// appendOnly are the statements that make the database refuse UPDATE and
// DELETE on a table (PostgreSQL's through assay_append_only, made in v1).
func (s *Store) appendOnly(table string) []string {
	if s.d.name == "postgres" {
		return []string{fmt.Sprintf("CREATE TRIGGER %s_append_only BEFORE UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION assay_append_only()", table, table)}
	}
	var out []string
	for _, op := range []string{"UPDATE", "DELETE"} {
		out = append(out, fmt.Sprintf("CREATE TRIGGER %s_no_%s BEFORE %s ON %s BEGIN SELECT RAISE(ABORT, 'append-only table'); END",
			table, strings.ToLower(op), op, table))
	}
	return out
}

// migrate brings the schema to the latest version, each migration once.
// On PostgreSQL hosts starting together take turns under one advisory
// lock, the search_path schema's creation included (two CREATE SCHEMA IF
// NOT EXISTS at once: one fails on pg_namespace's unique index). Without
// create, a store that holds no Assay schema is refused: an operator's
// command never makes a store where it meant to find one.
func (s *Store) migrate(ctx context.Context, create bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate (%s): %w", s.where, err)
	}
	defer tx.Rollback()
	if s.d.name == "postgres" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(4021977)`); err != nil {
			return fmt.Errorf("store: migrate lock: %w", err)
		}
		if err := s.createSchema(ctx, tx, create); err != nil {
			return err
		}
	}
	if !create {
		if ok, err := s.hasMigrations(ctx, tx); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: %s", ErrNoStore, s.where)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	var have int
	// the floor row a payment identity stamp writes (identity.go) is no
	// schema version: it is there to stop builds older than the stamp
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations WHERE version < ?`), FloorVersion).Scan(&have); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	latest := len(s.migrations())
	switch {
	case have > latest+1:
		return fmt.Errorf("store: its schema is version %d, this Assay's is %d: a host runs on a store at most one version ahead of it (a rolling upgrade); run a newer Assay", have, latest)
	case have > latest:
		s.ahead = have - latest
	}
	for i, m := range s.migrations() {
		v := i + 1
		if v <= have {
			continue
		}
		for _, stmt := range splitStatements(m) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("store: migration %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version) VALUES (?)`), v); err != nil {
			return fmt.Errorf("store: migration %d: %w", v, err)
		}
	}
	secret := make([]byte, 32)
	// per-database secrets (free-tier digests, delivery markers): every
	// host on the database derives the same keys
	for _, name := range []string{"freetier_key", "marker_key"} {
		if _, err := rand.Read(secret); err != nil {
			return fmt.Errorf("store: secret: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), name, hex.EncodeToString(secret)); err != nil {
			return fmt.Errorf("store: settings: %w", err)
		}
	}
	// the store's own name, not a secret: every host on it labels the
	// store-wide figures it publishes with it, so a fleet's query takes
	// one host's figure per store instead of adding them up
	if _, err := rand.Read(secret[:16]); err != nil {
		return fmt.Errorf("store: id: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`), "store_id", hex.EncodeToString(secret[:16])); err != nil {
		return fmt.Errorf("store: settings: %w", err)
	}
	return tx.Commit()
}

// ID names the store (a random value made with it): the label that tells
// a store-wide figure published by every host on it apart from a
// per-host one.
func (s *Store) ID(ctx context.Context) (string, error) {
	var v string
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM settings WHERE name = ?`), "store_id").Scan(&v); err != nil {
		return "", fmt.Errorf("store: id: %w", err)
	}
	return v, nil
}

// ErrNoStore is a database that holds no Assay store: no host has run on it.
var ErrNoStore = errors.New("store: no Assay store there (no host has run on it; check the store named by --store, ASSAY_STORE or the config's store)")

// createSchema makes the search_path's schema when it is missing; one that
// exists is not created again (that would need CREATE on the database).
func (s *Store) createSchema(ctx context.Context, tx *sql.Tx, create bool) error {
	if s.schema == "" {
		return nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, s.schema).Scan(&n); err != nil {
		return fmt.Errorf("store: schema: %w", err)
	}
	if n > 0 {
		return nil
	}
	if !create {
		return fmt.Errorf("%w: %s", ErrNoStore, s.where)
	}
	if _, err := tx.ExecContext(ctx, `CREATE SCHEMA `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
		return fmt.Errorf("store: create the search_path schema (the URL's user needs CREATE on the database, or create it first): %w", err)
	}
	return nil
}

// hasMigrations is whether the database holds an Assay schema.
func (s *Store) hasMigrations(ctx context.Context, tx *sql.Tx) (bool, error) {
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`
	if s.d.name == "postgres" {
		q = `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'`
	}
	var n int
	if err := tx.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return false, fmt.Errorf("store: schema: %w", err)
	}
	return n > 0, nil
}

// splitStatements splits a migration on ";\n" (no statement here contains
// that sequence, dollar-quoted bodies included).
func splitStatements(m string) []string {
	var out []string
	for _, s := range strings.Split(m, ";\n") {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// FreeTierKey is the deployment's secret for keying free-tier callers.
func (s *Store) FreeTierKey(ctx context.Context) ([]byte, error) {
	return s.secret(ctx, "freetier_key")
}

// MarkerKey is the deployment's secret for delivery-marker tokens.
func (s *Store) MarkerKey(ctx context.Context) ([]byte, error) { return s.secret(ctx, "marker_key") }

func (s *Store) secret(ctx context.Context, name string) ([]byte, error) {
	var v string
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM settings WHERE name = ?`), name).Scan(&v); err != nil {
		return nil, fmt.Errorf("store: secret: %w", err)
	}
	return hex.DecodeString(v)
}

// DB exposes the database handle to tests that must prove what the schema
// refuses.
func (s *Store) DB() *sql.DB { return s.db }
