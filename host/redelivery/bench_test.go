package redelivery_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/assay-audit/assay/host/redelivery"
)

// BenchmarkSealOpen is what an issued answer costs the paid path (one
// Seal) and what a redelivery costs (one Open), for a 4 KiB answer.
func BenchmarkSealOpen(b *testing.B) {
	s, err := redelivery.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		b.Fatal(err)
	}
	d := redelivery.DigestOf([]byte(`{"streamed_capture":{"chunks":["aGk="]}}`))
	ans := redelivery.Answer{Header: map[string]string{"PAYMENT-RESPONSE": strings.Repeat("x", 300)}, Body: bytes.Repeat([]byte("r"), 4<<10)}
	sealed, err := s.Seal("pay1", "pay_0123456789abcdef", d, ans)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Seal("pay1", "pay_0123456789abcdef", d, ans); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Open("pay1", "pay_0123456789abcdef", d, sealed); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDigest is the submission's digest: a small body, and the
// largest (context-audit's 5 MiB cap).
func BenchmarkDigest(b *testing.B) {
	for _, n := range []int{1 << 10, 5 << 20} {
		body := bytes.Repeat([]byte("a"), n)
		b.Run(map[int]string{1 << 10: "1KiB", 5 << 20: "5MiB"}[n], func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				redelivery.DigestOf(body)
			}
		})
	}
}
