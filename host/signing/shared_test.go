package signing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
)

// memVault is a store's signing_keys and activations in memory.
type memVault struct {
	mu     sync.Mutex
	keys   []SealedKey
	active []string // activations, in order
}

func (m *memVault) SigningKeys(context.Context) ([]SealedKey, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	active := ""
	if len(m.active) > 0 {
		active = m.active[len(m.active)-1]
	}
	return append([]SealedKey(nil), m.keys...), active, nil
}

func (m *memVault) addLocked(k SealedKey) {
	for _, have := range m.keys {
		if have.KID == k.KID {
			return
		}
	}
	m.keys = append(m.keys, k)
}

func (m *memVault) AddSigningKeys(_ context.Context, keys []SealedKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		m.addLocked(k)
	}
	return nil
}

func (m *memVault) ActivateSigningKey(_ context.Context, k SealedKey, first bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if first && len(m.active) > 0 {
		return false, nil
	}
	m.addLocked(k)
	m.active = append(m.active, k.KID)
	return true, nil
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
	v.keys[1].KID, v.active = v.keys[0].KID, append(v.active, v.keys[0].KID)
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

// Hosts opening one empty vault at once all sign with one key: a single
// activation wins, and the others adopt it; none of the losers' fresh keys
// is kept (they never signed anything).
func TestSharedKeyringFirstStartsAgree(t *testing.T) {
	v := &memVault{}
	rings := make([]*Keyring, 8)
	var wg sync.WaitGroup
	for i := range rings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := OpenShared(context.Background(), v, secret, t.TempDir())
			if err != nil {
				t.Error(err)
				return
			}
			rings[i] = k
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, k := range rings {
		if k.ActiveID() != rings[0].ActiveID() {
			t.Errorf("host %d signs with %s, host 0 with %s", i, k.ActiveID(), rings[0].ActiveID())
		}
	}
	if len(v.keys) != 1 || len(v.active) != 1 {
		t.Errorf("the vault holds %d keys and %d activations, want 1 and 1", len(v.keys), len(v.active))
	}
}

// A host that joins a vault already holding keys keeps what it signed
// before verifiable: its own data dir's keys are sealed in, not active,
// and listed by every host; it signs with the fleet's key.
func TestSharedKeyringJoinKeepsOwnKeys(t *testing.T) {
	ctx := context.Background()
	v := &memVault{}
	fleet, err := OpenShared(ctx, v, secret, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := own.Sign(map[string]any{"kind": "report"})
	oldKid := own.ActiveID()
	joined, err := OpenShared(ctx, v, secret, dir)
	if err != nil {
		t.Fatal(err)
	}
	if joined.ActiveID() != fleet.ActiveID() {
		t.Errorf("the joining host signs with %s, the fleet with %s", joined.ActiveID(), fleet.ActiveID())
	}
	if err := fleet.Reload(); err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(fleet.JWKS())
	if id, err := Verify(before, set); err != nil || id != oldKid {
		t.Errorf("an answer the joining host signed before, against the fleet's keys: %s %v", id, err)
	}
	if fleet.JWKS().Keys[0].Kid != fleet.ActiveID() {
		t.Errorf("the active key is not listed first: %+v", fleet.JWKS().Keys)
	}
	// joining again adds nothing
	if _, err := OpenShared(ctx, v, secret, dir); err != nil || len(v.keys) != 2 || len(v.active) != 1 {
		t.Errorf("a second start of the joined host: %d keys, %d activations, %v", len(v.keys), len(v.active), err)
	}
}
