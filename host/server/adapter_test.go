package server_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
)

const adapterPkg = "host/internal/testadapter"

// A family reaches an adapter plugin only through the host: the host offers
// its Host service over the family's broker and routes by format id.
func TestAdaptersAreReachedThroughTheHost(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: []string{adapterPkg}, CallTimeout: 10 * time.Second}, testPkg)
	url := h.URL + "/test-family/measure"

	r := post(t, url, []byte(`{"adapt":"test-format","record":"hello"}`))
	if r.status != 200 || r.json["adapted_level"] != "L0" || r.json["adapted_text_bytes"] != float64(5) {
		t.Fatalf("adapted: %d %s", r.status, r.raw)
	}
	if r := post(t, url, []byte(`{"adapt":"test-format","record":"refuse"}`)); r.json["adapt_refusal"] != "record_does_not_parse_as_declared_format" {
		t.Errorf("adapter refusal: %s", r.raw)
	}
	// a format the family's criteria do not list is refused by the host,
	// whatever adapters are installed
	if r := post(t, url, []byte(`{"adapt":"unlisted-format","record":"x"}`)); r.json["adapt_refusal"] != "format_not_accepted" {
		t.Errorf("unlisted format: %s", r.raw)
	}
	// listed but no adapter installed: the measurement cannot run (503)
	if r := post(t, url, []byte(`{"adapt":"other-format","record":"x"}`)); r.status != 503 || errorCode(r) != "plugin_unavailable" {
		t.Errorf("no adapter: %d %s", r.status, r.raw)
	}
	// a 5 MiB record crosses family -> host -> adapter -> host -> family
	// through the brokered Host service's raised limits
	const cap5 = 5 << 20
	prefix := []byte(`{"adapt":"test-format","pad":"`)
	big := append(append(prefix, bytes.Repeat([]byte("y"), cap5-len(prefix)-2)...), '"', '}')
	if r := post(t, url, big); r.status != 200 || r.json["adapted_text_bytes"] != float64(cap5-len(prefix)-2) {
		t.Fatalf("5 MiB through the adapter path: %d %.300s", r.status, r.raw)
	}
	// an adapter that dies: 503 for that request, restarted for the next
	if r := post(t, url, []byte(`{"adapt":"test-format","record":"crash"}`)); r.status != 503 {
		t.Errorf("adapter crash: %d %s", r.status, r.raw)
	}
	r = doPast503(t, url, []byte(`{"adapt":"test-format","record":"again"}`), nil)
	if r.status != 200 || r.json["adapted_text_bytes"] != float64(5) {
		t.Fatalf("after the adapter restarted: %d %s", r.status, r.raw)
	}
	if n := h.Adapters[0].Restarts(); n != 1 {
		t.Errorf("adapter restarts %d", n)
	}
}
