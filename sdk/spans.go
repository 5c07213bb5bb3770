package sdk

import (
	"errors"
	"unicode/utf8"
	"unsafe"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/wire"
)

// ResolveTextSpans replaces every block's text_span with the text it names
// in record. A span yields nothing an adapter could not have sent inline
// (the adapter is pinned and trusted with the record), so only what keeps
// the record well-formed is checked: the span lies inside the record and
// its bytes are valid UTF-8, or, for a json_string span, they are the
// whole contents of a valid JSON string of the record (its quotes just
// outside the span), decoded here as encoding/json decodes them.
//
// Decoding costs work and memory that a plain span does not, so the
// json_string spans of one answer may cover at most the record's length
// in all (an adapter's own strings are each decoded once; a span repeated
// past that, or nested in another through escaped quotes, is refused, not
// decoded again and again).
//
// Plain texts share record's memory (a 5 MiB record's texts are not copied
// again), so record must not change afterwards: the SDK resolves spans
// only against bodies it owns and never writes. Decoded texts share one
// buffer, allocated once for the whole record.
func ResolveTextSpans(rec *pb.SessionRecord, record []byte) error {
	// the decoded texts' room: their bytes, which only bytes that are not
	// UTF-8 outgrow (each becomes U+FFFD); a buffer that has to grow
	// leaves the texts already made in the old one, which stays as it is
	var escaped uint64
	for _, m := range rec.GetMessages() {
		for _, b := range m.GetBlocks() {
			if span := b.GetTextSpan(); span.GetJsonString() {
				if escaped += span.GetLength(); escaped > uint64(len(record)) {
					return ErrSpanCover
				}
			}
		}
	}
	var decoded []byte
	if escaped > 0 {
		decoded = make([]byte, 0, int(escaped))
	}
	for _, m := range rec.GetMessages() {
		for _, b := range m.GetBlocks() {
			span := b.GetTextSpan()
			if span == nil {
				continue
			}
			t, err := wire.SpanOf(record, span)
			if err != nil {
				return err
			}
			if span.GetJsonString() {
				if t, err = jsonStringText(record, span, t, &decoded); err != nil {
					return err
				}
			} else if !utf8.Valid(t) {
				return wire.ErrSpan
			}
			b.TextSpan = nil
			b.Content = &pb.Block_Text{Text: unsafe.String(unsafe.SliceData(t), len(t))}
		}
	}
	return nil
}

// ErrSpanCover is an answer whose json_string spans cover more than the
// record.
var ErrSpanCover = errors.New("json_string spans cover more than the record")

// jsonStringText decodes inner, the span's bytes of record, when they are
// the contents of one valid JSON string there, into the room left in
// *decoded (each text capped at its own end, so a later append never
// writes into it). Contents with no escape and valid UTF-8 are their
// own text, and are not copied.
func jsonStringText(record []byte, span *pb.Span, inner []byte, decoded *[]byte) ([]byte, error) {
	off := int(span.GetOffset())
	if off == 0 || off+len(inner) >= len(record) || record[off-1] != '"' {
		return nil, wire.ErrSpan
	}
	if end, ok := validString(record, off-1); !ok || end != off+len(inner)+1 {
		return nil, wire.ErrSpan
	}
	if plainContents(inner) {
		return inner, nil
	}
	from := len(*decoded)
	*decoded = appendText(*decoded, inner)
	return (*decoded)[from:len(*decoded):len(*decoded)], nil
}
