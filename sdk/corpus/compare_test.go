package corpus

import (
	"strings"
	"testing"
)

// A pre-check answer's free_tier member is the host's: checked for form
// and left out of the comparison, on pre-checks only.
func TestCompareChecksTheFreeTierAndLeavesItOut(t *testing.T) {
	const pin = "abc"
	expected := `{"kind": "precheck", "issued_at": "<check-end UTC>", "corpus": {"sha256": "<pin>"}, "n": 3}`
	answer := func(free string) []byte {
		return []byte(`{"kind": "precheck", "issued_at": "2026-12-06T22:10:05Z", "corpus": {"sha256": "abc"}, "n": 3` + free + `}`)
	}
	good := `, "free_tier": {"per_day": 100, "remaining": 99, "resets_at": "2026-12-07T00:00:00Z", "min_interval_ms": 5000}`
	for _, c := range []struct {
		name, path, free, want string
	}{
		{"absent", "/s/precheck", "", ""},
		{"well formed", "/s/precheck", good, ""},
		{"none left", "/s/precheck", strings.Replace(good, `"remaining": 99`, `"remaining": 0`, 1), ""},
		{"more left than a day has", "/s/precheck", strings.Replace(good, `"remaining": 99`, `"remaining": 101`, 1), "$.free_tier: per_day"},
		{"a count as a string", "/s/precheck", strings.Replace(good, `"remaining": 99`, `"remaining": "99"`, 1), "$.free_tier: per_day"},
		{"yesterday's reset", "/s/precheck", strings.Replace(good, "2026-12-07", "2026-12-06", 1), "$.free_tier.resets_at"},
		{"a reset two days on", "/s/precheck", strings.Replace(good, "2026-12-07", "2026-12-08", 1), "$.free_tier.resets_at"},
		{"a reset not at midnight", "/s/precheck", strings.Replace(good, "T00:00:00Z", "T01:00:00Z", 1), "$.free_tier.resets_at"},
		{"a member more", "/s/precheck", strings.Replace(good, `"min_interval_ms"`, `"x": 1, "min_interval_ms"`, 1), "$.free_tier: not an object"},
		{"on a paid route it is an extra member", "/s/run", good, "free_tier"},
	} {
		tc := Case{Name: c.name, Request: Request{Path: c.path}, Expect: Expect{Status: 200, Answer: []byte(expected)}}
		got := Compare(tc, pin, Answer{Status: 200, Body: answer(c.free)})
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: Compare said %q, want %q", c.name, got, c.want)
		}
	}
}
