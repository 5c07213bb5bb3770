package server

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

// Behind a trusted proxy the client is the last X-Forwarded-For hop that
// is not a trusted proxy; from anyone else the header is ignored.
func TestClientAddrBehindTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	for _, c := range []struct {
		remote, xff, want string
	}{
		{"203.0.113.9:5000", "198.51.100.1", "203.0.113.9"},         // not a proxy: its header is the client's word
		{"10.0.0.2:5000", "198.51.100.1", "198.51.100.1"},           // the proxy names the client
		{"10.0.0.2:5000", "1.2.3.4, 198.51.100.1", "198.51.100.1"},  // a client-sent hop to the left is ignored
		{"10.0.0.2:5000", "198.51.100.1, 10.0.0.7", "198.51.100.1"}, // two proxies
		{"10.0.0.2:5000", "", "10.0.0.2"},                           // no header
		{"10.0.0.2:5000", "garbage, 198.51.100.1", "198.51.100.1"},  // the client's garbage
		{"10.0.0.2:5000", "198.51.100.1, garbage", "10.0.0.2"},      // a proxy's garbage: trust stops
		{"[::ffff:127.0.0.1]:5000", "2001:db8::1", "2001:db8::1"},   // IPv4-mapped proxy address
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := clientAddr(r, trusted); got != c.want {
			t.Errorf("remote %s, X-Forwarded-For %q: %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.2:5000"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if got := clientAddr(r, nil); got != "10.0.0.2" {
		t.Errorf("no trusted proxies configured: %s", got)
	}
}
