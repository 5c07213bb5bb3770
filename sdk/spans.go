package sdk

import (
	"unicode/utf8"
	"unsafe"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ResolveTextSpans replaces every block's text_span with the text it names
// in record. A span yields nothing an adapter could not have sent inline
// (the adapter is pinned and trusted with the record), so only what keeps
// the record well-formed is checked: the span lies inside the record and
// its bytes are valid UTF-8.
//
// The texts share record's memory (a 5 MiB record's texts are not copied
// again), so record must not change afterwards: the SDK resolves spans
// only against bodies it owns and never writes.
func ResolveTextSpans(rec *pb.SessionRecord, record []byte) error {
	for _, m := range rec.GetMessages() {
		for _, b := range m.GetBlocks() {
			span := b.GetTextSpan()
			if span == nil {
				continue
			}
			t, err := SpanOf(record, span)
			if err != nil {
				return err
			}
			if !utf8.Valid(t) {
				return ErrSpan
			}
			b.TextSpan = nil
			b.Content = &pb.Block_Text{Text: unsafe.String(unsafe.SliceData(t), len(t))}
		}
	}
	return nil
}
