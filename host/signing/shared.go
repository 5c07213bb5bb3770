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

// Vault is a store every host shares; the last key it lists is active.
type Vault interface {
	SigningKeys(ctx context.Context) ([]SealedKey, error)
	AddSigningKey(ctx context.Context, k SealedKey) error
}

// MinSecretBytes is the shortest key secret accepted.
const MinSecretBytes = 32

// ErrSecret is a key secret too short to seal keys with, or not the one
// the store's keys were sealed with.
var ErrSecret = errors.New("signing: the key secret is missing, shorter than 32 bytes, or not the one the store's keys were sealed with")

// OpenShared opens the keyring every host on a store signs with: keys live
// in the vault, their seeds sealed with a key derived from secret (the
// operator's file; never stored). With no key in the vault yet, the keys
// of importDir's keyring file are sealed into it (earlier answers stay
// verifiable), or a fresh one is made.
func OpenShared(ctx context.Context, v Vault, secret []byte, importDir string) (*Keyring, error) {
	if len(secret) < MinSecretBytes {
		return nil, ErrSecret
	}
	sum := sha256.Sum256(append([]byte("assay-signing-keys/1\x00"), secret...))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
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
			return addSealed(actx, v, aead, sk)
		},
	}
	have, err := v.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(have) == 0 {
		if s, err := readFile(filepath.Join(importDir, FileName)); err == nil {
			for _, sk := range s.Keys {
				if sk.KID != s.Active {
					if err := k.add(sk); err != nil {
						return nil, err
					}
				}
			}
			for _, sk := range s.Keys {
				if sk.KID == s.Active {
					if err := k.add(sk); err != nil {
						return nil, err
					}
				}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := k.Reload(); err == nil {
		return k, nil
	} else if !errors.Is(err, errNoKeys) {
		return nil, err
	}
	if _, err := k.Rotate(); err != nil {
		return nil, err
	}
	return k, nil
}

var errNoKeys = errors.New("signing: the store holds no signing key")

func unsealAll(ctx context.Context, v Vault, aead cipher.AEAD) (stored, error) {
	var s stored
	sealed, err := v.SigningKeys(ctx)
	if err != nil {
		return s, err
	}
	if len(sealed) == 0 {
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
	s.Active = s.Keys[len(s.Keys)-1].KID
	return s, nil
}

func addSealed(ctx context.Context, v Vault, aead cipher.AEAD, sk storedKey) error {
	seed, err := base64.StdEncoding.DecodeString(sk.Seed)
	if err != nil {
		return fmt.Errorf("signing: key %s: malformed seed", sk.KID)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("signing: nonce: %w", err)
	}
	sealed := aead.Seal(nonce, nonce, seed, []byte(sk.KID))
	return v.AddSigningKey(ctx, SealedKey{KID: sk.KID, Created: sk.Created, Sealed: base64.StdEncoding.EncodeToString(sealed)})
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
