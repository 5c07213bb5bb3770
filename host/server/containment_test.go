package server_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/assay-audit/assay/host/internal/testhost"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/siwx"
)

// poisonAdapters are context-audit's adapters with anthropic-messages
// served by the poison-pill adapter (the real engine, plus records that
// fault it on purpose).
var poisonAdapters = []string{"plugins/adapter-letta-af", "host/internal/poisonadapter", "plugins/adapter-generic-message-list"}

// callerKey is caller n's wallet (each n its own).
func callerKey(n int) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte(fmt.Sprintf("caller-%d", n)))
	return ed25519.NewKeyFromSeed(seed[:])
}

// precheckAs posts a free pre-check of a one-message anthropic record as
// caller n, signed in with its wallet (SIGN-IN-WITH-X): each caller is
// counted against its own allowance and interval.
func precheckAs(t *testing.T, url, text string, n int) reply {
	t.Helper()
	key := callerKey(n)
	b, _ := json.Marshal(map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": "anthropic-messages",
		"record": map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}, "caller": base58(key.Public().(ed25519.PublicKey))})
	proof, err := siwx.Prove(t.Context(), http.DefaultClient, url, key)
	if err != nil {
		t.Fatalf("sign in as caller %d: %v", n, err)
	}
	return do(t, "POST", url, b, map[string]string{"SIGN-IN-WITH-X": proof})
}

// adapterState is the catalog's and /readyz's entry for format.
func adapterState(t *testing.T, h *testhost.Host, format string) (catalog, readyz map[string]any) {
	t.Helper()
	find := func(list any) map[string]any {
		items, _ := list.([]any)
		for _, it := range items {
			if m, _ := it.(map[string]any); m["format"] == format {
				return m
			}
		}
		return nil
	}
	cat := do(t, "GET", h.URL+"/", nil, nil)
	ready := do(t, "GET", h.URL+"/readyz", nil, nil)
	if ready.status != 200 || ready.json["ready"] != true {
		t.Errorf("/readyz: %d %s", ready.status, ready.raw)
	}
	return find(cat.json["adapters"]), find(ready.json["adapters"])
}

// Poison records sent as free pre-checks from many callers fail each of
// those requests as the adapter's fault (502, no Retry-After: sending it
// again fails again), and never switch the format off: a good record
// from anyone is served at once. The format shows "faulting" in the
// catalog and /readyz while faults outnumber good answers in the last
// minute, and "serving" again, by itself, once good answers outnumber
// them.
func TestPoisonPrechecksFromManyCallersLeaveTheFormatServed(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: poisonAdapters}, caPkg)
	pre := h.URL + "/context-audit/precheck"
	const poisoned = 8
	for i := range poisoned {
		r := precheckAs(t, pre, "POISON-EMPTY", i)
		e, _ := r.json["error"].(map[string]any)
		if r.status != 502 || errorCode(r) != "adapter_failed" || e["format"] != "anthropic-messages" || e["cause"] != "empty" || r.header.Get("Retry-After") != "" {
			t.Fatalf("poison %d: %d %s %v", i, r.status, r.raw, r.header)
		}
	}
	cat, ready := adapterState(t, h, "anthropic-messages")
	if cat["state"] != "faulting" || cat["faults_last_minute"] != float64(poisoned) || cat["last_fault_cause"] != "empty" || ready["state"] != "faulting" {
		t.Errorf("after %d poison records: catalog %v, /readyz %v", poisoned, cat, ready)
	}
	if page := do(t, "GET", h.URL+"/", nil, map[string]string{"Accept": "text/html"}); !strings.Contains(string(page.raw), "<code>anthropic-messages</code>") ||
		!strings.Contains(string(page.raw), "serving, with 8 faults and 0 good answers in the last minute") {
		t.Errorf("the catalog page does not show the faults:\n%s", page.raw)
	}
	// anyone's good record is served, at once and every time
	for i := range poisoned + 1 {
		if r := precheckAs(t, pre, "hello", 100+i); r.status != 200 || r.json["kind"] != "precheck" {
			t.Fatalf("good record %d after the poison: %d %s", i, r.status, r.raw)
		}
	}
	if cat, ready := adapterState(t, h, "anthropic-messages"); cat["state"] != "serving" || ready["state"] != "serving" || cat["answers_last_minute"] != float64(poisoned+1) {
		t.Errorf("after more good answers than faults: catalog %v, /readyz %v", cat, ready)
	}
	metricsWith(t, h.URL+"/metrics", `assay_adapter_faults_total{cause="empty",format="anthropic-messages"} 8`)
}

// An adapter whose process dies while it holds a record (a panic in a
// goroutine of its own, which no recover reaches) fails that request as
// the adapter's (502 adapter_failed, cause crashed, the format named;
// not the 30 s deadline) and the request is never sent again: the
// adapter restarts once. While it restarts, requests of its format are
// answered at once, 503 adapter_restarting with Retry-After, and other
// formats are served. It counts in assay_adapter_faults_total and
// assay_plugin_restarts_total.
func TestACrashingAdapterIsNamedAndNeverRetried(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: poisonAdapters, AdapterBackoff: 3 * time.Second, CallTimeout: time.Minute}, caPkg)
	pre := h.URL + "/context-audit/precheck"
	var poison *pluginhost.Adapter
	for _, a := range h.Adapters {
		if a.Description().GetFormatId() == "anthropic-messages" {
			poison = a
		}
	}
	r := precheckAs(t, pre, "POISON-CRASH", 1)
	if e, _ := r.json["error"].(map[string]any); r.status != 502 || errorCode(r) != "adapter_failed" || e["format"] != "anthropic-messages" || e["cause"] != "crashed" {
		t.Fatalf("crashing record: %d %s", r.status, r.raw)
	}
	// restarting: answered at once, with when to come back; another
	// format is not held
	r = precheckAs(t, pre, "hello", 2)
	after, _ := strconv.Atoi(r.header.Get("Retry-After"))
	if e, _ := r.json["error"].(map[string]any); r.status != 503 || errorCode(r) != "adapter_restarting" || e["format"] != "anthropic-messages" || after < 1 || after > 4 {
		t.Errorf("while restarting: %d %s (Retry-After %q)", r.status, r.raw, r.header.Get("Retry-After"))
	}
	if cat, ready := adapterState(t, h, "anthropic-messages"); cat["state"] != "restarting" || ready["state"] != "restarting" {
		t.Errorf("while restarting: catalog %v, /readyz %v", cat, ready)
	}
	generic, _ := json.Marshal(map[string]any{"envelope_version": "context-composition-envelope/1", "declared_format_id": "generic-message-list",
		"record": map[string]any{"messages": []any{map[string]any{"role": "user", "text": "hi"}}}, "caller": callerWallet})
	if r := post(t, pre, generic); r.status != 200 {
		t.Errorf("another format while anthropic-messages restarts: %d %s", r.status, r.raw)
	}
	for wait := time.Now().Add(30 * time.Second); poison.Restarts() == 0 && time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
	}
	if r := precheckAs(t, pre, "hello", 3); r.status != 200 {
		t.Fatalf("after the restart: %d %s", r.status, r.raw)
	}
	// one crash, one restart: the crashing record was not sent again
	if n := poison.Restarts(); n != 1 {
		t.Errorf("the adapter restarted %d times, want 1", n)
	}
	metricsWith(t, h.URL+"/metrics", `assay_adapter_faults_total{cause="crashed",format="anthropic-messages"} 1`,
		`assay_plugin_restarts_total{kind="adapter",name="anthropic-messages"} 1`)
	if log := h.Log.String(); !strings.Contains(log, "adapter process ended while it held a record") || strings.Contains(log, "POISON") {
		t.Errorf("the host's log names no crash, or quotes the record:\n%s", log)
	}
}

// An adapter naming a family whose criteria are not loaded, for a format
// loaded criteria accept, is routed (routing is by format id) and the
// catalog says so: accepted_by_loaded_criteria, with the family it names.
func TestAnAdapterNamingAnotherFamilyIsServedAndSaidSo(t *testing.T) {
	h := testhost.Start(t, testhost.Options{Adapters: []string{adapterPkg}, NoFreeTier: true,
		Env: []string{"ASSAY_TESTADAPTER_FAMILY=elsewhere/v1"}}, testPkg)
	if r := post(t, h.URL+"/test-family/measure", []byte(`{"adapt":"test-format","record":"hello"}`)); r.status != 200 || r.json["adapted_level"] != "L0" {
		t.Fatalf("a record of its format: %d %s", r.status, r.raw)
	}
	cat, _ := adapterState(t, h, "test-format")
	if cat["family"] != "elsewhere/v1" || cat["accepted_by_loaded_criteria"] != true || cat["state"] != "serving" {
		t.Errorf("the catalog's entry: %v", cat)
	}
}
