package server_test

import (
	"io"
	"net/http"
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
	unlock := h.HoldWriteLock(t)
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
	if n := h.LedgerRows(t); n != 0 {
		t.Fatalf("%d lines while the store was locked", n)
	}
	unlock()
	h.Server.Drain()
	if n := h.LedgerRows(t); n != 2 {
		t.Fatalf("after Drain: %d lines, want both answers' lines\n%s", n, h.Log.String())
	}
}
