// Package compositiontest builds context-composition/v1 submissions for
// tests and benchmarks, in the engine's package and the host's alike.
package compositiontest

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/assay-audit/assay/corpus/realistic"
	"github.com/assay-audit/assay/sdk"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// Formats are the formats MaxRecordOf builds.
var Formats = []string{"anthropic-messages", "generic-message-list", "letta-af"}

// MaxRecord is MaxRecordOf("anthropic-messages").
func MaxRecord(tb testing.TB) []byte { return MaxRecordOf(tb, "anthropic-messages") }

// MaxRecordMember is the record member of MaxRecordOf(format): the bytes
// an adapter is handed.
func MaxRecordMember(tb testing.TB, format string) []byte {
	body := MaxRecordOf(tb, format)
	var env struct{ Record json.RawMessage }
	if err := json.Unmarshal(body, &env); err != nil || len(env.Record) == 0 {
		tb.Fatalf("max record: no record member (%v)", err)
	}
	return env.Record
}

// RealisticRecordMember is the record member of the 5 MiB realistic
// record of format (corpus/realistic, seed 1): what an adapter is handed
// for the realistic benchmarks.
func RealisticRecordMember(tb testing.TB, format string) []byte {
	body, err := realistic.Record(format, realistic.BodyCap, 1)
	if err != nil {
		tb.Fatal(err)
	}
	var env struct{ Record json.RawMessage }
	if err := json.Unmarshal(body, &env); err != nil || len(env.Record) == 0 {
		tb.Fatalf("realistic record: no record member (%v)", err)
	}
	return env.Record
}

// MaxRecordOf is a max-size audit in one format: 10,000 blocks (one per
// message) of varied prose, tool calls with JSON arguments and tool
// results, one block in 25 a near copy of an earlier one, filled to just
// under the 5 MiB body cap.
func MaxRecordOf(tb testing.TB, format string) []byte {
	r := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields("the of and to in is that for it as with was on be by this are from at or have an they which one you had were her all she there would their we him been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three")
	sentence := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	// the formats' own framing differs in size: texts are sized so every
	// body lands just under the cap
	base := map[string]int{"anthropic-messages": 425, "generic-message-list": 415, "letta-af": 360}[format]
	msgs := make([]any, 0, 10000)
	var ids []string
	var texts []string
	for i := 0; i < 10000; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		text := sentence(base + r.IntN(160))
		if i >= 100 && i%25 == 0 {
			near := texts[r.IntN(len(texts))]
			text = near[:len(near)-20] + sentence(20) // a near copy
		}
		texts = append(texts, text)
		id := "m" + strconv.Itoa(i)
		ids = append(ids, id)
		args, _ := json.Marshal(map[string]any{"query": text[:200], "limit": i})
		switch format {
		case "anthropic-messages":
			switch i % 10 {
			case 3:
				msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t" + strconv.Itoa(i), "name": "search", "input": map[string]any{"query": text[:200], "limit": i}}}})
			case 4:
				msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t" + strconv.Itoa(i-1), "content": text}}})
			default:
				msgs = append(msgs, map[string]any{"role": role, "content": text})
			}
		case "generic-message-list":
			switch i % 10 {
			case 3:
				msgs = append(msgs, map[string]any{"role": "assistant", "kind": "tool_call", "name": "search", "has_args": true, "text": string(args)})
			case 4:
				msgs = append(msgs, map[string]any{"role": "tool", "kind": "tool_result", "name": "search", "text": text})
			default:
				msgs = append(msgs, map[string]any{"role": role, "text": text})
			}
		case "letta-af":
			switch i % 10 {
			case 3:
				msgs = append(msgs, map[string]any{"id": id, "role": "assistant", "content": []any{},
					"tool_calls": []any{map[string]any{"id": "c" + strconv.Itoa(i), "type": "function", "function": map[string]any{"name": "search", "arguments": string(args)}}}})
			case 4:
				msgs = append(msgs, map[string]any{"id": id, "role": "tool", "tool_call_id": "c" + strconv.Itoa(i-1), "content": []any{map[string]any{"type": "text", "text": text}}})
			default:
				msgs = append(msgs, map[string]any{"id": id, "role": role, "content": []any{map[string]any{"type": "text", "text": text}}})
			}
		}
	}
	var record any = map[string]any{"messages": msgs}
	if format == "letta-af" {
		record = map[string]any{"agents": []any{map[string]any{"name": "bench", "messages": msgs, "in_context_message_ids": ids}}}
	}
	body, err := json.Marshal(map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": format,
		"record": record, "harness_stated_counts": map[string]any{"total": 1200000}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(body) > 5<<20 || len(body) < 5<<20-200<<10 {
		tb.Fatalf("%s record is %d bytes, want just under 5 MiB", format, len(body))
	}
	return body
}

// BenchmarkAdapter adapts the max-size record (5 MiB, 10,000 blocks) and
// the realistic record (5 MiB of prose, code, tool payloads and blobs) of
// a's format, as the adapter plugin does on each request: asked as the
// SDK's families ask, with json_string_spans.
func BenchmarkAdapter(b *testing.B, a sdk.Adapter) {
	format := a.Describe().GetFormatId()
	for _, c := range []struct {
		name string
		rec  []byte
	}{
		{"max", MaxRecordMember(b, format)},
		{"realistic", RealisticRecordMember(b, format)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.rec)))
			b.ReportAllocs()
			for b.Loop() {
				if r := a.Adapt(context.Background(), &pb.AdaptRequest{FormatId: format, Record: c.rec, JsonStringSpans: true}); r.GetRecord() == nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
