package wire

import (
	"errors"

	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// ErrSpan is a record span outside its body: the request is malformed,
// and reading past the body would hand an adapter another request's bytes.
var ErrSpan = errors.New("record span outside the body")

// SpanOf is the part of body a span names (no copy): how the host, and a
// family's SDK for a host that keeps no bodies, find the record a family
// names by its span (AdaptRequest.record_span) instead of sending it back.
func SpanOf(body []byte, span *pb.Span) ([]byte, error) {
	off, n := span.GetOffset(), span.GetLength()
	if off > uint64(len(body)) || n > uint64(len(body))-off {
		return nil, ErrSpan
	}
	return body[off : off+n], nil
}
