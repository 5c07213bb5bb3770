package solana

import (
	"errors"
	"fmt"
)

// base58Alphabet is the Bitcoin alphabet, the only one Solana uses for
// addresses, signatures and blockhashes.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Index maps an ASCII byte to its digit value, or -1 when the byte is
// outside the alphabet; a table keeps decoding branch-free per character.
var base58Index = func() [256]int8 {
	var t [256]int8
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(base58Alphabet); i++ {
		t[base58Alphabet[i]] = int8(i)
	}
	return t
}()

// ErrInvalidBase58 is returned (wrapped) for any text that is not Bitcoin
// base58, so callers can tell bad input from other failures.
var ErrInvalidBase58 = errors.New("solana: invalid base58")

// maxPublicKeyBase58Len is the longest base58 text a 32-byte value can
// produce (2^256-1 encodes to 44 digits); longer text is refused before the
// quadratic decode runs.
const maxPublicKeyBase58Len = 44

// EncodeBase58 renders bytes the way Solana tooling prints addresses and
// signatures, so values can be compared with explorers and configs.
//
// The number is carried in limbs of five base58 digits (58^5 < 2^30) and
// fed four input bytes at a time (a limb times 2^32 stays below 2^62):
// a signature's encoding is some 300 limb steps instead of 5,600 digit
// steps, and a paid call encodes several.
func EncodeBase58(b []byte) string {
	const limbBase = 58 * 58 * 58 * 58 * 58
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	rest := b[zeros:]
	limbs := make([]uint64, 0, len(rest)*138/500+2) // least significant first
	for i := 0; i < len(rest); {
		n := 4
		if i == 0 && len(rest)%4 != 0 {
			n = len(rest) % 4
		}
		carry := uint64(0)
		for _, c := range rest[i : i+n] {
			carry = carry<<8 | uint64(c)
		}
		shift := uint(8 * n)
		for j := range limbs {
			acc := limbs[j]<<shift + carry
			limbs[j], carry = acc%limbBase, acc/limbBase
		}
		for carry > 0 {
			limbs = append(limbs, carry%limbBase)
			carry /= limbBase
		}
		i += n
	}
	digits := make([]byte, len(limbs)*5)
	for j, l := range limbs {
		for k := 0; k < 5; k++ {
			digits[len(digits)-1-(j*5+k)] = byte(l % 58)
			l /= 58
		}
	}
	start := 0
	for start < len(digits) && digits[start] == 0 {
		start++
	}
	out := make([]byte, zeros, zeros+len(digits)-start)
	for i := range out {
		out[i] = '1'
	}
	for _, d := range digits[start:] {
		out = append(out, base58Alphabet[d])
	}
	return string(out)
}

// DecodeBase58 parses Bitcoin-alphabet base58, where every leading '1' is a
// zero byte; the mapping is one-to-one, so re-encoding the result always
// gives back s.
func DecodeBase58(s string) ([]byte, error) {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	// log(58)/log(256) < 0.733, so this many bytes always suffice.
	size := (len(s)-zeros)*733/1000 + 1
	buf := make([]byte, size)
	used := 0
	for i := zeros; i < len(s); i++ {
		d := base58Index[s[i]]
		if d < 0 {
			return nil, fmt.Errorf("%w: character at offset %d", ErrInvalidBase58, i)
		}
		carry := int(d)
		k := 0
		for j := size - 1; j >= 0 && (carry != 0 || k < used); j-- {
			carry += 58 * int(buf[j])
			buf[j] = byte(carry)
			carry >>= 8
			k++
		}
		used = k
	}
	start := size - used
	for start < size && buf[start] == 0 {
		start++
	}
	out := make([]byte, zeros+size-start)
	copy(out[zeros:], buf[start:])
	return out, nil
}

// PublicKey is a Solana address. It is a value type so keys can be compared
// with == and used as map keys, which the verifier relies on.
type PublicKey [32]byte

// ParsePublicKey accepts only text that decodes to exactly 32 bytes, because
// base58 strings of the usual length can still decode to 31 or 33 bytes and a
// silently padded or truncated address would point somewhere else.
func ParsePublicKey(s string) (PublicKey, error) {
	var k PublicKey
	if len(s) == 0 || len(s) > maxPublicKeyBase58Len {
		return k, fmt.Errorf("%w: public key text must be 1 to %d characters", ErrInvalidBase58, maxPublicKeyBase58Len)
	}
	b, err := DecodeBase58(s)
	if err != nil {
		return k, fmt.Errorf("parse public key: %w", err)
	}
	if len(b) != len(k) {
		return k, fmt.Errorf("%w: public key decodes to %d bytes, want 32", ErrInvalidBase58, len(b))
	}
	copy(k[:], b)
	return k, nil
}

// String prints the key in the base58 form every Solana tool uses, so logs
// and error context can be pasted into an explorer.
func (k PublicKey) String() string {
	return EncodeBase58(k[:])
}
