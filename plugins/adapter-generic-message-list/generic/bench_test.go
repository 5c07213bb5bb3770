package generic

import (
	"context"
	"strings"
	"testing"

	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// BenchmarkAdapt adapts the max-size and the realistic record of this
// format (compositiontest.BenchmarkAdapter).
func BenchmarkAdapt(b *testing.B) { compositiontest.BenchmarkAdapter(b, Adapter{}) }

// BenchmarkAdaptUnusedMembers: a 5 MiB record whose messages carry an
// unread member, an array of empty objects (1.7 million in all).
func BenchmarkAdaptUnusedMembers(b *testing.B) {
	msg := `{"role":"user","text":"hi","x":[{}` + strings.Repeat(",{}", 17_000) + `]}`
	rec := []byte(`{"messages":[` + msg + strings.Repeat(","+msg, 99) + `]}`)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if r := (Adapter{}).Adapt(context.Background(), &pb.AdaptRequest{FormatId: "generic-message-list", Record: rec}); r.GetRecord() == nil {
			b.Fatal("refused")
		}
	}
}

// BenchmarkAdaptEscapedNames: one message of 500,000 members whose names
// are escapes (each compared with every name the adapter reads).
func BenchmarkAdaptEscapedNames(b *testing.B) {
	rec := []byte(`{"messages":[{"text":"x"` + strings.Repeat(`,"\u0061":0`, 500_000) + `}]}`)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if r := (Adapter{}).Adapt(context.Background(), &pb.AdaptRequest{FormatId: "generic-message-list", Record: rec}); r.GetRecord() == nil {
			b.Fatal("refused")
		}
	}
}
