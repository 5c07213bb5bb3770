package pluginhost_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

func startTestAdapter(t testing.TB, backoff time.Duration) *pluginhost.Adapter {
	t.Helper()
	path := testhost.Binary(t, "host/internal/testadapter", "assay-testadapter")
	sum, _ := pluginhost.PinOf(path)
	a, err := pluginhost.StartAdapter(context.Background(), pluginhost.Spec{Name: "testadapter", Path: path, SHA256: sum},
		pluginhost.Options{MinBackoff: backoff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// BenchmarkAdapterCall is one small record's adapter call as a request
// makes it (under a deadline: the call's own, a margin shorter, is
// derived each time), answer checked and counted in the adapter's
// window.
func BenchmarkAdapterCall(b *testing.B) {
	a := startTestAdapter(b, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for b.Loop() {
		if _, err := a.AdaptFrame(ctx, &pb.AdaptRequest{FormatId: "test-format", Record: []byte("hello")}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdapterRestart is what a crash costs a format: from the
// crashing call's answer to the restarted adapter's first good one, with
// the restart delay of a process that had served (MinBackoff, 100 ms by
// default). Requests meanwhile are answered at once as restarting.
func BenchmarkAdapterRestart(b *testing.B) {
	a := startTestAdapter(b, 100*time.Millisecond)
	ctx := context.Background()
	good := func() error {
		_, err := a.AdaptFrame(ctx, &pb.AdaptRequest{FormatId: "test-format", Record: []byte("hello")})
		return err
	}
	if err := good(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := a.AdaptFrame(ctx, &pb.AdaptRequest{FormatId: "test-format", Record: []byte("crash")}); !errors.Is(err, pluginhost.ErrAdapterFault) {
			b.Fatalf("the crash: %v", err)
		}
		for good() != nil {
			time.Sleep(time.Millisecond)
		}
	}
}
