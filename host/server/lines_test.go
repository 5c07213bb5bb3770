package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
)

// A paid answer never leaves before its ledger line (#41): the test
// holds SQLite's write lock from a connection of its own, so no line can
// commit, and the answer does not come while it is held; once the lock
// goes, the answer comes and its line is in the store. (With the line
// behind the answer, as before, the answer came at once and the line was
// missing while the lock was held.)
func TestAPaidAnswerWaitsForItsLine(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, testPkg)
	unlock := h.HoldWriteLock(t)
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Post(h.URL+"/test-family/measure", "application/json", strings.NewReader(`{"pad":"x"}`))
		if err != nil {
			done <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- result{status: resp.StatusCode}
	}()
	select {
	case r := <-done:
		t.Fatalf("the answer came (%d, %v) while its line could not commit", r.status, r.err)
	case <-time.After(500 * time.Millisecond):
	}
	if n := h.LedgerRows(t); n != 0 {
		t.Fatalf("%d lines while the store was locked", n)
	}
	unlock()
	select {
	case r := <-done:
		if r.err != nil || r.status != http.StatusOK {
			t.Fatalf("once the line could commit: %d %v", r.status, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer once the line could commit")
	}
	if n := h.LedgerRows(t); n != 1 {
		t.Fatalf("%d lines, want the answer's", n)
	}
}
