package solana

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"math"
	"testing"
)

// fixture is one facilitator/client/payee setup with deterministic keys.
type fixture struct {
	fee, client, other ed25519.PrivateKey
	feeKey, clientKey  PublicKey
	payTo, mint        PublicKey
	params             BuildParams
	rules              ExactRules
}

func seededKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("host/solana test key " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

func pub(priv ed25519.PrivateKey) PublicKey {
	var k PublicKey
	copy(k[:], priv.Public().(ed25519.PublicKey))
	return k
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{fee: seededKey("fee payer"), client: seededKey("client"), other: seededKey("other")}
	f.feeKey, f.clientKey = pub(f.fee), pub(f.client)
	f.payTo = pub(seededKey("payee"))
	// Devnet USDC.
	f.mint = mustKey(t, "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU")
	f.params = BuildParams{
		FeePayer:         f.feeKey,
		Payer:            f.client,
		PayTo:            f.payTo,
		Mint:             f.mint,
		TokenProgram:     TokenProgram(),
		Amount:           10_000,
		Decimals:         6,
		RecentBlockhash:  sha256.Sum256([]byte("blockhash")),
		Memo:             []byte("pi_3abc123def456"),
		ComputeUnitLimit: DefaultComputeUnitLimit,
		ComputeUnitPrice: DefaultComputeUnitPrice,
	}
	memo := "pi_3abc123def456"
	f.rules = ExactRules{FeePayer: f.feeKey, PayTo: f.payTo, Mint: f.mint, Amount: 10_000, Memo: &memo}
	return f
}

// build returns a freshly built transaction after an optional change to the
// build parameters.
func (f *fixture) build(t testing.TB, change func(*BuildParams)) *Transaction {
	t.Helper()
	p := f.params
	if change != nil {
		change(&p)
	}
	tx, err := BuildExactTransfer(p)
	if err != nil {
		t.Fatalf("BuildExactTransfer: %v", err)
	}
	return tx
}

// resign refreshes the signed bytes after a test edits the message, the way
// a malicious client would, and re-signs as the client.
func (f *fixture) resign(t testing.TB, tx *Transaction) {
	t.Helper()
	tx.MessageBytes = tx.Message.Serialize()
	tx.Signatures = make([][64]byte, tx.Message.NumRequiredSignatures)
	if err := tx.SignAs(f.client); err != nil {
		t.Fatalf("re-sign: %v", err)
	}
}

// wire sends tx through the codec, as the facilitator would receive it.
func wire(t testing.TB, tx *Transaction) *Transaction {
	t.Helper()
	out, err := DecodeTransaction(tx.Serialize())
	if err != nil {
		t.Fatalf("DecodeTransaction: %v", err)
	}
	return out
}

// addKey appends a read-only, non-signing static key (the last header
// group) and returns its index.
func addKey(m *Message, k PublicKey) uint8 {
	m.AccountKeys = append(m.AccountKeys, k)
	m.NumReadonlyUnsigned++
	return uint8(len(m.AccountKeys) - 1)
}

func TestBuildLayoutMatchesOfficialClient(t *testing.T) {
	f := newFixture(t)
	tx := f.build(t, nil)
	m := tx.Message
	if !m.Versioned || m.NumRequiredSignatures != 2 || m.NumReadonlySigned != 1 || m.NumReadonlyUnsigned != 4 {
		t.Fatalf("header v0=%v %d/%d/%d, want v0 2/1/4", m.Versioned, m.NumRequiredSignatures, m.NumReadonlySigned, m.NumReadonlyUnsigned)
	}
	src, _ := FindAssociatedTokenAddress(f.clientKey, f.mint, TokenProgram())
	dst, _ := FindAssociatedTokenAddress(f.payTo, f.mint, TokenProgram())
	atas := []PublicKey{src, dst}
	if kitAddressCompare(dst.String(), src.String()) < 0 {
		atas = []PublicKey{dst, src}
	}
	// A mint starting with a digit sorts before "ComputeBudget...", which
	// reproduces the order observed from the official client.
	want := []PublicKey{f.feeKey, f.clientKey, atas[0], atas[1], f.mint, ComputeBudgetProgram(), MemoProgram(), TokenProgram()}
	if len(m.AccountKeys) != len(want) {
		t.Fatalf("%d keys, want %d", len(m.AccountKeys), len(want))
	}
	for i := range want {
		if m.AccountKeys[i] != want[i] {
			t.Errorf("key %d = %s, want %s", i, m.AccountKeys[i], want[i])
		}
	}
	wantData := [][]byte{
		{2, 0x20, 0x4e, 0, 0},
		{3, 1, 0, 0, 0, 0, 0, 0, 0},
		{12, 0x10, 0x27, 0, 0, 0, 0, 0, 0, 6},
		[]byte("pi_3abc123def456"),
	}
	for i, d := range wantData {
		if !bytes.Equal(m.Instructions[i].Data, d) {
			t.Errorf("instruction %d data %x, want %x", i, m.Instructions[i].Data, d)
		}
	}
	if acc := m.Instructions[2].Accounts; m.AccountKeys[acc[0]] != src || m.AccountKeys[acc[1]] != f.mint ||
		m.AccountKeys[acc[2]] != dst || m.AccountKeys[acc[3]] != f.clientKey {
		t.Error("TransferChecked accounts are not [source, mint, destination, authority]")
	}
	if len(m.Instructions[3].Accounts) != 0 || len(m.Instructions[0].Accounts) != 0 {
		t.Error("compute budget and memo instructions take no accounts")
	}

	// With mainnet USDC ("EPjF...") the mint sorts after ComputeBudget.
	usdc := mustKey(t, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")
	m2 := f.build(t, func(p *BuildParams) { p.Mint = usdc }).Message
	if m2.AccountKeys[4] != ComputeBudgetProgram() || m2.AccountKeys[5] != usdc {
		t.Errorf("mainnet USDC order: %s, %s", m2.AccountKeys[4], m2.AccountKeys[5])
	}
}

func TestBuildRandomMemoAndDefaults(t *testing.T) {
	f := newFixture(t)
	a := f.build(t, func(p *BuildParams) { p.Memo = nil; p.ComputeUnitLimit = 0 })
	b := f.build(t, func(p *BuildParams) { p.Memo = nil })
	ma, mb := a.Message.Instructions[3].Data, b.Message.Instructions[3].Data
	if len(ma) != 32 || bytes.Equal(ma, mb) {
		t.Errorf("random memos %q and %q: want 32 distinct hex characters", ma, mb)
	}
	if got := a.Message.Instructions[0].Data; !bytes.Equal(got, []byte{2, 0x20, 0x4e, 0, 0}) {
		t.Errorf("zero limit should default to 20000, got %x", got)
	}
	rules := f.rules
	rules.Memo = nil
	x, err := VerifyExact(wire(t, a), rules)
	if err != nil || !bytes.Equal(x.Memo, ma) {
		t.Errorf("VerifyExact: %v, memo %q", err, x.Memo)
	}
}

func TestBuildRefuses(t *testing.T) {
	f := newFixture(t)
	for name, change := range map[string]func(*BuildParams){
		"payer is fee payer": func(p *BuildParams) { p.FeePayer = f.clientKey },
		"short key":          func(p *BuildParams) { p.Payer = p.Payer[:32] },
		"unknown program":    func(p *BuildParams) { p.TokenProgram = SystemProgram() },
		"non-utf8 memo":      func(p *BuildParams) { p.Memo = []byte{0xff, 0xfe} },
		"oversized memo":     func(p *BuildParams) { p.Memo = bytes.Repeat([]byte("a"), 1000) },
	} {
		p := f.params
		change(&p)
		if _, err := BuildExactTransfer(p); !errors.Is(err, ErrBuild) {
			t.Errorf("%s: err = %v, want ErrBuild", name, err)
		}
	}
}

func TestVerifyExactRoundTrip(t *testing.T) {
	f := newFixture(t)
	for name, change := range map[string]func(*BuildParams){
		"token":      nil,
		"token-2022": func(p *BuildParams) { p.TokenProgram = Token2022Program() },
		"max price":  func(p *BuildParams) { p.ComputeUnitPrice = ReferenceMaxComputeUnitPrice },
	} {
		t.Run(name, func(t *testing.T) {
			built := f.build(t, change)
			tx := wire(t, built)
			x, err := VerifyExact(tx, f.rules)
			if err != nil {
				t.Fatalf("VerifyExact: %v", err)
			}
			wantSrc, _ := FindAssociatedTokenAddress(f.clientKey, f.mint, tx.Message.AccountKeys[tx.Message.Instructions[2].ProgramIndex])
			if x.Payer != f.clientKey || x.Amount != 10_000 || x.Decimals != 6 || x.Mint != f.mint ||
				x.Source != wantSrc || string(x.Memo) != *f.rules.Memo || x.ComputeUnitLimit != DefaultComputeUnitLimit {
				t.Errorf("unexpected transfer %+v", x)
			}
			// The facilitator co-signs; the result must still decode and
			// carry two valid signatures over the unchanged message.
			if err := tx.SignAs(f.fee); err != nil {
				t.Fatal(err)
			}
			final := wire(t, tx)
			if !final.VerifySignature(0) || !final.VerifySignature(1) || !bytes.Equal(final.MessageBytes, built.MessageBytes) {
				t.Error("co-signed transaction does not verify")
			}
			if _, err := VerifyExact(final, f.rules); err != nil {
				t.Errorf("co-signed transaction no longer verifies: %v", err)
			}
		})
	}

	t.Run("legacy", func(t *testing.T) {
		tx := f.build(t, nil)
		tx.Message.Versioned = false
		f.resign(t, tx)
		if _, err := VerifyExact(wire(t, tx), f.rules); err != nil {
			t.Fatalf("legacy message refused: %v", err)
		}
	})
	t.Run("wallet guards", func(t *testing.T) {
		// Solflare-style: two Lighthouse instructions before the memo.
		tx := f.build(t, nil)
		lh := addKey(&tx.Message, LighthouseProgram())
		memo := tx.Message.Instructions[3]
		tx.Message.Instructions = append(tx.Message.Instructions[:3],
			CompiledInstruction{ProgramIndex: lh, Data: []byte{1}},
			CompiledInstruction{ProgramIndex: lh, Data: []byte{2}, Accounts: []uint8{1}},
			memo)
		f.resign(t, tx)
		if _, err := VerifyExact(wire(t, tx), f.rules); err != nil {
			t.Fatalf("Lighthouse guards refused: %v", err)
		}
	})
	t.Run("no memo required", func(t *testing.T) {
		rules := f.rules
		rules.Memo = nil
		tx := f.build(t, nil)
		tx.Message.Instructions = tx.Message.Instructions[:3]
		f.resign(t, tx)
		x, err := VerifyExact(wire(t, tx), rules)
		if err != nil || x.Memo != nil {
			t.Fatalf("3-instruction payment: %v, memo %v", err, x)
		}
	})
}

// TestVerifyExactRefusals has one case per refusal reason: each mutates a
// valid built transaction the way a hostile or buggy client could.
func TestVerifyExactRefusals(t *testing.T) {
	f := newFixture(t)
	other := pub(f.other)
	str := func(s string) *string { return &s }

	cases := []struct {
		name   string
		params func(*BuildParams)
		rules  func(*ExactRules)
		tx     func(*Transaction) // edits the message; the test re-signs
		raw    func(*Transaction) // edits after signing, no re-sign
		wire   func([]byte)       // edits the wire bytes before decoding
		want   string
	}{
		{name: "wrong amount", rules: func(r *ExactRules) { r.Amount++ }, want: ReasonAmountMismatch},
		{name: "smaller amount", params: func(p *BuildParams) { p.Amount = 9_999 }, want: ReasonAmountMismatch},
		{name: "wrong mint", rules: func(r *ExactRules) { r.Mint = other }, want: ReasonMintMismatch},
		{name: "wrong destination", params: func(p *BuildParams) { p.PayTo = other }, want: ReasonRecipientMismatch},
		{name: "destination is payee wallet not ATA", tx: func(tx *Transaction) {
			tx.Message.AccountKeys[tx.Message.Instructions[2].Accounts[2]] = f.payTo
		}, want: ReasonRecipientMismatch},
		{name: "destination not writable", tx: func(tx *Transaction) {
			dst := tx.Message.AccountKeys[tx.Message.Instructions[2].Accounts[2]]
			tx.Message.AccountKeys[tx.Message.Instructions[2].Accounts[2]] = other
			tx.Message.Instructions[2].Accounts[2] = addKey(&tx.Message, dst)
		}, want: ReasonSimulationFailed},
		{name: "token-2022 ATA for a token transfer", tx: func(tx *Transaction) {
			ata, _ := FindAssociatedTokenAddress(f.payTo, f.mint, Token2022Program())
			tx.Message.AccountKeys[tx.Message.Instructions[2].Accounts[2]] = ata
		}, want: ReasonRecipientMismatch},
		{name: "fee payer mismatch", rules: func(r *ExactRules) { r.FeePayer = other }, want: ReasonFeePayerMismatch},
		{name: "fee payer as authority", tx: func(tx *Transaction) { tx.Message.Instructions[2].Accounts[3] = 0 }, want: ReasonFeePayerTransferringFunds},
		{name: "fee payer as source", tx: func(tx *Transaction) { tx.Message.Instructions[2].Accounts[0] = 0 }, want: ReasonFeePayerTransferringFunds},
		{name: "fee payer in memo accounts", tx: func(tx *Transaction) { tx.Message.Instructions[3].Accounts = []uint8{0} }, want: ReasonFeePayerInAccounts},
		{name: "fee payer in lighthouse accounts", tx: func(tx *Transaction) {
			lh := addKey(&tx.Message, LighthouseProgram())
			tx.Message.Instructions = append(tx.Message.Instructions[:3],
				CompiledInstruction{ProgramIndex: lh, Accounts: []uint8{1, 0}}, tx.Message.Instructions[3])
		}, want: ReasonFeePayerInAccounts},
		{name: "authority not a signer", tx: func(tx *Transaction) {
			tx.Message.Instructions[2].Accounts[3] = tx.Message.Instructions[2].Accounts[1]
		}, want: ReasonNoTransferInstruction},
		{name: "price over reference cap", params: func(p *BuildParams) { p.ComputeUnitPrice = ReferenceMaxComputeUnitPrice + 1 }, want: ReasonComputePriceTooHigh},
		{name: "price over configured cap", params: func(p *BuildParams) { p.ComputeUnitPrice = 11 },
			rules: func(r *ExactRules) { r.MaxComputeUnitPrice = 10 }, want: ReasonComputePriceTooHigh},
		{name: "too few instructions", tx: func(tx *Transaction) { tx.Message.Instructions = tx.Message.Instructions[:2] }, want: ReasonInstructionsLength},
		{name: "too many instructions", tx: func(tx *Transaction) {
			memo := tx.Message.Instructions[3]
			tx.Message.Instructions = append(tx.Message.Instructions, memo, memo, memo)
		}, want: ReasonInstructionsLength},
		{name: "compute limit missing", tx: func(tx *Transaction) { tx.Message.Instructions[0].Data[0] = 4 }, want: ReasonComputeLimitInstruction},
		{name: "compute price swapped", tx: func(tx *Transaction) {
			ixs := tx.Message.Instructions
			ixs[0], ixs[1] = ixs[1], ixs[0]
		}, want: ReasonComputeLimitInstruction},
		{name: "compute price malformed", tx: func(tx *Transaction) {
			tx.Message.Instructions[1].Data = tx.Message.Instructions[1].Data[:8]
		}, want: ReasonComputePriceInstruction},
		{name: "plain transfer instead of TransferChecked", tx: func(tx *Transaction) {
			ix := &tx.Message.Instructions[2]
			ix.Data = append([]byte{3}, ix.Data[1:9]...)
		}, want: ReasonNoTransferInstruction},
		{name: "transfer on unknown program", tx: func(tx *Transaction) {
			tx.Message.Instructions[2].ProgramIndex = addKey(&tx.Message, SystemProgram())
		}, want: ReasonNoTransferInstruction},
		{name: "unknown program in fourth slot", tx: func(tx *Transaction) {
			tx.Message.Instructions[3].ProgramIndex = addKey(&tx.Message, SystemProgram())
		}, want: ReasonUnknownFourthInstruction},
		{name: "unknown program in fifth slot", tx: func(tx *Transaction) {
			sys := addKey(&tx.Message, SystemProgram())
			tx.Message.Instructions = append(tx.Message.Instructions, CompiledInstruction{ProgramIndex: sys, Data: []byte{2, 0, 0, 0}})
		}, want: ReasonUnknownFifthInstruction},
		{name: "lighthouse in sixth slot", tx: func(tx *Transaction) {
			lh := addKey(&tx.Message, LighthouseProgram())
			tx.Message.Instructions = append(tx.Message.Instructions,
				CompiledInstruction{ProgramIndex: lh}, CompiledInstruction{ProgramIndex: lh})
		}, want: ReasonUnknownSixthInstruction},
		{name: "bad payer signature", raw: func(tx *Transaction) { tx.Signatures[1][0] ^= 1 }, want: ReasonSignatureInvalid},
		{name: "bogus fee payer signature", raw: func(tx *Transaction) { tx.Signatures[0][5] = 7 }, want: ReasonSignatureInvalid},
		// The last message byte is the (empty) lookup count; the one before
		// ends the memo text.
		{name: "message edited after signing", wire: func(b []byte) { b[len(b)-2] ^= 1 }, want: ReasonSignatureInvalid},
		{name: "memo mismatch", rules: func(r *ExactRules) { r.Memo = str("pi_other") }, want: ReasonMemoMismatch},
		{name: "memo missing", rules: func(r *ExactRules) { r.Memo = str("") }, tx: func(tx *Transaction) {
			tx.Message.Instructions = tx.Message.Instructions[:3]
		}, want: ReasonMemoCount},
		{name: "two memos", tx: func(tx *Transaction) {
			tx.Message.Instructions = append(tx.Message.Instructions, tx.Message.Instructions[3])
		}, want: ReasonMemoCount},
		{name: "memo not utf-8", rules: func(r *ExactRules) { r.Memo = nil }, tx: func(tx *Transaction) {
			tx.Message.Instructions[3].Data = []byte{0xc3, 0x28}
		}, want: ReasonSimulationFailed},
		{name: "lookup tables present", tx: func(tx *Transaction) {
			tx.Message.Lookups = []AddressTableLookup{{Table: other, Writable: []uint8{0}}}
			tx.Message.AddressTableLookups = 1
		}, want: ReasonTransaction},
		{name: "single signer", tx: func(tx *Transaction) {
			// Drop the client's signer status entirely.
			tx.Message.NumRequiredSignatures = 1
			tx.Message.NumReadonlySigned = 0
		}, want: ReasonTransaction},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx := f.build(t, c.params)
			if c.tx != nil {
				c.tx(tx)
				if tx.Message.NumRequiredSignatures == 1 {
					// The client is no longer a signer; sign nothing.
					tx.MessageBytes = tx.Message.Serialize()
					tx.Signatures = make([][64]byte, 1)
				} else {
					f.resign(t, tx)
				}
			}
			b := tx.Serialize()
			if c.wire != nil {
				c.wire(b)
			}
			tx, err := DecodeTransaction(b)
			if err != nil {
				t.Fatal(err)
			}
			if c.raw != nil {
				c.raw(tx)
			}
			rules := f.rules
			if c.rules != nil {
				c.rules(&rules)
			}
			x, err := VerifyExact(tx, rules)
			var inv *Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("VerifyExact = %+v, %v; want *Invalid %s", x, err, c.want)
			}
			if inv.Reason != c.want || err.Error() != c.want {
				t.Errorf("reason %q, want %q", inv.Reason, c.want)
			}
		})
	}
}

func TestVerifyExactRefusesInconsistentTransaction(t *testing.T) {
	f := newFixture(t)
	if _, err := VerifyExact(nil, f.rules); err == nil || err.Error() != ReasonCouldNotBeDecoded {
		t.Errorf("nil transaction: %v", err)
	}
	// Message edited without refreshing MessageBytes: what was checked would
	// not be what gets signed.
	tx := wire(t, f.build(t, nil))
	tx.Message.Instructions[2].Data[1]++
	if _, err := VerifyExact(tx, f.rules); err == nil || err.Error() != ReasonTransaction {
		t.Errorf("diverging message: %v", err)
	}
	// A hand-built message with out-of-range indexes must not panic.
	tx = wire(t, f.build(t, nil))
	tx.Message.Instructions[2].Accounts[0] = 200
	tx.MessageBytes = tx.Message.Serialize()
	if _, err := VerifyExact(tx, f.rules); err == nil || err.Error() != ReasonTransaction {
		t.Errorf("out-of-range index: %v", err)
	}
}

func TestFeeLamports(t *testing.T) {
	cases := []struct {
		limit uint32
		price uint64
		sigs  int
		want  uint64
	}{
		{20_000, 1, 2, 10_001},
		{20_000, 0, 2, 10_000},
		{1_400_000, ReferenceMaxComputeUnitPrice, 2, 7_010_000},
		{1, 1, 1, 5_001},
		{math.MaxUint32, math.MaxUint64, 2, math.MaxUint64},
		{0, 0, -3, 0},
	}
	for _, c := range cases {
		x := &ExactTransfer{ComputeUnitLimit: c.limit, ComputeUnitPrice: c.price}
		if got := x.FeeLamports(c.sigs); got != c.want {
			t.Errorf("FeeLamports(limit %d, price %d, %d sigs) = %d, want %d", c.limit, c.price, c.sigs, got, c.want)
		}
	}
}

// The collation must agree with ICU's "en" ordering used by @solana/kit:
// digits before letters, case ignored unless that is the only difference,
// then lower case first.
func TestKitAddressCompare(t *testing.T) {
	ordered := []string{"1", "11", "2", "9z", "a", "A", "ab", "Ab", "aB", "AB", "abc", "B", "b1", "ComputeBudget", "EPjF", "Memo", "Tokenkeg", "z", "Z"}
	// Expected order under ICU: compare case-insensitively first.
	want := []string{"1", "11", "2", "9z", "a", "A", "ab", "aB", "Ab", "AB", "abc", "B", "b1", "ComputeBudget", "EPjF", "Memo", "Tokenkeg", "z", "Z"}
	got := append([]string(nil), ordered...)
	for i := 1; i < len(got); i++ {
		for j := i; j > 0 && kitAddressCompare(got[j], got[j-1]) < 0; j-- {
			got[j], got[j-1] = got[j-1], got[j]
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
