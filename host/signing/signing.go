// Package signing owns the host's report-signing keys: an Ed25519 keyring in
// the data dir, RFC 8785 (JCS) canonical bytes, signatures over them, the
// public JWKS, and offline verification.
package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/assay-audit/assay/sdk"
)

// Alg is the signature algorithm named in every answer.
const Alg = sdk.SignatureAlg

// FileName is the keyring's file inside the data dir.
const FileName = "signing-keys.json"

var b64url = base64.RawURLEncoding

type storedKey struct {
	KID     string    `json:"kid"`
	Created time.Time `json:"created"`
	Seed    string    `json:"seed"`
}

type stored struct {
	Active string      `json:"active"`
	Keys   []storedKey `json:"keys"`
}

type key struct {
	kid  string
	priv ed25519.PrivateKey
}

// Keyring holds every key ever made for this data dir (or, shared, for
// every host on one store); one is active and signs, all are published so
// older answers still verify.
type Keyring struct {
	// load reads every key with the active one named; add stores a new
	// key and makes it active
	load   func() (stored, error)
	add    func(storedKey) error
	mu     sync.RWMutex
	keys   []key
	active int
}

// Open loads the keyring in dir, creating it with one fresh key (file mode
// 0600) on first use.
func Open(dir string) (*Keyring, error) {
	path := filepath.Join(dir, FileName)
	k := &Keyring{load: func() (stored, error) { return readFile(path) }, add: func(sk storedKey) error { return addToFile(path, sk) }}
	if err := k.Reload(); err == nil {
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("signing: data dir: %w", err)
	}
	if _, err := k.Rotate(); err != nil {
		return nil, err
	}
	return k, nil
}

func readFile(path string) (stored, error) {
	var s stored
	raw, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("signing: read keyring: %w", err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("signing: keyring is not valid JSON: %w", err)
	}
	return s, nil
}

// addToFile rewrites the keyring file with sk added and active, through a
// temporary file renamed over it (mode 0600 from the start).
func addToFile(path string, sk storedKey) error {
	s, err := readFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s.Keys = append(s.Keys, sk)
	s.Active = sk.KID
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("signing: encode keyring: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keys-*")
	if err != nil {
		return fmt.Errorf("signing: write keyring: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("signing: keyring mode: %w", err)
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("signing: write keyring: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("signing: write keyring: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("signing: install keyring: %w", err)
	}
	return nil
}

// Reload re-reads the keys (after `assay keys rotate`, on SIGHUP; a shared
// keyring each second).
func (k *Keyring) Reload() error {
	s, err := k.load()
	if err != nil {
		return err
	}
	keys := make([]key, 0, len(s.Keys))
	active := -1
	for i, sk := range s.Keys {
		seed, err := base64.StdEncoding.DecodeString(sk.Seed)
		if err != nil || len(seed) != ed25519.SeedSize {
			return fmt.Errorf("signing: key %d has a malformed seed", i)
		}
		priv := ed25519.NewKeyFromSeed(seed)
		kid := Thumbprint(priv.Public().(ed25519.PublicKey))
		if kid != sk.KID {
			return fmt.Errorf("signing: key %d does not match its kid", i)
		}
		keys = append(keys, key{kid: kid, priv: priv})
		if kid == s.Active {
			active = len(keys) - 1
		}
	}
	if active < 0 {
		return fmt.Errorf("signing: keyring names no active key")
	}
	k.mu.Lock()
	k.keys, k.active = keys, active
	k.mu.Unlock()
	return nil
}

// Rotate makes a new key active; the old ones stay listed.
func (k *Keyring) Rotate() (string, error) {
	sk, err := freshKey()
	if err != nil {
		return "", err
	}
	if err := k.add(sk); err != nil {
		return "", err
	}
	return sk.KID, k.Reload()
}

func freshKey() (storedKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return storedKey{}, fmt.Errorf("signing: generate key: %w", err)
	}
	kid := Thumbprint(priv.Public().(ed25519.PublicKey))
	return storedKey{KID: kid, Created: time.Now().UTC(), Seed: base64.StdEncoding.EncodeToString(priv.Seed())}, nil
}

// ActiveID is the id of the key that signs.
func (k *Keyring) ActiveID() string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.keys[k.active].kid
}

// Thumbprint is the RFC 7638 JWK thumbprint of an Ed25519 public key,
// base64url without padding: the key id.
func Thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64url.EncodeToString(pub) + `"}`))
	return b64url.EncodeToString(sum[:])
}

// JWK is one public key as published at /keys.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS is the published key set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns every key, the active one first.
func (k *Keyring) JWKS() JWKS {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := JWKS{Keys: make([]JWK, 0, len(k.keys))}
	order := append([]int{k.active}, indexesExcept(len(k.keys), k.active)...)
	for _, i := range order {
		pub := k.keys[i].priv.Public().(ed25519.PublicKey)
		out.Keys = append(out.Keys, JWK{Kty: "OKP", Crv: "Ed25519", X: b64url.EncodeToString(pub), Kid: k.keys[i].kid, Alg: "EdDSA", Use: "sig"})
	}
	return out
}

func indexesExcept(n, skip int) []int {
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if i != skip {
			out = append(out, i)
		}
	}
	return out
}

// Signature is the signature member of every answer.
type Signature struct {
	Alg   string `json:"alg"`
	KeyID string `json:"key_id"`
	Value string `json:"value"`
}

// Sign signs answer (which must not carry "signature") with the active key
// and returns the canonical bytes of the answer with its signature member.
// Each top-level member is canonicalized once and reused for both the
// signed payload and the final bytes.
func (k *Keyring) Sign(answer map[string]any) ([]byte, error) {
	if _, ok := answer["signature"]; ok {
		return nil, errors.New("signing: answer already carries a signature")
	}
	keys := make([]string, 0, len(answer)+1)
	parts := make(map[string][]byte, len(answer)+1)
	for name, v := range answer {
		c, err := Canonical(v)
		if err != nil {
			return nil, err
		}
		keys = append(keys, name)
		parts[name] = c
	}
	slices.SortFunc(keys, sdk.CompareUTF16)
	payload := joinMembers(keys, parts)
	k.mu.RLock()
	active := k.keys[k.active]
	k.mu.RUnlock()
	sig, err := Canonical(map[string]any{"alg": Alg, "key_id": active.kid, "value": b64url.EncodeToString(ed25519.Sign(active.priv, payload))})
	if err != nil {
		return nil, err
	}
	parts["signature"] = sig
	keys = append(keys, "signature")
	slices.SortFunc(keys, sdk.CompareUTF16)
	return joinMembers(keys, parts), nil
}

// joinMembers writes the canonical object of parts in keys' order into
// one buffer sized up front (a report is hundreds of kilobytes; growing
// by doubling would leave as much again behind).
func joinMembers(keys []string, parts map[string][]byte) []byte {
	size := 2
	for _, k := range keys {
		size += len(parts[k]) + len(k) + 8 // quotes, colon, comma, some escapes
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := sdk.CanonicalJSON(k)
		b.Write(name)
		b.WriteByte(':')
		b.Write(parts[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Verification errors (the sdk's: a payer verifies with the sdk alone).
var (
	ErrNoSignature = sdk.ErrNoSignature
	ErrUnknownKey  = sdk.ErrUnknownKey
	ErrBadSig      = sdk.ErrBadSig
)

// Verify checks a signed answer against a JWKS document and returns the id
// of the key that signed it (sdk.VerifyAnswer).
func Verify(answer, jwks []byte) (string, error) { return sdk.VerifyAnswer(answer, jwks) }

// Decode parses JSON into the tree Canonical writes (see sdk.DecodeJSON).
func Decode(raw []byte) (any, error) { return sdk.DecodeJSON(raw) }

// Canonical is the RFC 8785 serialization of v (see sdk.CanonicalJSON).
func Canonical(v any) ([]byte, error) { return sdk.CanonicalJSON(v) }
