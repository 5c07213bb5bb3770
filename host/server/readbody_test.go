package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"runtime"
	"testing"
	"testing/iotest"
)

// A body is read whole when it comes in pieces; one that ends short of its
// declared length is an error; and what the host allocates follows the
// bytes that arrived, not the length the client declared.
func TestReadBodyFollowsTheBytes(t *testing.T) {
	const limit = 5 << 20
	want := bytes.Repeat([]byte("0123456789"), 300000) // 3 MB
	r := &http.Request{ContentLength: int64(len(want)), Body: io.NopCloser(iotest.HalfReader(bytes.NewReader(want)))}
	got, err := readBody(r, limit)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r = &http.Request{ContentLength: limit, Body: io.NopCloser(bytes.NewReader([]byte("x")))}
	_, err = readBody(r, limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a body short of its length: %v", err)
	}
	// well under the 5 MiB declared (other goroutines of the process count too)
	if n := after.TotalAlloc - before.TotalAlloc; n > 3<<20 {
		t.Errorf("a 1-byte body declared as 5 MiB allocated %d bytes", n)
	}
}
