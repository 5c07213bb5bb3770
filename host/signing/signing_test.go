package signing

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestKeyringIsCreatedPrivateAndSigns(t *testing.T) {
	dir := t.TempDir()
	k, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("keyring mode %v, want 0600", st.Mode().Perm())
	}
	signed, err := k.Sign(map[string]any{"b": 1, "a": "é", "n": []any{true, nil}})
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(k.JWKS())
	kid, err := Verify(signed, jwks)
	if err != nil || kid != k.ActiveID() {
		t.Fatalf("verify: %v %s", err, kid)
	}
	// canonical: members sorted, no whitespace
	var m map[string]json.RawMessage
	_ = json.Unmarshal(signed, &m)
	delete(m, "signature")
	payload, _ := Canonical(m)
	if string(payload) != `{"a":"é","b":1,"n":[true,null]}` {
		t.Errorf("canonical %s", payload)
	}
}

func TestTamperedAnswerFails(t *testing.T) {
	k, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	signed, _ := k.Sign(map[string]any{"count": 3})
	jwks, _ := json.Marshal(k.JWKS())
	var m map[string]any
	_ = json.Unmarshal(signed, &m)
	m["count"] = 4
	tampered, _ := json.Marshal(m)
	if _, err := Verify(tampered, jwks); !errors.Is(err, ErrBadSig) {
		t.Errorf("tampered answer: %v", err)
	}
	if _, err := Verify(signed, []byte(`{"keys":[]}`)); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("unknown key: %v", err)
	}
}

func TestRotateKeepsOldKeysVerifiable(t *testing.T) {
	dir := t.TempDir()
	k, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := k.ActiveID()
	oldAnswer, _ := k.Sign(map[string]any{"x": 1})
	kid, err := k.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if kid == old || k.ActiveID() != kid {
		t.Fatalf("rotate did not activate a new key")
	}
	// a second process sees the same keyring
	again, err := Open(dir)
	if err != nil || again.ActiveID() != kid || len(again.JWKS().Keys) != 2 {
		t.Fatalf("reopen: %v", err)
	}
	jwks, _ := json.Marshal(again.JWKS())
	if got, err := Verify(oldAnswer, jwks); err != nil || got != old {
		t.Errorf("old answer: %v", err)
	}
	if again.JWKS().Keys[0].Kid != kid {
		t.Error("active key is listed first")
	}
}

func TestThumbprintRFC7638(t *testing.T) {
	// RFC 8037 appendix A.3: the thumbprint of its example Ed25519 key.
	x := "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	pub, _ := b64url.DecodeString(x)
	if got := Thumbprint(ed25519.PublicKey(pub)); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Errorf("thumbprint %s", got)
	}
}
