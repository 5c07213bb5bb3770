package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
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
				dump := filepath.Join(t.TempDir(), "assay.dump")
				pgTool(t, "pg_dump", "--format=custom", "--schema="+pgSchema(t, c.storeSpec), "--file="+dump, storetest.PostgresBase())
				return dump
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
					t.Skip("no pg_dump on this machine (Debian's postgresql-client)")
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
