package solana

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

// Real mainnet/CLI transactions published in trustwallet/wallet-core
// tests/chains/Solana/TransactionTests.cpp: TransferTokenTransaction_3vZ67C
// (an on-chain TransferChecked, explorer signature 3vZ67C...) and
// CreateTokenAccountTransaction (from `spl-token create-account`). Their
// signatures were made by other software, so verifying them checks that we
// extract exactly the signed message bytes.
func TestDecodePublishedTransactions(t *testing.T) {
	cases := []struct {
		name, b58, sig, signer string
		keys, ixs              int
	}{
		{
			name: "transfer-checked-3vZ67C",
			b58: "PGfKqEaH2zZXDMZLcU6LUKdBSzU1GJWJ1CJXtRYCxaCH7k8uok38WSadZfrZw3TGejiau7nSpan2GvbK26hQim24jR" +
				"e2AupmcYJFrgsdaCt1Aqs5kpGjPqzgj9krgxTZwwob3xgC1NdHK5BcNwhxwRtrCphGEH7zUFpGFrFrHzgpf2KY8FvP" +
				"iPELQyxzTBuyNtjLjMMreehSKShEjD9Xzp1QeC1pEF8JL6vUKzxMXuveoEYem8q8JiWszYzmTMfDk13JPgv7pXFGMq" +
				"DV3yNGCLsWccBeSFKN4UKECre6x2QbUEiKGkHkMc4zQwwyD8tGmEMBAGm339qdANssEMNpDeJp2LxLDStSoWShHnot" +
				"crH7pUa94xCVvCPPaomF",
			sig:    "3vZ67CGoRYkuT76TtpP2VrtTPBfnvG2xj6mUTvvux46qbnpThgQDgm27nC3yQVUZrABFjT9Qo7vA74tCjtV5P9Xg",
			signer: "B1iGmDJdvmxyUiYM8UEo2Uw2D58EmUrw4KyLYMmrhf8V",
			keys:   5, ixs: 1,
		},
		{
			name: "create-token-account",
			b58: "CKzRLx3AQeVeLQ7T4hss2rdbUpuAHdbwXDazxtRnSKBuncCk3WnYgy7XTrEiya19MJviYHYdTxi9gmWJY8qnR2vHVn" +
				"H2DbPiKA8g72rD3VvMnjosGUBBvCwbBLge6FeQdgczMyRo9n5PcHvg9yJBTJaEEvuewyBVHwCGyGQci7eYd26xtZtC" +
				"jAjwcTq4gGr3NZbeRW6jZp6j6APuew7jys4MKYRV4xPodua1TZFCkyWZr1XKzmPh7KTavtN5VzPDA8rbsvoEjHnKzj" +
				"B2Bszs6pDjcBFSHyQqGsHoF8XPD35BLfjDghNtBmf9cFqo5axa6oSjANAuYg6cMSP4Hy28waSj8isr6gQjE315hWi3" +
				"W1swwwPcn322gYZx6aMAcmjczaxX9aktpHYgZxixF7cYWEHxJs5QUK9mJePu9Xc6yW75UB4Ynx6dUgaSTEUzoQthF2" +
				"TN3xXwu1",
			sig:    "3doYbPs5rES3TeDSrntqUvMgXCDE2ViJX2SFhLtiptVNkqPuixXs1SwU5LUZ3KwHnCzDUth6BRr3vU3gqnuUgRvQ",
			signer: "B1iGmDJdvmxyUiYM8UEo2Uw2D58EmUrw4KyLYMmrhf8V",
			keys:   7, ixs: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := DecodeBase58(c.b58)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := DecodeTransaction(raw)
			if err != nil {
				t.Fatal(err)
			}
			if tx.Message.Versioned || len(tx.Message.AccountKeys) != c.keys || len(tx.Message.Instructions) != c.ixs {
				t.Fatalf("decoded shape: versioned=%v keys=%d ixs=%d", tx.Message.Versioned, len(tx.Message.AccountKeys), len(tx.Message.Instructions))
			}
			if EncodeBase58(tx.Signatures[0][:]) != c.sig || tx.Message.AccountKeys[0].String() != c.signer {
				t.Fatal("signature or signer differs from the published values")
			}
			if !tx.VerifySignature(0) {
				t.Error("published signature does not verify over the decoded message bytes")
			}
			if !bytes.Equal(tx.Serialize(), raw) || !bytes.Equal(tx.Message.Serialize(), tx.MessageBytes) {
				t.Error("re-serialization differs from the input")
			}
		})
	}

	// The TransferChecked one also pins the instruction layout: amount 4000,
	// 6 decimals, four accounts.
	raw, _ := DecodeBase58(cases[0].b58)
	tx, _ := DecodeTransaction(raw)
	ix := tx.Message.Instructions[0]
	if tx.Message.AccountKeys[ix.ProgramIndex] != TokenProgram() || len(ix.Accounts) != 4 || len(ix.Data) != 10 ||
		ix.Data[0] != 12 || binary.LittleEndian.Uint64(ix.Data[1:9]) != 4000 || ix.Data[9] != 6 {
		t.Errorf("TransferChecked layout: program %s data %x", tx.Message.AccountKeys[ix.ProgramIndex], ix.Data)
	}
}

// Compact-u16 vectors from paulmillr/micro-sol-signer test/basic.test.js
// (those within 16 bits), plus the alias and overflow encodings Solana's
// short_vec decoder refuses.
func TestShortVec(t *testing.T) {
	good := []struct {
		hex string
		v   int
	}{{"00", 0}, {"05", 5}, {"7f", 0x7f}, {"8001", 0x80}, {"ff01", 0xff}, {"8002", 0x100}, {"ffff01", 0x7fff}, {"ffff03", 0xffff}, {"808001", 0x4000}}
	for _, g := range good {
		b, _ := hex.DecodeString(g.hex)
		v, n, err := readShortVec(b)
		if err != nil || v != g.v || n != len(b) {
			t.Errorf("readShortVec(%s) = %d, %d, %v; want %d", g.hex, v, n, err, g.v)
		}
		if enc := appendShortVec(nil, g.v); !bytes.Equal(enc, b) {
			t.Errorf("appendShortVec(%d) = %x, want %s", g.v, enc, g.hex)
		}
	}
	for _, bad := range []string{"", "80", "8000", "ff00", "ff8000", "ffff04", "ffff80", "ffffff01"} {
		b, _ := hex.DecodeString(bad)
		if _, _, err := readShortVec(b); !errors.Is(err, ErrMalformedTransaction) {
			t.Errorf("readShortVec(%s) accepted", bad)
		}
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	f := newFixture(t)
	raw := f.build(t, nil).Serialize()
	// Offsets in the built v0 transaction: 1 count byte, 2 signatures, the
	// version byte, three header bytes, then the key-count prefix.
	const keyCountOff = 1 + 2*64 + 1 + 3

	splice := func(at int, del int, ins ...byte) []byte {
		out := append([]byte(nil), raw[:at]...)
		out = append(out, ins...)
		return append(out, raw[at+del:]...)
	}
	mutate := func(fn func(b []byte)) []byte {
		b := bytes.Clone(raw)
		fn(b)
		return b
	}
	cases := map[string][]byte{
		"empty":                         nil,
		"trailing byte":                 append(bytes.Clone(raw), 0),
		"truncated":                     raw[:len(raw)-1],
		"non-canonical signature count": splice(0, 1, 0x82, 0x00),
		"non-canonical key count":       splice(keyCountOff, 1, raw[keyCountOff]|0x80, 0x00),
		"oversized":                     append(bytes.Clone(raw), make([]byte, MaxTransactionSize)...),
		"message version 1":             mutate(func(b []byte) { b[1+2*64] = 0x81 }),
		"too few signatures":            splice(0, 1+64, 0x01),
		"readonly fee payer":            mutate(func(b []byte) { b[1+2*64+2] = 2 }),
		"duplicate key":                 mutate(func(b []byte) { copy(b[keyCountOff+1+32:], b[keyCountOff+1:keyCountOff+1+32]) }),
	}
	for name, b := range cases {
		if _, err := DecodeTransaction(b); !errors.Is(err, ErrMalformedTransaction) {
			t.Errorf("%s: err = %v, want ErrMalformedTransaction", name, err)
		}
	}

	// Index range checks: point an instruction past the keys, and at the fee
	// payer as program.
	for name, fn := range map[string]func(m *Message){
		"account index out of range": func(m *Message) { m.Instructions[2].Accounts[0] = uint8(len(m.AccountKeys)) },
		"program index out of range": func(m *Message) { m.Instructions[3].ProgramIndex = uint8(len(m.AccountKeys)) },
		"fee payer as program":       func(m *Message) { m.Instructions[3].ProgramIndex = 0 },
		"empty lookup": func(m *Message) {
			m.Lookups = []AddressTableLookup{{Table: PublicKey{9}}}
			m.AddressTableLookups = 1
		},
	} {
		tx := f.build(t, nil)
		fn(&tx.Message)
		tx.MessageBytes = tx.Message.Serialize()
		if _, err := DecodeTransaction(tx.Serialize()); !errors.Is(err, ErrMalformedTransaction) {
			t.Errorf("%s: err = %v, want ErrMalformedTransaction", name, err)
		}
	}
}

func TestSignAs(t *testing.T) {
	f := newFixture(t)
	tx := f.build(t, nil)
	if tx.Signatures[0] != ([64]byte{}) {
		t.Fatal("fee payer slot must start empty")
	}
	if !tx.VerifySignature(1) || tx.VerifySignature(0) {
		t.Fatal("client slot must verify and the empty fee payer slot must not")
	}
	if err := tx.SignAs(f.other); !errors.Is(err, ErrNotSigner) {
		t.Errorf("signing with a stranger: err = %v, want ErrNotSigner", err)
	}
	if err := tx.SignAs(f.fee); err != nil {
		t.Fatal(err)
	}
	if !tx.VerifySignature(0) || !tx.VerifySignature(1) {
		t.Error("both slots must verify after the fee payer signs")
	}
	for _, slot := range []int{-1, 2, 100} {
		if tx.VerifySignature(slot) {
			t.Errorf("VerifySignature(%d) = true", slot)
		}
	}
}
