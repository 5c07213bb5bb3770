// Package lines is an example format adapter's engine, written the way a
// third party would write one: a plain Go value, tested in process with
// sdk/adaptertest; the command beside it serves it.
//
// Its format, "example-lines", is a JSON array of strings: each string is
// one user message with one text block. It exists to show the shape, not to
// serve a real criteria family.
package lines

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Adapter adapts the example-lines format.
type Adapter struct{}

// recordSchema is the record's shape as a JSON Schema (draft 2020-12),
// kept beside the code in record.schema.json: the host publishes it to
// callers (its OpenAPI document, its MCP tools' inputSchema). It may be
// looser than Adapt, never stricter: a client that validates its
// arguments would turn away a record Adapt takes. Its references stay
// inside it ("#" or "#/$defs/...").
//
//go:embed record.schema.json
var recordSchema []byte

// Describe names the family and format this adapter serves, and the
// record's shape.
func (Adapter) Describe() *pb.AdapterDescription {
	return &pb.AdapterDescription{Family: "example-count/v1", FormatId: "example-lines", FormatVersions: []string{"1"}, AdapterVersion: "1.0.0",
		RecordSchema: recordSchema}
}

// Adapt turns a record into a SessionRecord, or refuses it. The refusal's
// message is static: it never quotes the record.
func (Adapter) Adapt(_ context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	var lines []*string
	if err := json.Unmarshal(req.GetRecord(), &lines); err != nil || lines == nil {
		return sdk.Refuse(sdk.RecordDoesNotParse, "the record is not a JSON array of strings")
	}
	rec := sdk.Record(sdk.L0)
	for _, l := range lines {
		var b *pb.Block
		if l == nil { // null: a line the format holds, but no text
			b = sdk.NonSerialisableBlock(sdk.KindText)
		} else {
			b = sdk.TextBlock(sdk.KindText, *l)
		}
		rec.Messages = append(rec.Messages, sdk.Message("user", b))
	}
	return sdk.Adapted(rec)
}
