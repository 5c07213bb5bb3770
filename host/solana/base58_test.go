package solana

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// Bitcoin Core's base58 vectors (bitcoin/bitcoin
// src/test/data/base58_encode_decode.json), as also reproduced in many
// independent test suites.
var bitcoinBase58Vectors = []struct{ hex, b58 string }{
	{"", ""},
	{"61", "2g"},
	{"626262", "a3gV"},
	{"636363", "aPEr"},
	{"73696d706c792061206c6f6e6720737472696e67", "2cFupjhnEsSn59qHXstmK2ffpLv2"},
	{"00eb15231dfceb60925886b67d065299925915aeb172c06647", "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"},
	{"516b6fcd0f", "ABnLTmg"},
	{"bf4f89001e670274dd", "3SEo3LWLoPntC"},
	{"572e4794", "3EFU7m"},
	{"ecac89cad93923c02321", "EJDM8drfXA6uyA"},
	{"10c8511e", "Rt5zm"},
	{"00000000000000000000", "1111111111"},
}

func TestBase58BitcoinVectors(t *testing.T) {
	for _, v := range bitcoinBase58Vectors {
		raw, err := hex.DecodeString(v.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := EncodeBase58(raw); got != v.b58 {
			t.Errorf("EncodeBase58(%s) = %q, want %q", v.hex, got, v.b58)
		}
		got, err := DecodeBase58(v.b58)
		if err != nil {
			t.Errorf("DecodeBase58(%q): %v", v.b58, err)
			continue
		}
		if !bytes.Equal(got, raw) {
			t.Errorf("DecodeBase58(%q) = %x, want %s", v.b58, got, v.hex)
		}
	}
}

// Program addresses as raw bytes. The SPL Token and ATA program bytes are
// the constants Neon EVM's composability contracts hard-code
// (TOKEN_PROGRAM / ASSOCIATED_TOKEN_PROGRAM); the all-zero System program
// and the 2^256-1 bound are arithmetic facts.
func TestBase58SolanaKeys(t *testing.T) {
	cases := []struct{ hex, b58 string }{
		{strings.Repeat("00", 32), "11111111111111111111111111111111"},
		{"06ddf6e1d765a193d9cbe146ceeb79ac1cb485ed5f5b37913a8cf5857eff00a9", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"},
		{"8c97258f4e2489f1bb3d1029148e0d830b5a1399daff1084048e7bd8dbe9f859", "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"},
		{strings.Repeat("ff", 32), "JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG"},
	}
	for _, c := range cases {
		k, err := ParsePublicKey(c.b58)
		if err != nil {
			t.Fatalf("ParsePublicKey(%q): %v", c.b58, err)
		}
		if got := hex.EncodeToString(k[:]); got != c.hex {
			t.Errorf("ParsePublicKey(%q) = %s, want %s", c.b58, got, c.hex)
		}
		if k.String() != c.b58 {
			t.Errorf("String() = %q, want %q", k.String(), c.b58)
		}
	}
	if TokenProgram().String() != "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA" ||
		AssociatedTokenProgram().String() != "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL" ||
		SystemProgram() != (PublicKey{}) {
		t.Error("program accessors disagree with their addresses")
	}
}

func TestBase58Rejects(t *testing.T) {
	for _, s := range []string{"0", "O", "I", "l", "3x0z", "abc!", "é"} {
		if _, err := DecodeBase58(s); !errors.Is(err, ErrInvalidBase58) {
			t.Errorf("DecodeBase58(%q) err = %v, want ErrInvalidBase58", s, err)
		}
	}
	for _, s := range []string{
		"",
		"4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofL",   // 2^248-1: 31 bytes
		"JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFH",  // 2^256: 33 bytes
		"111111111111111111111111111111111",             // 33 zero bytes
		"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DAxx", // too long
	} {
		if _, err := ParsePublicKey(s); !errors.Is(err, ErrInvalidBase58) {
			t.Errorf("ParsePublicKey(%q) err = %v, want ErrInvalidBase58", s, err)
		}
	}
}

func TestBase58LeadingZerosRoundTrip(t *testing.T) {
	for n := 0; n < 40; n++ {
		b := make([]byte, n)
		for i := n / 2; i < n; i++ {
			b[i] = byte(i*37 + 1)
		}
		got, err := DecodeBase58(EncodeBase58(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("round trip of %x gave %x, %v", b, got, err)
		}
	}
}

// digitwiseBase58 is base58 the schoolbook way, one digit and one input
// byte at a time: the reference EncodeBase58's limbs must agree with.
func digitwiseBase58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	var digits []byte // most significant first
	for _, v := range b[zeros:] {
		carry := int(v)
		for j := len(digits) - 1; j >= 0; j-- {
			carry += 256 * int(digits[j])
			digits[j] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits = append([]byte{byte(carry % 58)}, digits...)
			carry /= 58
		}
	}
	out := strings.Repeat("1", zeros)
	for _, d := range digits {
		out += string(base58Alphabet[d])
	}
	return out
}

func FuzzEncodeBase58AgreesDigitwise(f *testing.F) {
	for _, seed := range [][]byte{nil, {0}, {0, 0, 1}, {255}, bytes.Repeat([]byte{255}, 64), {0, 0, 0, 0, 0}, {1, 2, 3, 4, 5, 6, 7}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 256 {
			return
		}
		if got, want := EncodeBase58(b), digitwiseBase58(b); got != want {
			t.Fatalf("EncodeBase58(%x) = %q, digit by digit %q", b, got, want)
		}
	})
}

func BenchmarkEncodeBase58Signature(b *testing.B) {
	sig := bytes.Repeat([]byte{0xa7, 0x13, 0xfe, 0x42}, 16)
	for b.Loop() {
		_ = EncodeBase58(sig)
	}
}
