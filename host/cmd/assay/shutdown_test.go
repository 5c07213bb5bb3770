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

// A stopping host lets a paid request whose line is committing finish:
// the line commits before the answer (#41), inside the handler, so the
// HTTP server's shutdown waits for both, and the store closes only after.
// The test holds SQLite's write lock, so the request's line cannot
// commit: drain must not return while it is held; once it is let go the
// request is answered and its line is there.
func TestAStoppingHostWaitsForTheLineOfARequestInHand(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, "host/internal/testfamily")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.Server, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	unlock := h.HoldWriteLock(t)
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/test-family/measure", "application/json", strings.NewReader(`{"pad":"x"}`))
		if err != nil {
			answered <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	time.Sleep(300 * time.Millisecond) // the request is in hand, its line waiting on the lock
	stopped := make(chan error, 1)
	go func() { stopped <- drain(srv, 5*time.Second, hclog.NewNullLogger()) }()
	select {
	case err := <-stopped:
		t.Fatalf("the host stopped with a request's line still waiting to commit (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the host did not stop once the line could commit")
	}
	if status := <-answered; status != http.StatusOK {
		t.Fatalf("the request in hand: status %d", status)
	}
	if n := h.LedgerRows(t); n != 1 {
		t.Fatalf("%d lines, want the answer's", n)
	}
}
