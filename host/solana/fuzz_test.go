package solana

import (
	"bytes"
	"testing"
)

// FuzzDecodeTransaction checks that hostile bytes can only ever produce an
// error, and that whatever decodes re-encodes to exactly the input (so the
// facilitator signs the very bytes it inspected). Seeds are built payments
// in each shape the decoder must handle.
func FuzzDecodeTransaction(f *testing.F) {
	fx := newFixture(f)
	plain := fx.build(f, nil)
	f.Add(plain.Serialize())
	f.Add(fx.build(f, func(p *BuildParams) { p.TokenProgram = Token2022Program(); p.Memo = nil }).Serialize())

	legacy := fx.build(f, nil)
	legacy.Message.Versioned = false
	fx.resign(f, legacy)
	f.Add(legacy.Serialize())

	lookups := fx.build(f, nil)
	lookups.Message.Lookups = []AddressTableLookup{{Table: PublicKey{7}, Writable: []uint8{3}, Readonly: []uint8{4, 5}}}
	lookups.Message.AddressTableLookups = 1
	fx.resign(f, lookups)
	f.Add(lookups.Serialize())

	cosigned := fx.build(f, nil)
	if err := cosigned.SignAs(fx.fee); err != nil {
		f.Fatal(err)
	}
	f.Add(cosigned.Serialize())

	rules := fx.rules
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := DecodeTransaction(b)
		if err != nil {
			return
		}
		if got := tx.Serialize(); !bytes.Equal(got, b) {
			t.Fatalf("re-serialization differs:\n in %x\nout %x", b, got)
		}
		if got := tx.Message.Serialize(); !bytes.Equal(got, tx.MessageBytes) {
			t.Fatalf("message re-serialization differs")
		}
		// The verifier must cope with any decodable transaction. Re-signing
		// as the fixture client (when it is still a signer) lets mutated
		// messages get past the signature check into the policy checks.
		_, _ = VerifyExact(tx, rules)
		if tx.SignAs(fx.client) == nil {
			_, _ = VerifyExact(tx, rules)
		}
	})
}
