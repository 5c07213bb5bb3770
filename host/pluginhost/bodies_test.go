package pluginhost

import (
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// A body is held from Start to Close and no longer, each request under its
// own token; a span outside the body, or of a released body, is refused.
func TestBodiesAreHeldForTheRequestOnly(t *testing.T) {
	b := &bodies{held: map[uint64][]byte{}}
	t1 := b.hold([]byte(`{"record":[1,2]}`))
	t2 := b.hold([]byte(`{"record":"x"}`))
	if t1 == t2 {
		t.Fatal("two requests share a token")
	}
	if rec, ok := b.span(t1, &pb.Span{Offset: 10, Length: 5}); !ok || string(rec) != "[1,2]" {
		t.Errorf("span %q %v", rec, ok)
	}
	if _, ok := b.span(t2, &pb.Span{Offset: 10, Length: 50}); ok {
		t.Error("a span past the body resolved")
	}
	b.release(t1)
	if _, ok := b.span(t1, &pb.Span{Offset: 0, Length: 1}); ok {
		t.Error("a released body is still readable")
	}
	b.release(t2)
	if len(b.held) != 0 {
		t.Errorf("%d bodies still held", len(b.held))
	}
}
