package x402

import (
	"strings"
	"testing"
)

// A memo names its route under the store's key: it is this host's shape,
// unique per 402, and made for exactly one route of one store.
func TestAMemoNamesItsRoute(t *testing.T) {
	key, other := []byte("store key one"), []byte("store key two")
	m := routeMemo(key, "stream-divergence", "compare")
	if !IsHostMemo(m) || !strings.HasPrefix(m, MemoPrefix) || len(m) != len(MemoPrefix)+32 {
		t.Fatalf("memo %q has not the host's shape", m)
	}
	if m == routeMemo(key, "stream-divergence", "compare") {
		t.Error("two 402s of one route gave one memo")
	}
	for _, c := range []struct {
		what            string
		key             []byte
		service, op     string
		memo            string
		ofRoute, hostOK bool
	}{
		{"its route", key, "stream-divergence", "compare", m, true, true},
		{"another service", key, "context-audit", "compare", m, false, true},
		{"another op", key, "stream-divergence", "audit", m, false, true},
		{"a boundary moved", key, "stream-divergencec", "ompare", m, false, true},
		{"another store's key", other, "stream-divergence", "compare", m, false, true},
		{"an earlier build's random memo", key, "stream-divergence", "compare", MemoPrefix + "0123456789abcdef0123456789abcdef", false, true},
		{"not a host memo", key, "stream-divergence", "compare", "hello", false, false},
		{"upper-case hex", key, "stream-divergence", "compare", strings.ToUpper(m), false, false},
	} {
		if got := memoOfRoute(c.key, c.memo, c.service, c.op); got != c.ofRoute {
			t.Errorf("%s: memoOfRoute = %v, want %v", c.what, got, c.ofRoute)
		}
		if got := IsHostMemo(c.memo); got != c.hostOK {
			t.Errorf("%s: IsHostMemo = %v, want %v", c.what, got, c.hostOK)
		}
	}
}
