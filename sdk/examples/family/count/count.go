// Package count is an example criteria family, written the way a third
// party would write one: a plain Go value that checks a request and counts
// the messages, blocks and text bytes of a record read through a format
// adapter. No gRPC and no I/O: main serves it, tests call it in process.
package count

import (
	"context"
	_ "embed"
	"encoding/json"
	"slices"
	"time"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// The criteria document it serves, and the corpus a host runs before it
// serves the family (the document's corpus.sha256 is the corpus's pin).
var (
	//go:embed criteria.json
	criteria []byte
	//go:embed corpus.json
	corpus []byte
)

// Family is the example-count family.
type Family struct{ desc *pb.FamilyDescription }

// New describes the family from its embedded criteria (ids, op, price,
// caps, pin and accepted_formats come from the document).
func New() (*Family, error) {
	d, err := sdk.Describe(criteria, sdk.WithCorpus(corpus),
		sdk.WithLedgerFields(sdk.LedgerString("format", "example-lines")))
	if err != nil {
		return nil, err
	}
	return &Family{desc: d}, nil
}

// Describe says what the family serves.
func (f *Family) Describe() *pb.FamilyDescription { return f.desc }

// CodeBodyNotObject is the criteria's own refusal code. R-2 refuses
// with the code the SDK names, sdk.FormatNotAccepted, and R-3 with the
// adapter's own code: adapters and families share the one type.
const CodeBodyNotObject sdk.RefusalCode = "body_not_object"

func refuse(code sdk.RefusalCode, message string) sdk.Checked {
	return sdk.RefuseRequest(sdk.Refusal{Code: code, Message: message})
}

// Check validates the request and, on the op, measures it
// after payment. Messages are static: never a byte of the record.
func (f *Family) Check(ctx context.Context, req sdk.Request) sdk.Checked {
	var body struct {
		Format *string         `json:"declared_format_id"`
		Record json.RawMessage `json:"record"`
	}
	if json.Unmarshal(req.Body, &body) != nil || body.Format == nil || len(body.Record) == 0 {
		return refuse(CodeBodyNotObject, "request body is not a JSON object with declared_format_id and record")
	}
	if !slices.Contains(f.desc.GetFormats(), *body.Format) {
		return refuse(sdk.FormatNotAccepted, "declared_format_id is not one of the criteria's accepted_formats")
	}
	if req.Adapters == nil {
		return sdk.AdaptersUnavailable()
	}
	resp, err := req.Adapters.Adapt(ctx, &pb.AdaptRequest{FormatId: *body.Format, Record: body.Record})
	if err != nil {
		return sdk.AdaptersUnavailable() // the host names the adapter's fault
	}
	if r := resp.GetRefusal(); r != nil {
		return refuse(sdk.RefusalCode(r.GetCode()), r.GetMessage())
	}
	rec := resp.GetRecord()
	if req.Route == sdk.Precheck {
		return sdk.Assessed(map[string]any{"assessable": true})
	}
	format := *body.Format
	return sdk.Accept(func(_ context.Context, _ func() time.Time) (sdk.Report, error) {
		blocks, text := 0, 0
		for _, m := range rec.GetMessages() {
			blocks += len(m.GetBlocks())
			for _, b := range m.GetBlocks() {
				text += len(b.GetText())
			}
		}
		return sdk.Report{
			Body:   map[string]any{"message_count": len(rec.GetMessages()), "block_count": blocks, "text_bytes": text},
			Ledger: map[string]any{"format": format},
		}, nil
	})
}
