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
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// Store is one database.
type Store struct {
	db   *sql.DB
	d    dialect
	desc string
}

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
		return OpenSQLite(ctx, strings.TrimPrefix(spec, "sqlite:"))
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return OpenPostgres(ctx, spec)
	}
	return nil, errors.New("store: expected sqlite, sqlite:PATH or a postgres:// URL")
}

// OpenSQLite opens (creating) a SQLite database in WAL mode.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: data dir: %w", err)
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: %w", err)
	}
	// One connection: SQLite has one writer anyway, and a single connection
	// turns would-be SQLITE_BUSY races into an orderly queue.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, d: sqliteDialect, desc: "sqlite"}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: db mode: %w", err)
	}
	return s, nil
}

// OpenPostgres connects to PostgreSQL. A search_path parameter in the URL
// selects the schema: its first entry is created when missing, so an
// operator can point a new deployment at a schema of its own.
func OpenPostgres(ctx context.Context, url string) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	db.SetMaxOpenConns(16)
	db.SetConnMaxIdleTime(time.Minute)
	if schema := searchPathSchema(url); schema != "" {
		if _, err := db.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			db.Close()
			return nil, fmt.Errorf("store: create the search_path schema (the URL's user needs CREATE on the database, or create it first): %w", err)
		}
	}
	s := &Store{db: db, d: postgresDialect, desc: "postgres"}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
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

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.desc }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

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
	return []string{v1, v2, v3, strings.Join(v4, ";\n"), strings.Join(v5, ";\n")}
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

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer tx.Rollback()
	if s.d.name == "postgres" {
		// hosts starting together migrate one at a time
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(4021977)`); err != nil {
			return fmt.Errorf("store: migrate lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
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
	return tx.Commit()
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
