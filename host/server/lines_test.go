package server_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
)

// A keep-alive client's next request is read and answered while the line
// of its previous answer is still waiting to commit: the handler returns
// once the answer is out, and the line follows it (lineQueue). The test
// holds SQLite's write lock from a connection of its own, so no line can
// commit; two paid answers on one connection come back all the same (with
// the line before the handler's return, the second waits for a lock the
// test lets go only after it), and once the lock is let go Drain leaves
// both lines in the store.
func TestTheNextRequestDoesNotWaitForTheLastLine(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, testPkg)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.DataDir, "assay.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Error(err)
			}
		}
	}
	defer unlock()

	client := &http.Client{Timeout: 8 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	for i := range 2 {
		resp, err := client.Post(h.URL+"/test-family/measure", "application/json", strings.NewReader(`{"pad":"x"}`))
		if err != nil {
			t.Fatalf("request %d on the same connection, the line before it still uncommitted: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM ledger").Scan(&n); err != nil || n != 0 {
		t.Fatalf("lines while the store was locked: %d %v", n, err)
	}
	unlock()
	h.Server.Drain()
	lines, err := h.Store.Lines(ctx)
	if err != nil || len(lines) != 2 {
		t.Fatalf("after Drain: %d lines (%v), want both answers' lines\n%s", len(lines), err, h.Log.String())
	}
}
