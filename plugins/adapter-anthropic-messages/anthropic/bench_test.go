package anthropic

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

// BenchmarkAdaptManyEmptyBlocks: a 5 MiB record of 1.7 million empty
// block objects, far past the family's 10,000-entry cap (which the family
// checks on the adapted record: the pre-check reports the whole record's
// totals, so every block is adapted).
func BenchmarkAdaptManyEmptyBlocks(b *testing.B) {
	rec := []byte(`[{"role":"user","content":[{}` + strings.Repeat(",{}", 1_740_000) + `]}]`)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if r := (Adapter{}).Adapt(context.Background(), &pb.AdaptRequest{FormatId: "anthropic-messages", Record: rec}); r.GetRecord() == nil {
			b.Fatal("refused")
		}
	}
}
