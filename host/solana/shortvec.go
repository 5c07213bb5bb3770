package solana

import (
	"errors"
	"fmt"
)

// ErrMalformedTransaction is returned (wrapped) for every decoding failure,
// so a facilitator can map them all to the single "could not be decoded"
// reason without string matching.
var ErrMalformedTransaction = errors.New("solana: malformed transaction")

// maxShortVec is the largest length compact-u16 can carry.
const maxShortVec = 0xffff

// appendShortVec writes Solana's compact-u16 length prefix. Callers must
// keep n within maxShortVec; Serialize methods check before calling.
func appendShortVec(b []byte, n int) []byte {
	v := uint32(n)
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// readShortVec applies the same strictness as Solana's short_vec decoder:
// at most three bytes, no zero continuation byte (which would give the same
// value a second encoding) and nothing beyond 16 bits. Refusing aliases is
// what makes decode-then-encode reproduce the input byte for byte.
func readShortVec(b []byte) (int, int, error) {
	var v uint32
	for i := 0; i < 3; i++ {
		if i >= len(b) {
			return 0, 0, fmt.Errorf("%w: truncated length prefix", ErrMalformedTransaction)
		}
		c := b[i]
		if i > 0 && c == 0 {
			return 0, 0, fmt.Errorf("%w: non-canonical length prefix", ErrMalformedTransaction)
		}
		if i == 2 && c > 0x03 {
			return 0, 0, fmt.Errorf("%w: length prefix overflows 16 bits", ErrMalformedTransaction)
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return int(v), i + 1, nil
		}
	}
	// Unreachable: the third byte is forced to be terminal above.
	return 0, 0, fmt.Errorf("%w: length prefix too long", ErrMalformedTransaction)
}
