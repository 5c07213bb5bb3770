package lettaaf

import (
	"context"
	"testing"

	"github.com/assay-audit/assay/plugins/context-audit/compositiontest"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// BenchmarkAdapt adapts the max-size record (5 MiB, 10,000 blocks) and the
// realistic record (5 MiB of prose, code, tool payloads and blobs) in this
// format, as the adapter plugin does on each request (asked as the SDK's
// families ask, with json_string_spans).
func BenchmarkAdapt(b *testing.B) {
	for _, c := range []struct {
		name string
		rec  []byte
	}{
		{"max", compositiontest.MaxRecordMember(b, FormatID)},
		{"realistic", compositiontest.RealisticRecordMember(b, FormatID)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.rec)))
			b.ReportAllocs()
			for b.Loop() {
				if r := (Adapter{}).Adapt(context.Background(), &pb.AdaptRequest{FormatId: FormatID, Record: c.rec, JsonStringSpans: true}); r.GetRecord() == nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
