package solana

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"filippo.io/edwards25519"
)

// Limits from the Solana runtime: a PDA takes at most 16 seeds including
// the bump seed that FindProgramAddress appends, each at most 32 bytes.
const (
	maxSeeds   = 16
	maxSeedLen = 32
)

// pdaMarker is appended to every PDA preimage so a derived address can never
// collide with a hash computed for another purpose.
const pdaMarker = "ProgramDerivedAddress"

// ErrNoProgramAddress is returned (wrapped) when no bump seed yields an
// off-curve address; it is astronomically unlikely but must not be ignored.
var ErrNoProgramAddress = errors.New("solana: no viable program address")

// isOnCurve reports whether 32 bytes decode to an Ed25519 point. It follows
// the permissive decoding Solana uses (curve25519-dalek): non-canonical y
// coordinates are reduced rather than refused, which filippo.io/edwards25519
// also does, so both sides agree on which hashes are valid PDAs.
func isOnCurve(b [32]byte) bool {
	_, err := new(edwards25519.Point).SetBytes(b[:])
	return err == nil
}

// createProgramAddress hashes one candidate; an on-curve result is refused
// because someone could hold its private key and sign for the "program".
func createProgramAddress(seeds [][]byte, bump byte, program PublicKey) (PublicKey, bool) {
	h := sha256.New()
	for _, s := range seeds {
		h.Write(s)
	}
	h.Write([]byte{bump})
	h.Write(program[:])
	h.Write([]byte(pdaMarker))
	var out PublicKey
	h.Sum(out[:0])
	return out, !isOnCurve(out)
}

// FindProgramAddress reproduces the runtime's canonical PDA search (bump 255
// downward, first off-curve hash wins), so addresses computed here match the
// ones programs will accept on chain.
func FindProgramAddress(seeds [][]byte, program PublicKey) (PublicKey, uint8, error) {
	if len(seeds) > maxSeeds-1 {
		return PublicKey{}, 0, fmt.Errorf("find program address: %d seeds, at most %d: %w", len(seeds), maxSeeds-1, ErrNoProgramAddress)
	}
	for i, s := range seeds {
		if len(s) > maxSeedLen {
			return PublicKey{}, 0, fmt.Errorf("find program address: seed %d is %d bytes, at most %d: %w", i, len(s), maxSeedLen, ErrNoProgramAddress)
		}
	}
	for bump := 255; bump >= 0; bump-- {
		if k, ok := createProgramAddress(seeds, byte(bump), program); ok {
			return k, uint8(bump), nil
		}
	}
	return PublicKey{}, 0, fmt.Errorf("find program address: %w", ErrNoProgramAddress)
}

// FindAssociatedTokenAddress derives where owner's balance of mint lives
// under tokenProgram. The token program is part of the seeds, which is why a
// Token-2022 mint's ATA differs from what Token-only helpers compute.
func FindAssociatedTokenAddress(owner, mint, tokenProgram PublicKey) (PublicKey, error) {
	k, _, err := FindProgramAddress([][]byte{owner[:], tokenProgram[:], mint[:]}, associatedTokenProgramKey)
	if err != nil {
		return PublicKey{}, fmt.Errorf("associated token address: %w", err)
	}
	return k, nil
}
