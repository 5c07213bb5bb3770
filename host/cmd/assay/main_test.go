package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
)

func TestKeysRotateThenVerifyOffline(t *testing.T) {
	dir := t.TempDir()
	k, err := signing.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	first := k.ActiveID()
	answer, _ := k.Sign(map[string]any{"kind": "report", "n": 1})

	var out bytes.Buffer
	// a data dir no host has run in (no store) is refused, nothing made
	if err := run([]string{"keys", "rotate", "--data-dir", dir}, &out, &out); !errors.Is(err, store.ErrNoStore) {
		t.Fatalf("rotate without a store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "assay.db")); err == nil {
		t.Fatal("the refused rotation made a store")
	}
	st, err := store.Open(context.Background(), "sqlite", dir) // as the host made it
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := run([]string{"keys", "rotate", "--data-dir", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "active signing key: ") || strings.Contains(out.String(), first) ||
		!strings.Contains(out.String(), "store: sqlite "+filepath.Join(dir, "assay.db")) || !strings.Contains(out.String(), "keyring: "+filepath.Join(dir, signing.FileName)) {
		t.Fatalf("rotate said %q", out.String())
	}
	again, _ := signing.Open(dir)
	jwks, _ := json.Marshal(again.JWKS())
	keys := filepath.Join(t.TempDir(), "jwks.json")
	answerFile := filepath.Join(t.TempDir(), "answer.json")
	_ = os.WriteFile(keys, jwks, 0o600)
	_ = os.WriteFile(answerFile, answer, 0o600)

	out.Reset()
	if err := run([]string{"verify", "--keys", keys, answerFile}, &out, &out); err != nil {
		t.Fatalf("verify an answer signed before the rotation: %v", err)
	}
	if !strings.Contains(out.String(), first) {
		t.Errorf("verify named %q", out.String())
	}
	tampered := bytes.Replace(answer, []byte(`"n":1`), []byte(`"n":2`), 1)
	_ = os.WriteFile(answerFile, tampered, 0o600)
	if err := run([]string{"verify", "--keys", keys, answerFile}, &out, &out); err == nil {
		t.Error("a tampered answer verified")
	}
}

func TestPluginsPinWritesALoadableConfig(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "assay"), []byte("host"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "assay-stream-divergence"), []byte("abc"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "assay-adapter-letta-af"), []byte("def"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "assay.hcl"), []byte("# the config being written"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "openai-chat"), []byte("x"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "assay-adapter-x.sh"), []byte("x"), 0o755)
	_ = os.Mkdir(filepath.Join(dir, "assay-sub"), 0o755)
	var out, said bytes.Buffer
	if err := run([]string{"plugins", "pin", "--dir", dir}, &out, &said); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// what it skipped, and why, on stderr (stdout is the config)
	for _, want := range []string{"plugins pin: skipped openai-chat: not named assay-<name>", "plugins pin: skipped assay-adapter-x.sh: its name has an extension (.sh)",
		"plugins pin: skipped assay-sub: a directory"} {
		if !strings.Contains(said.String(), want) {
			t.Errorf("pin does not say %q:\n%s", want, said.String())
		}
	}
	if strings.Count(said.String(), "skipped") != 3 || strings.Contains(got, "skipped") {
		t.Errorf("pin said:\n%s\nand wrote:\n%s", said.String(), got)
	}
	// sha256("abc") from FIPS 180-2's example
	for _, want := range []string{
		`plugin "stream-divergence"`, `kind   = "family"`,
		`sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`,
		`plugin "letta-af"`, `kind   = "adapter"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("pin output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `plugin "assay"`) {
		t.Error("the host pinned itself")
	}
}

func TestServeRefusesAnUnknownPaymentMode(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"serve", "--data-dir", t.TempDir(), "--payments", "cash"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "expected off, house, local or a facilitator URL") {
		t.Errorf("err = %v", err)
	}
}

func TestServeRefusesABadAdmissionBlock(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "assay.hcl")
	_ = os.WriteFile(cfg, []byte("admission {\n  working = 0\n}\n"), 0o600)
	var out bytes.Buffer
	err := run([]string{"serve", "--config", cfg, "--data-dir", t.TempDir()}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "admission.working") {
		t.Errorf("err = %v", err)
	}
}

// A redemption the host cannot deliver yet ends with the marker to try
// again with, and needs no wallet.
func TestCallRedeemsAMarker(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("ASSAY-DELIVERY-MARKER"))
		mu.Unlock()
		w.Header().Set("ASSAY-DELIVERY-MARKER", "m2")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"error":{"code":"deadline_exceeded","message":"late"},"payment":{"delivery_marker":{"token":"m2","expires_at":"2026-11-30T05:00:00Z"}}}`))
	}))
	defer srv.Close()
	body := filepath.Join(t.TempDir(), "body.json")
	_ = os.WriteFile(body, []byte(`{}`), 0o600)
	var out bytes.Buffer
	err := run([]string{"call", "--marker", "m1", srv.URL + "/x/op", body}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "503 deadline_exceeded") || !strings.Contains(err.Error(), "--marker m2") ||
		!strings.Contains(err.Error(), "until 2026-11-30T05:00:00Z") {
		t.Fatalf("err = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 || got[0] != "m1" || got[1] != "m2" || got[3] != "m2" {
		t.Errorf("markers sent: %v", got)
	}
	if err := run([]string{"call", srv.URL, body}, &out, &out); err == nil || !strings.Contains(err.Error(), "--marker TOKEN") {
		t.Errorf("neither wallet nor marker: %v", err)
	}
}

// A refused redemption prints no marker to retry; a re-send that fails in
// transit after the host took the payment still prints the marker.
func TestCallPrintsOnlyARedeemableMarker(t *testing.T) {
	body := filepath.Join(t.TempDir(), "body.json")
	_ = os.WriteFile(body, []byte(`{}`), 0o600)
	spent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":{"code":"marker_spent","message":"spent"}}`))
	}))
	defer spent.Close()
	var out bytes.Buffer
	err := run([]string{"call", "--marker", "m1", spent.URL + "/x/op", body}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "400 marker_spent") || strings.Contains(err.Error(), "--marker") {
		t.Errorf("spent marker: %v", err)
	}
	var mu sync.Mutex
	calls := 0
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n > 1 { // the host went away before answering the re-send
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("ASSAY-DELIVERY-MARKER", "m2")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(503)
	}))
	defer gone.Close()
	err = run([]string{"call", "--marker", "m1", gone.URL + "/x/op", body}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--marker m2") {
		t.Errorf("re-send lost in transit: %v", err)
	}
}
