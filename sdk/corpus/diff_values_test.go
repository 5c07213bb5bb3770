package corpus

import (
	"encoding/json"
	"strings"
	"testing"
)

// A difference names both values, as JSON, cut to a line: "number
// differs" alone left an author to rerun the case to see them.
func TestDiffNamesBothValues(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, c := range []struct {
		exp, act any
		want     string
	}{
		{json.Number("3"), json.Number("4"), "$.n: number differs: expected 3, actual 4"},
		{json.Number("3"), "3", `$.n: number differs: expected 3, actual "3"`},
		{"est:~12", "est:~13", `$.n: value differs: expected "est:~12", actual "est:~13"`},
		{true, nil, "$.n: value differs: expected true, actual null"},
		{"a", long, `$.n: value differs: expected "a", actual "` + strings.Repeat("x", 79) + "…"},
	} {
		if got := Diff(map[string]any{"n": c.exp}, map[string]any{"n": c.act}, "$"); got != c.want {
			t.Errorf("Diff(%v, %v) = %q, want %q", c.exp, c.act, got, c.want)
		}
	}
	if got := Diff(json.Number("1.0"), json.Number("1"), "$"); got != "" {
		t.Errorf("numbers equal by value differ: %q", got)
	}
}
