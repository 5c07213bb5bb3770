package wallet

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRoundTripAndMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k.json")
	priv, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	again, err := Load(p)
	if err != nil || !again.Equal(priv) {
		t.Fatalf("load: %v", err)
	}
	if _, err := New(p); err == nil {
		t.Error("New overwrote an existing keypair")
	}
	same, err := LoadOrNew(p)
	if err != nil || !same.Equal(priv) {
		t.Error("LoadOrNew replaced an existing keypair")
	}
	raw, _ := os.ReadFile(p)
	raw[len(raw)-3] ^= 1 // damage the public half
	_ = os.WriteFile(p, raw, 0o600)
	if _, err := Load(p); err == nil {
		t.Error("a keypair whose halves disagree was accepted")
	}
}
