// Command testadapter is a format adapter for the host's tests: format
// "test-format" turns a record into one message whose single block's text
// is the record itself; the record "refuse" is a parse refusal, and the
// record "crash" kills the process, and the record "stall" answers only
// 200 ms after the call's deadline has passed. A record that starts "memory_limit"
// has the process's soft memory limit during the call as its role. A
// record that is one JSON string goes back as a text span of it (an
// escaped one only when the request allows json_string spans), its role
// saying whether the request did. Records that answer wrongly, for the
// host's boundary checks: "panic" panics, "level9" answers level L9,
// "empty" answers nothing, "span-out" a text span past the record's end,
// "negative" a disclosure with a negative count. ASSAY_TESTADAPTER_FAMILY
// in its environment names another family in its description.
package main

import (
	"bytes"
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

type adapter struct{}

func (adapter) Describe() *pb.AdapterDescription {
	family := "test-family/v1"
	if f := os.Getenv("ASSAY_TESTADAPTER_FAMILY"); f != "" {
		family = f
	}
	return &pb.AdapterDescription{Family: family, FormatId: "test-format", FormatVersions: []string{"1"}, AdapterVersion: "0.0.1",
		RecordSchema: []byte(`{"description": "test-format: any JSON value (the test adapter reads the record's bytes as they are)"}`)}
}

func (adapter) Adapt(ctx context.Context, req *pb.AdaptRequest) *pb.AdaptResponse {
	switch string(req.GetRecord()) {
	case "stall":
		<-ctx.Done()
		// the call's deadline reaches this process a hop after the host's
		// and may round a little short of it: answer well after, so the
		// host's own deadline is always what ends the call there (an
		// answer that beat it would pass as a success and leave the
		// host's "adapter call failed" line unwritten)
		time.Sleep(200 * time.Millisecond)
	case "refuse":
		return sdk.Refuse(sdk.RecordDoesNotParse, "the record does not parse as the declared format")
	case "crash":
		os.Exit(4)
	case "panic":
		panic("an adapter bug")
	case "empty":
		return &pb.AdaptResponse{}
	case "level9", "span-out", "negative":
		blk := sdk.TextBlock(sdk.KindText, "x")
		level := sdk.L0
		switch string(req.GetRecord()) {
		case "level9":
			level = "L9" // a level the protocol does not have: the type takes it
		case "span-out":
			blk = sdk.SpanBlock(sdk.KindText, &pb.Span{Offset: 2, Length: 100})
		}
		rec := sdk.Record(level, sdk.Message("user", blk))
		if string(req.GetRecord()) == "negative" {
			rec.Disclosures = []*pb.Disclosure{{Code: "left_out", Message: "messages left out", Count: -1}}
		}
		return sdk.Adapted(rec)
	}
	role := "user"
	if bytes.HasPrefix(req.GetRecord(), []byte("memory_limit")) {
		role = strconv.FormatInt(debug.SetMemoryLimit(-1), 10) // -1 reads it
	}
	var block *pb.Block
	if doc, err := sdk.Locate(req.GetRecord()); err == nil && doc.Root().Kind == '"' {
		role = "json_string_spans=" + strconv.FormatBool(req.GetJsonStringSpans())
		block, _ = sdk.StringBlock(sdk.KindText, doc.Root(), req.GetJsonStringSpans())
	} else {
		block = sdk.TextBlock(sdk.KindText, string(req.GetRecord()))
	}
	return sdk.Adapted(sdk.Record(sdk.L0, sdk.Message(role, block)))
}

func main() { sdk.ServeAdapter(adapter{}) }
