package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/dirlock"
	"github.com/assay-audit/assay/host/store"
)

// storeFiles are the data dir's files that are the store itself (copied
// through SQLite, never as files) or the running host's own (its lock).
var storeFiles = map[string]bool{"assay.db": true, "assay.db-wal": true, "assay.db-shm": true, dirlock.FileName: true}

// storeCmd is `assay store backup` and `assay store restore`.
func storeCmd(sub string, args []string, stdout io.Writer) error {
	fs := newFlags("store " + sub)
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var); restore: the new one, absent or empty")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	out := fs.String("out", "", "backup: the folder to write (it must not exist)")
	from := fs.String("from", "", "restore: the folder a backup wrote")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{dataDir: &c.DataDir, storeSpec: &c.Store}
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch sub {
	case "backup":
		if *out == "" {
			return errors.New("store backup: name the folder to write (--out)")
		}
		return backupStore(ctx, cfg, *out, stdout)
	case "restore":
		if *from == "" {
			return errors.New("store restore: name the backup's folder (--from)")
		}
		if cfg.Store != "" && cfg.Store != "sqlite" {
			return errors.New("store restore: restores a SQLite store into a data dir; a PostgreSQL store is restored with pg_restore (docs/operators.md)")
		}
		return restoreStore(ctx, *from, cfg.DataDir, stdout)
	}
	return fmt.Errorf("store: backup or restore, not %q", sub)
}

// backupStore writes a folder a host can be started from: the store,
// copied online by SQLite, and the data dir's own files (host id, signing
// keys, redelivery secret, generated wallets), which a host writes once.
// It is as secret as the data dir: 0700, its files 0600.
func backupStore(ctx context.Context, cfg config.Config, out string, stdout io.Writer) error {
	st, err := store.OpenExisting(ctx, cfg.Store, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("store backup: %s exists; a backup never overwrites", out)
	}
	if st.Dialect() != "sqlite" {
		return pgBackup(ctx, cfg, out, stdout)
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return fmt.Errorf("store backup: %w", err)
	}
	if err := st.Backup(ctx, filepath.Join(out, "assay.db")); err != nil {
		return err
	}
	entries, err := os.ReadDir(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("store backup: data dir: %w", err)
	}
	var kept []string
	for _, e := range entries {
		if !e.Type().IsRegular() || storeFiles[e.Name()] {
			continue
		}
		if err := copyFile0600(filepath.Join(cfg.DataDir, e.Name()), filepath.Join(out, e.Name())); err != nil {
			return fmt.Errorf("store backup: %w", err)
		}
		kept = append(kept, e.Name())
	}
	snap, err := store.InspectSQLite(ctx, filepath.Join(out, "assay.db"))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: the store (schema v%d, %d ledger lines, %d payment claims) and %s\n"+
		"keep it as you keep the data dir (it holds its keys); with a key secret (keys_secret_file) keep that file apart from the backup\n",
		out, snap.Version, snap.Lines, snap.Claims, listOrNone(kept))
	return err
}

// restoreStore makes a new data dir from a backup folder, after SQLite's
// integrity check of its store; it never writes into a data dir that
// holds anything.
func restoreStore(ctx context.Context, from, dataDir string, stdout io.Writer) error {
	snap, err := store.InspectSQLite(ctx, filepath.Join(from, "assay.db"))
	if err != nil {
		return err
	}
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("store restore: the data dir %s holds files; restore into a new one", dataDir)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("store restore: %w", err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("store restore: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile0600(filepath.Join(from, e.Name()), filepath.Join(dataDir, e.Name())); err != nil {
			return fmt.Errorf("store restore: %w", err)
		}
	}
	_, err = fmt.Fprintf(stdout, "restored %s into %s: schema v%d (this binary's: v%d), %d ledger lines, %d payment claims; start a host on it with --data-dir %s, then run assay ledger reconcile\n",
		from, dataDir, snap.Version, snap.Latest, snap.Lines, snap.Claims, dataDir)
	return err
}

func copyFile0600(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, raw, 0o600)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no other file"
	}
	return strings.Join(names, ", ")
}

// pgDumpFile is the archive a PostgreSQL backup folder holds.
const pgDumpFile = "assay.pgdump"

// pgBackup backs up a PostgreSQL store with pg_dump (a consistent
// snapshot of the store's schema while hosts write) into a new folder,
// with the key secret beside it: the store's signing keys are sealed
// under it. Without pg_dump on the PATH it prints the command, written to
// run as printed, and makes nothing.
func pgBackup(ctx context.Context, cfg config.Config, out string, stdout io.Writer) error {
	dump, err := store.PgDumpOf(cfg.Store, filepath.Join(out, pgDumpFile))
	if err != nil {
		return fmt.Errorf("store backup: %w", err)
	}
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		pass := ""
		if dump.Password != "" {
			pass = " (the store URL's password is left out: set PGPASSWORD or a ~/.pgpass entry first)"
		}
		return fmt.Errorf("store backup: pg_dump is not on the PATH (Debian: postgresql-client); install it and run this again, or run%s:\n  mkdir -m 0700 %s && pg_dump %s\nand keep the key secret file (keys_secret_file) beside it",
			pass, shellQuote(out), strings.Join(quoteAll(dump.Args), " "))
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return fmt.Errorf("store backup: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, dump.Args...)
	cmd.Env = os.Environ()
	if dump.Password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+dump.Password) // never on the command line ps shows
	}
	if said, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("store backup: pg_dump: %w: %s", err, strings.TrimSpace(string(said)))
	}
	if err := os.Chmod(filepath.Join(out, pgDumpFile), 0o600); err != nil {
		return fmt.Errorf("store backup: %w", err)
	}
	kept := "no key secret (this host signs with the data dir's keys; back the data dir up too)"
	if cfg.KeysSecretFile != "" {
		if err := copyFile0600(cfg.KeysSecretFile, filepath.Join(out, filepath.Base(cfg.KeysSecretFile))); err != nil {
			return fmt.Errorf("store backup: the key secret: %w", err)
		}
		kept = "the key secret " + filepath.Base(cfg.KeysSecretFile)
	}
	_, err = fmt.Fprintf(stdout, "wrote %s: %s (pg_dump of the store's schema) and %s\n"+
		"restore: pg_restore --no-owner --dbname=<a database URL> %s, then start a host with its store URL's search_path set to the schema\n",
		out, pgDumpFile, kept, filepath.Join(out, pgDumpFile))
	return err
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return out
}
