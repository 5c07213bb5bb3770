package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/storetest"
	"github.com/assay-audit/assay/host/reconcile"
	"github.com/assay-audit/assay/host/store"
)

// backupCase is one store's way to be backed up under load and restored
// into a fresh store: what the operator runs, as docs/operators.md says.
type backupCase struct {
	// store is the spec the paid host serves from ("" for its data dir's
	// SQLite)
	store string
	// backup runs while the load goes on; restore then makes the fresh
	// store and returns the spec and data dir a host is started with
	backup  func(t *testing.T, c *chainHost) string
	restore func(t *testing.T, c *chainHost, backup string) (spec, dataDir string)
}

// A store backed up while paid calls go on, restored into a fresh one,
// holds the books as of one moment: a host starts on it, every report
// delivered before the backup began has its line there, every line there
// is a payment taken, `assay ledger reconcile` finds no line the chain
// contradicts and lists as "without a line" exactly the payments taken
// after the backup's moment (what an operator restoring must then look
// into), and `assay ledger report` counts the restored lines. SQLite: `assay
// store backup` (SQLite's online VACUUM INTO) and `assay store restore`;
// PostgreSQL: pg_dump of the schema and pg_restore into a new database.
func TestABackupUnderPaidLoadRestores(t *testing.T) {
	cases := map[string]backupCase{
		"sqlite": {
			backup: func(t *testing.T, c *chainHost) string {
				out := filepath.Join(t.TempDir(), "backup")
				var said bytes.Buffer
				if err := run([]string{"store", "backup", "--data-dir", c.data, "--out", out}, &said, &said); err != nil {
					t.Fatalf("assay store backup: %v\n%s", err, said.String())
				}
				if !strings.Contains(said.String(), "host-id") || !strings.Contains(said.String(), "signing-keys.json") {
					t.Errorf("the backup does not keep the data dir's files: %s", said.String())
				}
				return out
			},
			restore: func(t *testing.T, c *chainHost, backup string) (string, string) {
				dir := filepath.Join(t.TempDir(), "restored")
				var said bytes.Buffer
				if err := run([]string{"store", "restore", "--from", backup, "--data-dir", dir}, &said, &said); err != nil {
					t.Fatalf("assay store restore: %v\n%s", err, said.String())
				}
				if err := run([]string{"store", "restore", "--from", backup, "--data-dir", dir}, &said, &said); err == nil {
					t.Error("a restore into a data dir that holds files was not refused")
				}
				return "", dir
			},
		},
		"postgres": {
			store: "postgres",
			backup: func(t *testing.T, c *chainHost) string {
				// assay store backup runs pg_dump itself: the store's schema,
				// a URL libpq takes
				out := filepath.Join(t.TempDir(), "backup")
				var said bytes.Buffer
				if err := run([]string{"store", "backup", "--store", c.storeSpec, "--data-dir", c.data, "--out", out}, &said, &said); err != nil {
					t.Fatalf("assay store backup: %v\n%s", err, said.String())
				}
				if !strings.Contains(said.String(), "pg_restore") {
					t.Errorf("the backup does not say how to restore it: %s", said.String())
				}
				return filepath.Join(out, pgDumpFile)
			},
			restore: func(t *testing.T, c *chainHost, dump string) (string, string) {
				db := freshDatabase(t)
				pgTool(t, "pg_restore", "--no-owner", "--dbname="+db, dump)
				return db + "&search_path=" + pgSchema(t, c.storeSpec), t.TempDir()
			},
		},
	}
	for name, bc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newChainHost(t)
			if bc.store == "postgres" {
				if _, err := exec.LookPath("pg_dump"); err != nil {
					t.Fatal("needs pg_dump and pg_restore (Debian's postgresql-client; .ci/run installs it)")
				}
				c.storeSpec = storetest.PostgresURL(t)
			}
			backupUnderLoad(t, c, bc)
		})
	}
}

func backupUnderLoad(t *testing.T, c *chainHost, bc backupCase) {
	h := c.startOn(t, c.storeSpec, c.data)
	url := h.url() + "/stream-divergence/compare"
	load := startPaying(t, url, 3, -1, func(addr string) { c.chain.TokenAccount(t, addr, 1_000_000*sdPrice) })
	eventually(t, "five reports delivered", time.Minute, func() bool { return load.delivered() >= 5 })
	before := map[string]bool{}
	load.mu.Lock()
	for _, o := range load.seen {
		if o.tx != "" {
			before[o.tx] = true
		}
	}
	load.mu.Unlock()
	backup := bc.backup(t, c)
	at := load.delivered()
	eventually(t, "reports delivered after the backup", time.Minute, func() bool { return load.delivered() >= at+3 })
	seen := load.stop()
	paid := map[string]bool{}
	for _, o := range seen {
		if o.tx != "" {
			paid[o.tx] = true
		}
	}

	spec, dir := bc.restore(t, c, backup)
	restored := c.startOn(t, spec, dir)
	if raw, code := get(t, restored.url()+"/readyz"); code != 200 {
		t.Fatalf("the host on the restored store is not ready: %d %s\n%s", code, raw, restored.log())
	}
	st, err := store.OpenExisting(context.Background(), spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lines, err := st.Lines(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	inRestore := map[string]bool{}
	for _, l := range lines {
		if l.TxID == nil || !paid[*l.TxID] && !c.onChain(t, *l.TxID) {
			t.Errorf("restored line %d is no payment taken", l.ID)
			continue
		}
		inRestore[*l.TxID] = true
	}
	for tx := range before {
		if !inRestore[tx] {
			t.Errorf("report %s, delivered before the backup began, has no line in the restored store", tx)
		}
	}
	if len(lines) >= len(paid) {
		t.Errorf("the restored store has %d lines of %d payments: the load after the backup is not missing, the test proves nothing", len(lines), len(paid))
	}

	var out, errs bytes.Buffer
	args := []string{"ledger", "reconcile", "--json", "--data-dir", dir, "--pay-to", address(c.seller), "--solana-rpc", c.chain.URL}
	if spec != "" {
		args = append(args, "--store", spec)
	}
	_ = run(args, &out, &errs) // non-zero: the payments after the backup have no line
	var rec reconcile.Report
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatalf("reconcile --json: %v\n%s%s", err, out.String(), errs.String())
	}
	if len(rec.Lines) != 0 || rec.LinesChecked != len(lines) {
		t.Errorf("reconcile of the restored store: %d lines checked of %d, %d contradicted by the chain", rec.LinesChecked, len(lines), len(rec.Lines))
	}
	for _, u := range rec.Unrecorded {
		if inRestore[u.Transaction] || before[u.Transaction] {
			t.Errorf("reconcile lists %s without a line, which the restore holds or was delivered before the backup", u.Transaction)
		}
	}
	if got, want := len(rec.Unrecorded)+len(lines), rec.TransfersScanned; got != want {
		t.Errorf("reconcile: %d lines and %d transfers without one, of %d transfers to pay_to", len(lines), len(rec.Unrecorded), want)
	}
	t.Logf("%d payments, %d delivered before the backup, %d lines restored, %d taken after its moment", len(paid), len(before), len(lines), len(rec.Unrecorded))

	out.Reset()
	args = []string{"ledger", "report", "--json", "--data-dir", dir}
	if spec != "" {
		args = append(args, "--store", spec)
	}
	if err := run(args, &out, &errs); err != nil {
		t.Fatalf("ledger report on the restored store: %v", err)
	}
	var report struct {
		Services []struct {
			Lines int `json:"ledger_lines"`
		} `json:"services"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, s := range report.Services {
		counted += s.Lines
	}
	if counted != len(lines) {
		t.Errorf("ledger report on the restored store counts %d lines, the store holds %d", counted, len(lines))
	}
}

// pgSchema is the search_path schema of a test store URL.
func pgSchema(t *testing.T, spec string) string {
	u, err := url.Parse(spec)
	if err != nil || u.Query().Get("search_path") == "" {
		t.Fatalf("no search_path in the store URL")
	}
	return u.Query().Get("search_path")
}

// pgTool runs a PostgreSQL client tool, failing the test with its output.
func pgTool(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// freshDatabase creates a database on the test server (dropped when the
// test ends) and returns its URL.
func freshDatabase(t *testing.T) string {
	base := storetest.PostgresBase()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("assay_restore_%d", time.Now().UnixNano())
	if _, err := db.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create a database to restore into: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err == nil {
			_, _ = db.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
			db.Close()
		}
	})
	u, _ := url.Parse(base)
	u.Path = "/" + name
	return u.String()
}

// startOn starts a host of the chain's payments on a store spec ("" for
// the data dir's SQLite) and data dir.
func (c *chainHost) startOn(t *testing.T, spec, dataDir string) *proc {
	args := []string{"--config", c.cfg, "--data-dir", dataDir, "--payments", "local", "--solana-rpc", c.chain.URL,
		"--pay-to", address(c.seller), "--fee-payer-key", filepath.Join(c.dir, "fee-payer.json")}
	if spec != "" {
		args = append(args, "--store", spec)
	}
	h := launch(t, c.bin, nil, args...)
	if !h.up() {
		t.Fatalf("host:\n%s", h.log())
	}
	return h
}

// onChain is whether the chain has the transaction (a payment taken whose
// report its client had not yet received when the load stopped).
func (c *chainHost) onChain(t *testing.T, tx string) bool {
	st, err := c.chain.RPC.SignatureStatus(context.Background(), tx)
	return err == nil && st != nil && st.Succeeded()
}

// Without pg_dump on the PATH, `assay store backup` of a PostgreSQL store
// makes nothing and prints the command instead; that command, run as
// printed, writes an archive of the store's schema (its tables listed by
// pg_restore), though the store URL carries what libpq refuses
// (search_path) and a password, which is never printed.
func TestPostgresBackupCommandRunsAsPrinted(t *testing.T) {
	pgDump, err := exec.LookPath("pg_dump")
	if err != nil {
		t.Fatal("needs pg_dump and pg_restore (Debian's postgresql-client; .ci/run installs it)")
	}
	spec := storetest.PostgresURL(t)
	st, err := store.Open(context.Background(), spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	u, _ := url.Parse(spec)
	u.User = url.UserPassword(u.User.Username(), "hunter2-not-printed") // trust auth: the server ignores it
	out := filepath.Join(t.TempDir(), "backup folder")
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir())
	err = run([]string{"store", "backup", "--store", u.String(), "--data-dir", t.TempDir(), "--out", out}, &bytes.Buffer{}, &bytes.Buffer{})
	t.Setenv("PATH", path)
	if err == nil {
		t.Fatal("a backup without pg_dump on the PATH reported success")
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "PGPASSWORD") {
		t.Errorf("the printed command shows the password, or does not say where it goes: %v", err)
	}
	if _, statErr := os.Stat(out); statErr == nil {
		t.Error("a backup without pg_dump made its folder")
	}
	_, command, ok := strings.Cut(err.Error(), ":\n  ")
	command, _, _ = strings.Cut(command, "\n")
	if !ok || !strings.Contains(command, "pg_dump ") {
		t.Fatalf("no command printed: %v", err)
	}
	sh := exec.Command("sh", "-c", command)
	sh.Env = append(os.Environ(), "PGPASSWORD=hunter2-not-printed")
	if said, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the printed command, run as printed: %v\n%s\n%s", err, command, said)
	}
	list, err := exec.Command(filepath.Join(filepath.Dir(pgDump), "pg_restore"), "--list", filepath.Join(out, pgDumpFile)).CombinedOutput()
	if err != nil {
		t.Fatalf("pg_restore --list: %v\n%s", err, list)
	}
	if !strings.Contains(string(list), "TABLE "+pgSchema(t, spec)+" ledger") {
		t.Errorf("the archive holds no ledger table of the store's schema:\n%s", list)
	}
}

// The compose file's scheduled backup (deploy/backup/backup.sh), run as a
// process with the environment compose gives it: each turn writes a
// folder named for the UTC time holding the schema's pg_dump and the key
// secret, the newest BACKUP_KEEP are kept, a dump that fails leaves
// nothing, and the newest restores (pg_restore into a new database) to a
// store whose every row equals the source's.
func TestScheduledBackupRestores(t *testing.T) {
	if _, err := exec.LookPath("pg_dump"); err != nil {
		t.Fatal("needs pg_dump and pg_restore (Debian's postgresql-client; .ci/run installs it)")
	}
	ctx := context.Background()
	spec := storetest.PostgresURL(t)
	st, err := store.Open(ctx, spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"wallet-a", "wallet-b", "wallet-a"} {
		if _, err := st.AdmitFree(ctx, "precheck", key, time.Date(2026, 12, 8, 1, i*10, 0, 0, time.UTC), 100, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	want, err := st.DumpText(ctx)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	base, _ := url.Parse(storetest.PostgresBase())
	secrets, backups := t.TempDir(), filepath.Join(t.TempDir(), "backups")
	if err := os.WriteFile(filepath.Join(secrets, "pg_password"), []byte("unused-under-trust\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "keys_secret"), []byte("the key secret, 32 bytes or more."), 0o600); err != nil {
		t.Fatal(err)
	}
	turn := func(extra ...string) (string, error) {
		cmd := exec.Command("sh", filepath.Join("..", "..", "..", "deploy", "backup", "backup.sh"))
		cmd.Env = append(os.Environ(), "PGHOST="+base.Hostname(), "PGPORT="+base.Port(), "PGUSER="+base.User.Username(),
			"PGDATABASE="+strings.TrimPrefix(base.Path, "/"), "PGSSLMODE=disable", "BACKUP_DIR="+backups,
			"BACKUP_SCHEMA="+pgSchema(t, spec), "SECRETS_DIR="+secrets, "BACKUP_KEEP=2", "BACKUP_ONCE=1")
		cmd.Env = append(cmd.Env, extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // folder names are whole seconds
		}
		if out, err := turn(); err != nil {
			t.Fatalf("backup.sh: %v\n%s", err, out)
		}
	}
	if out, err := turn("PGPORT=1"); err == nil || !strings.Contains(out, "pg_dump failed") {
		t.Errorf("a turn whose dump fails: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(backups)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range entries {
		kept = append(kept, e.Name())
	}
	if len(kept) != 2 || strings.HasPrefix(kept[0], ".") || strings.HasPrefix(kept[1], ".") {
		t.Fatalf("after three turns and a failed one with BACKUP_KEEP=2, the backups folder holds %v", kept)
	}
	newest := filepath.Join(backups, kept[1])
	if info, err := os.Stat(newest); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("a backup folder's mode: %v %v", info.Mode(), err)
	}
	if raw, err := os.ReadFile(filepath.Join(newest, "keys.secret")); err != nil || !strings.HasPrefix(string(raw), "the key secret") {
		t.Errorf("the key secret beside the dump: %v", err)
	}

	db := freshDatabase(t)
	pgTool(t, "pg_restore", "--no-owner", "--dbname="+db, filepath.Join(newest, "assay.pgdump"))
	restored, err := store.OpenExisting(ctx, db+"&search_path="+pgSchema(t, spec), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	got, err := restored.DumpText(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// the same rows, whatever order the catalog lists the tables in
	sorted := func(s string) string {
		lines := strings.Split(s, "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	if sorted(got) != sorted(want) || !strings.Contains(got, "wallet-b") {
		t.Errorf("the restored store differs from the source:\n%s\nwant\n%s", got, want)
	}
}
