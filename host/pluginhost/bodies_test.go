package pluginhost

import (
	"errors"
	"runtime"
	"testing"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
)

// A body is held from Start to Close and no longer, each request under its
// own token; a span outside the body, or of a released body, is refused.
// A shared body resolves to a range of its file, bounded the same way.
func TestBodiesAreHeldForTheRequestOnly(t *testing.T) {
	b := &bodies{held: map[uint64]held{}}
	t1 := b.hold(held{bytes: []byte(`{"record":[1,2]}`)})
	t2 := b.hold(held{bytes: []byte(`{"record":"x"}`)})
	if t1 == t2 {
		t.Fatal("two requests share a token")
	}
	if rec, shared, ok := b.span(t1, &pb.Span{Offset: 10, Length: 5}); !ok || shared != nil || string(rec) != "[1,2]" {
		t.Errorf("span %q %v", rec, ok)
	}
	if _, _, ok := b.span(t2, &pb.Span{Offset: 10, Length: 50}); ok {
		t.Error("a span past the body resolved")
	}
	b.release(t1)
	if _, _, ok := b.span(t1, &pb.Span{Offset: 0, Length: 1}); ok {
		t.Error("a released body is still readable")
	}
	b.release(t2)
	if len(b.held) != 0 {
		t.Errorf("%d bodies still held", len(b.held))
	}
	body, err := sharedbody.New([]byte(`{"record":[1,2]}`))
	if runtime.GOOS != "linux" {
		if !errors.Is(err, sharedbody.ErrUnsupported) {
			t.Errorf("no memfd here, yet New said %v", err)
		}
		return // every body is held as bytes, as above
	}
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	t3 := b.hold(held{shared: body})
	rec, shared, ok := b.span(t3, &pb.Span{Offset: 10, Length: 5})
	if !ok || rec != nil || shared == nil || shared.offset != 10 || shared.len != 5 || shared.body != body {
		t.Errorf("shared span %v %+v", ok, shared)
	}
	for _, s := range []*pb.Span{{Offset: 10, Length: 7}, {Offset: 17, Length: 0}, {Offset: 1, Length: ^uint64(0)}} {
		if _, _, ok := b.span(t3, s); ok {
			t.Errorf("shared span %v past the body resolved", s)
		}
	}
}
