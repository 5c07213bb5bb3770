package selfcheck

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// text finds a string's end and decodes it as encoding/json does, on
// strings dense with escapes (quotes, backslashes, \u escapes) next to
// plain runs.
func TestTextReadsStringsAsJSONDoes(t *testing.T) {
	pieces := []string{"a", "é", `"`, `\`, "\n", "\u0001", "\U0001f600", "x\\\"y", ""}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var sb strings.Builder
		for range r.IntN(12) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		want := sb.String()
		enc, _ := json.Marshal(want)
		doc := append(append([]byte{}, enc...), []byte(`,"next"`)...)
		w := walker{doc: doc}
		end, got, ok := w.text(0)
		if !ok || got != want || end != len(enc) {
			t.Fatalf("%q: end %d (want %d), %q, ok %v", enc, end, len(enc), got, ok)
		}
	}
	// unterminated
	if _, _, ok := (&walker{doc: []byte(`"ab\"`)}).text(0); ok {
		t.Error("an unterminated string read as a string")
	}
}

// BenchmarkTextManyEscapes: one 262 KB string of \n escapes, the shape a
// record id echoed into a report can take (152 ms when each escape sent
// the search for the closing quote back over the rest).
func BenchmarkTextManyEscapes(b *testing.B) {
	enc, _ := json.Marshal(strings.Repeat("\n", 130000))
	w := walker{doc: enc}
	for b.Loop() {
		if _, _, ok := w.text(0); !ok {
			b.Fatal("not a string")
		}
	}
}
