package signing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
)

// memVault is a store's signing_keys table in memory.
type memVault struct {
	mu   sync.Mutex
	keys []SealedKey
}

func (m *memVault) SigningKeys(context.Context) ([]SealedKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]SealedKey(nil), m.keys...), nil
}

func (m *memVault) AddSigningKey(_ context.Context, k SealedKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = append(m.keys, k)
	return nil
}

var secret = []byte("0123456789abcdef0123456789abcdef-operator")

// Two hosts open one shared keyring: the first seals its data dir's keys
// into the store (so answers signed before stay verifiable), the second
// signs with the same active key; a rotation through one reaches the
// other on Reload; the store never holds a seed in the clear; a wrong or
// short secret opens nothing.
func TestSharedKeyringAcrossHosts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	local, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := local.ActiveID()
	signedBefore, _ := local.Sign(map[string]any{"kind": "report"})

	v := &memVault{}
	a, err := OpenShared(ctx, v, secret, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenShared(ctx, v, secret, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if a.ActiveID() != old || b.ActiveID() != old || len(v.keys) != 1 {
		t.Fatalf("imported: a %s b %s store %d keys, want the data dir's %s", a.ActiveID(), b.ActiveID(), len(v.keys), old)
	}
	jwksB, _ := json.Marshal(b.JWKS())
	if _, err := Verify(signedBefore, jwksB); err != nil {
		t.Errorf("an answer signed before the import does not verify on the other host: %v", err)
	}
	kid, err := a.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Reload(); err != nil {
		t.Fatal(err)
	}
	if b.ActiveID() != kid || len(b.JWKS().Keys) != 2 || b.JWKS().Keys[0].Kid != kid {
		t.Errorf("after a rotation on a: b signs with %s and lists %d keys", b.ActiveID(), len(b.JWKS().Keys))
	}
	signedB, _ := b.Sign(map[string]any{"kind": "report"})
	jwksA, _ := json.Marshal(a.JWKS())
	if id, err := Verify(signedB, jwksA); err != nil || id != kid {
		t.Errorf("b's answer against a's keys: %s %v", id, err)
	}
	seed := a.keys[a.active].priv.Seed()
	for _, k := range v.keys {
		raw, _ := base64.StdEncoding.DecodeString(k.Sealed)
		if contains(raw, seed) || contains([]byte(k.Sealed), []byte(base64.StdEncoding.EncodeToString(seed))) {
			t.Error("a seed is stored in the clear")
		}
	}
	if _, err := OpenShared(ctx, v, []byte("another secret of at least thirty-two bytes"), dir); !errors.Is(err, ErrSecret) {
		t.Errorf("wrong secret: %v", err)
	}
	if _, err := OpenShared(ctx, &memVault{}, []byte("short"), dir); !errors.Is(err, ErrSecret) {
		t.Errorf("short secret: %v", err)
	}
	// a sealed seed moved under another kid does not open
	v.keys[1].KID = v.keys[0].KID
	if err := b.Reload(); !errors.Is(err, ErrSecret) {
		t.Errorf("a sealed seed under another kid: %v", err)
	}
}

func contains(hay, needle []byte) bool {
	for i := 0; i+len(needle) <= len(hay); i++ {
		if string(hay[i:i+len(needle)]) == string(needle) {
			return true
		}
	}
	return false
}
