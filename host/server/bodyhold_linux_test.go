//go:build linux

package server_test

import (
	"bytes"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/assay-audit/assay/host/internal/testhost"
)

// When the host cannot hold a body (its shared file refuses the bytes;
// here a file-size limit on the host process stands for memory running
// out), the caller gets a signed 500 saying nothing was charged, the log
// says why without a byte of the body, and nothing is left open.
func TestBodyTheHostCannotHold(t *testing.T) {
	h := testhost.Start(t, testhost.Options{NoFreeTier: true}, testPkg)
	marker := "canary-body-7f3a"
	body := []byte(`{"pad":"` + marker + strings.Repeat("x", 2<<20) + `"}`)
	// the limit makes a write past 1 MiB fail with EFBIG; the signal that
	// would come with it is ignored for the while
	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1 << 20, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	r := post(t, h.URL+"/test-family/measure", body)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if r.status != 500 || errorCode(r) != "internal_error" || !strings.Contains(string(r.raw), "nothing was charged") {
		t.Fatalf("a body the host cannot hold: %d %.300s", r.status, r.raw)
	}
	verified(t, h, r)
	if n := testhost.SharedBodiesSettled("self"); n != 0 {
		t.Errorf("the host holds %d shared bodies after answering", n)
	}
	if log := h.Log.String(); !strings.Contains(log, "request body could not be held") || strings.Contains(log, marker) {
		t.Errorf("the log does not say why, or quotes the body:\n%s", log)
	}
	if r := post(t, h.URL+"/test-family/measure", bytes.Replace(body, []byte(marker), []byte("x"), 1)); r.status != 200 {
		t.Errorf("the next request: %d %.200s", r.status, r.raw)
	}
}
