// Package compositiontest builds context-composition/v1 submissions for
// tests and benchmarks, in the engine's package and the host's alike.
package compositiontest

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// MaxRecord is a max-size audit: 10,000 anthropic-messages blocks
// (one per message) of varied prose, JSON tool inputs and results, with
// one block in 25 a near copy of an earlier one, filled to just under the
// 5 MiB body cap.
func MaxRecord(tb testing.TB) []byte {
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
	msgs := make([]any, 0, 10000)
	var texts []string
	for i := 0; i < 10000; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		var text string
		switch {
		case i >= 100 && i%25 == 0:
			base := texts[r.IntN(len(texts))]
			text = base[:len(base)-20] + sentence(20) // near copy
		default:
			text = sentence(425 + r.IntN(160))
		}
		texts = append(texts, text)
		switch {
		case i%10 == 3:
			msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t" + strconv.Itoa(i), "name": "search", "input": map[string]any{"query": text[:200], "limit": i}}}})
		case i%10 == 4:
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t" + strconv.Itoa(i-1), "content": text}}})
		default:
			msgs = append(msgs, map[string]any{"role": role, "content": text})
		}
	}
	body, err := json.Marshal(map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": "anthropic-messages",
		"record": map[string]any{"messages": msgs}, "harness_stated_counts": map[string]any{"total": 1200000}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(body) > 5<<20 || len(body) < 5<<20-200<<10 {
		tb.Fatalf("record is %d bytes, want just under 5 MiB", len(body))
	}
	return body
}
