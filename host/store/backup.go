package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
)

// ErrBackupOutside is a backup asked of a PostgreSQL store: pg_dump makes
// it (a consistent snapshot of the schema while hosts write), not the host.
var ErrBackupOutside = errors.New("store: a PostgreSQL store is backed up with pg_dump (docs/operators.md, \"Backups, restores and upgrades\")")

// Backup writes an online, consistent copy of a SQLite store to path,
// which must not exist, through SQLite's own VACUUM INTO: one read
// transaction, so the copy is the database as of a single commit while
// the host goes on writing (a file copy of a live database can catch the
// file between a commit's pages, and misses what only the WAL holds).
func (s *Store) Backup(ctx context.Context, path string) error {
	if s.d.name != "sqlite" {
		return ErrBackupOutside
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("store: backup: %s exists; a backup never overwrites", path)
	}
	if _, err := s.db.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return os.Chmod(path, 0o600)
}

// Snapshot is what a backed-up SQLite store holds.
type Snapshot struct {
	// Version is its schema version; Latest this binary's.
	Version, Latest int
	Lines           int
	Claims          int
}

// InspectSQLite checks a SQLite store file without changing it: SQLite's
// integrity check passes and its schema is one this binary knows (a
// store a newer Assay migrated is refused: this binary's restore would
// start hosts older than its schema).
func InspectSQLite(ctx context.Context, path string) (Snapshot, error) {
	if _, err := os.Stat(path); err != nil {
		return Snapshot{}, fmt.Errorf("store: inspect: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return Snapshot{}, fmt.Errorf("store: inspect: %w", err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil {
		return Snapshot{}, fmt.Errorf("store: inspect: %w", err)
	}
	if check != "ok" {
		return Snapshot{}, errors.New("store: inspect: SQLite's integrity check fails on the copy")
	}
	snap := Snapshot{Latest: len((&Store{d: sqliteDialect}).migrations())}
	// the payment identity's floor row (FloorVersion) is no schema version
	row := db.QueryRowContext(ctx, `SELECT (SELECT COALESCE(MAX(version), 0) FROM schema_migrations WHERE version < ?), (SELECT COUNT(*) FROM ledger), (SELECT COUNT(*) FROM payment_claims)`, FloorVersion)
	if err := row.Scan(&snap.Version, &snap.Lines, &snap.Claims); err != nil {
		return Snapshot{}, fmt.Errorf("store: inspect: not an Assay store: %w", err)
	}
	if snap.Version > snap.Latest {
		return snap, fmt.Errorf("store: inspect: schema version %d is newer than this binary's %d: restore it with the Assay that made it", snap.Version, snap.Latest)
	}
	return snap, nil
}

// libpqParams are the connection parameters pg_dump (libpq) takes in a
// URL. A store URL may carry others that only the host's driver reads
// (search_path, pool settings); libpq refuses a URL holding any of them.
var libpqParams = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true, "passfile": true,
	"channel_binding": true, "connect_timeout": true, "options": true, "application_name": true,
	"fallback_application_name": true, "keepalives": true, "keepalives_idle": true, "keepalives_interval": true,
	"keepalives_count": true, "tcp_user_timeout": true, "sslmode": true, "sslnegotiation": true, "sslcompression": true,
	"sslcert": true, "sslkey": true, "sslpassword": true, "sslcertmode": true, "sslrootcert": true, "sslcrl": true,
	"sslcrldir": true, "sslsni": true, "requirepeer": true, "ssl_min_protocol_version": true,
	"ssl_max_protocol_version": true, "krbsrvname": true, "gsslib": true, "gssdelegation": true, "gssencmode": true,
	"service": true, "target_session_attrs": true, "load_balance_hosts": true,
}

// PgDump is how pg_dump backs up a PostgreSQL store: its arguments, with
// the store's schema (the URL's search_path) as --schema and the URL
// reduced to what libpq takes, without its password, which goes in
// Password for PGPASSWORD (never on a command line others can read).
type PgDump struct {
	Args     []string
	Password string
}

// PgDumpOf is pg_dump's command for the store at url, writing a custom
// format archive to file (pg_restore reads it).
func PgDumpOf(url, file string) (PgDump, error) {
	u, err := neturl.Parse(url)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return PgDump{}, errors.New("store: the store is not a postgres:// URL")
	}
	var d PgDump
	if u.User != nil {
		d.Password, _ = u.User.Password()
		u.User = neturl.User(u.User.Username())
	}
	schema := searchPathSchema(url)
	q := neturl.Values{}
	for k, v := range u.Query() {
		if libpqParams[k] {
			q[k] = v
		}
	}
	u.RawQuery = q.Encode()
	d.Args = []string{"--format=custom", "--file=" + file}
	if schema != "" {
		d.Args = append(d.Args, "--schema="+schema)
	}
	d.Args = append(d.Args, "--dbname="+u.String())
	return d, nil
}
