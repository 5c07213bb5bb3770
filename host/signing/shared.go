package signing

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SealedKey is a signing key as a shared store keeps it: its seed sealed
// with the operator's key secret (AES-256-GCM, the kid as associated data,
// so a sealed seed cannot be passed off under another kid).
type SealedKey struct {
	KID     string
	Created time.Time
	Sealed  string // base64: nonce, then ciphertext and tag
}

// Vault is a store every host shares: its keys, one of them active.
type Vault interface {
	// SigningKeys lists every key and names the active one ("" for none).
	SigningKeys(ctx context.Context) (keys []SealedKey, active string, err error)
	// AddSigningKeys stores keys that are not active; a kid already
	// stored is left as it is.
	AddSigningKeys(ctx context.Context, keys []SealedKey) error
	// ActivateSigningKey stores k and makes it active in one step; with
	// first, only while no key is active (false: another's got there
	// first, and nothing of k is kept unless it was stored before).
	ActivateSigningKey(ctx context.Context, k SealedKey, first bool) (bool, error)
}

// MinSecretBytes is the shortest key secret accepted.
const MinSecretBytes = 32

// ErrSecret is a key secret too short to seal keys with, or not the one
// the store's keys were sealed with.
var ErrSecret = errors.New("signing: the key secret is missing, shorter than 32 bytes, or not the one the store's keys were sealed with")

// OpenShared opens the keyring every host on a store signs with: keys live
// in the vault, their seeds sealed with a key derived from secret (the
// operator's file; never stored).
//
// The keys of importDir's own keyring file ("" for none), if it has one, are sealed into
// the vault first, not active: what this host signed before it joined
// verifies against every host's key set. With no key active yet, one is
// made active in a single atomic step, the data dir's active key or a
// fresh one; of hosts starting together on an empty store one wins and
// the others adopt its key before they sign anything.
func OpenShared(ctx context.Context, v Vault, secret []byte, importDir string) (*Keyring, error) {
	aead, err := sealer(secret)
	if err != nil {
		return nil, err
	}
	k := &Keyring{
		load: func() (stored, error) {
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return unsealAll(lctx, v, aead)
		},
		add: func(sk storedKey) error {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			sealed, err := seal(aead, sk)
			if err != nil {
				return err
			}
			_, err = v.ActivateSigningKey(actx, sealed, false)
			return err
		},
	}
	var local stored
	if importDir != "" {
		if local, err = readFile(filepath.Join(importDir, FileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	candidate, err := freshKey()
	if err != nil {
		return nil, err
	}
	if len(local.Keys) > 0 {
		var own []SealedKey
		for _, sk := range local.Keys {
			sealed, err := seal(aead, sk)
			if err != nil {
				return nil, err
			}
			own = append(own, sealed)
			if sk.KID == local.Active {
				candidate = sk
			}
		}
		if err := v.AddSigningKeys(ctx, own); err != nil {
			return nil, err
		}
	}
	_, active, err := v.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	if active == "" {
		sealed, err := seal(aead, candidate)
		if err != nil {
			return nil, err
		}
		if _, err := v.ActivateSigningKey(ctx, sealed, true); err != nil {
			return nil, err
		}
	}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// sealer is the AEAD a secret seals seeds with.
func sealer(secret []byte) (cipher.AEAD, error) {
	if len(secret) < MinSecretBytes {
		return nil, ErrSecret
	}
	sum := sha256.Sum256(append([]byte("assay-signing-keys/1\x00"), secret...))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

var errNoKeys = errors.New("signing: the store holds no active signing key")

func unsealAll(ctx context.Context, v Vault, aead cipher.AEAD) (stored, error) {
	var s stored
	sealed, active, err := v.SigningKeys(ctx)
	if err != nil {
		return s, err
	}
	if active == "" {
		return s, errNoKeys
	}
	for _, sk := range sealed {
		raw, err := base64.StdEncoding.DecodeString(sk.Sealed)
		if err != nil || len(raw) < aead.NonceSize() {
			return s, fmt.Errorf("signing: key %s: malformed sealed seed", sk.KID)
		}
		seed, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(sk.KID))
		if err != nil || len(seed) != ed25519.SeedSize {
			return s, ErrSecret
		}
		s.Keys = append(s.Keys, storedKey{KID: sk.KID, Created: sk.Created, Seed: base64.StdEncoding.EncodeToString(seed)})
	}
	s.Active = active
	return s, nil
}

func seal(aead cipher.AEAD, sk storedKey) (SealedKey, error) {
	seed, err := base64.StdEncoding.DecodeString(sk.Seed)
	if err != nil {
		return SealedKey{}, fmt.Errorf("signing: key %s: malformed seed", sk.KID)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return SealedKey{}, fmt.Errorf("signing: nonce: %w", err)
	}
	sealed := aead.Seal(nonce, nonce, seed, []byte(sk.KID))
	return SealedKey{KID: sk.KID, Created: sk.Created, Sealed: base64.StdEncoding.EncodeToString(sealed)}, nil
}

// SecretOpens is whether secret opens the vault's keys (every one, the
// retired included): a command that would change a shared keyring checks
// it first.
func SecretOpens(ctx context.Context, v Vault, secret []byte) error {
	aead, err := sealer(secret)
	if err != nil {
		return err
	}
	_, err = unsealAll(ctx, v, aead)
	return err
}

// NewSecret writes a fresh key secret (32 random bytes, hex) to path,
// mode 0600, refusing to overwrite one.
func NewSecret(path string) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("signing: key secret: %w", err)
	}
	if _, err := fmt.Fprintf(f, "%x\n", b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
