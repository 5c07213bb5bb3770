package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/internal/testhost"
)

// A stopping host waits for the ledger lines still committing behind
// answers it already sent (they commit behind the handler, so the HTTP
// server's shutdown does not wait for them), and only then goes on to
// close its store. The test holds SQLite's write lock, so the answered
// request's line cannot commit: stopServing must not return while it is
// held, and once it is let go the line is there.
func TestAStoppingHostWaitsForTheLinesBehindItsAnswers(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, "host/internal/testfamily")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.Server, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	unlock := h.HoldWriteLock(t)
	resp, err := http.Post("http://"+ln.Addr().String()+"/test-family/measure", "application/json", strings.NewReader(`{"pad":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- stopServing(srv, h.Server, 5*time.Second, hclog.NewNullLogger()) }()
	select {
	case err := <-stopped:
		t.Fatalf("the host stopped with its line still waiting to commit (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the host did not stop once its line could commit")
	}
	if n := h.LedgerRows(t); n != 1 {
		t.Fatalf("%d lines, want the answer's", n)
	}
}
