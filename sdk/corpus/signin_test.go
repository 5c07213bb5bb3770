package corpus

import (
	"strings"
	"testing"
)

// A host that proves callers' wallets says whose allowance it counted
// (free_tier.counted) and carries a fresh sign-in challenge (sign_in) in
// every pre-check answer: both the host's, checked for form and left out
// of the comparison; a host without them is read as before.
func TestCompareLeavesOutCountedAndSignIn(t *testing.T) {
	expected := `{"kind": "precheck", "issued_at": "<check-end UTC>", "corpus": {"sha256": "<pin>"}}`
	free := `"free_tier": {"per_day": 100, "remaining": 99, "resets_at": "2026-12-07T00:00:00Z", "min_interval_ms": 5000, "counted": "address"}`
	challenge := `"sign_in": {"info": {"domain": "h", "nonce": "00"}, "supportedChains": [{"chainId": "solana:x", "type": "ed25519"}], "schema": {}}`
	for _, c := range []struct{ name, path, extra, want string }{
		{"counted address, a challenge", "/s/precheck", free + ", " + challenge, ""},
		{"counted wallet", "/s/precheck", strings.Replace(free, `"address"`, `"wallet"`, 1), ""},
		{"counted something else", "/s/precheck", strings.Replace(free, `"address"`, `"anyone"`, 1), "$.free_tier.counted"},
		{"counted and a member more", "/s/precheck", strings.Replace(free, `"counted"`, `"x": 1, "counted"`, 1), "$.free_tier: not an object"},
		{"a challenge without chains", "/s/precheck", strings.Replace(challenge, `[{"chainId": "solana:x", "type": "ed25519"}]`, `[]`, 1), "$.sign_in: not a sign-in-with-x challenge"},
		{"a challenge that is a string", "/s/precheck", `"sign_in": "x"`, "$.sign_in: not an object"},
		{"on a paid route it is an extra member", "/s/run", challenge, "sign_in"},
	} {
		tc := Case{Name: c.name, Request: Request{Path: c.path}, Expect: Expect{Status: 200, Answer: []byte(expected)}}
		body := []byte(`{"kind": "precheck", "issued_at": "2026-12-06T22:10:05Z", "corpus": {"sha256": "abc"}, ` + c.extra + `}`)
		got := Compare(tc, "abc", Answer{Status: 200, Body: body})
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: Compare said %q, want %q", c.name, got, c.want)
		}
	}
}
