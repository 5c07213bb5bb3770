// Package wallet reads and writes Solana keypair files in the Solana CLI's
// format (a JSON array of 64 numbers: the 32-byte seed, then the public
// key), for test payers, the local facilitator's fee payer and the seller
// address of the embedded default.
package wallet

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// New writes a fresh keypair to path (mode 0600); it refuses to overwrite.
func New(path string) (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("wallet: generate: %w", err)
	}
	nums := make([]int, len(priv))
	for i, b := range priv {
		nums[i] = int(b)
	}
	raw, _ := json.Marshal(nums)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return nil, fmt.Errorf("wallet: write: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("wallet: write: %w", err)
	}
	return priv, nil
}

// Load reads a keypair file and checks that its public half matches.
func Load(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	var nums []int
	if err := json.Unmarshal(raw, &nums); err != nil || len(nums) != ed25519.PrivateKeySize {
		return nil, errors.New("wallet: not a Solana keypair file (a JSON array of 64 bytes)")
	}
	b := make([]byte, len(nums))
	for i, n := range nums {
		if n < 0 || n > 255 {
			return nil, errors.New("wallet: keypair byte out of range")
		}
		b[i] = byte(n)
	}
	priv := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
	if string(priv.Public().(ed25519.PublicKey)) != string(b[ed25519.SeedSize:]) {
		return nil, errors.New("wallet: keypair's public key does not match its seed")
	}
	return priv, nil
}

// LoadOrNew loads path, creating it first when it does not exist.
func LoadOrNew(path string) (ed25519.PrivateKey, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return New(path)
	}
	return Load(path)
}
