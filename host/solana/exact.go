package solana

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf8"
)

// Refusal reasons. They are the x402 reference facilitator's
// invalid_exact_svm_* codes (coinbase/x402 @x402/svm errors.ts and the
// older v1 list) so resource servers and clients see familiar strings.
// They are static on purpose: a reason never echoes payload values back.
const (
	ReasonCouldNotBeDecoded         = "invalid_exact_svm_payload_transaction_could_not_be_decoded"
	ReasonTransaction               = "invalid_exact_svm_payload_transaction"
	ReasonFeePayerMismatch          = "invalid_exact_svm_fee_payer_mismatch"
	ReasonSignatureInvalid          = "invalid_exact_svm_payload_signature_invalid"
	ReasonInstructionsLength        = "invalid_exact_svm_payload_transaction_instructions_length"
	ReasonComputeLimitInstruction   = "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction"
	ReasonComputePriceInstruction   = "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction"
	ReasonComputePriceTooHigh       = "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high"
	ReasonNoTransferInstruction     = "invalid_exact_svm_payload_no_transfer_instruction"
	ReasonFeePayerTransferringFunds = "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds"
	ReasonFeePayerInAccounts        = "invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts"
	ReasonMintMismatch              = "invalid_exact_svm_payload_mint_mismatch"
	ReasonRecipientMismatch         = "invalid_exact_svm_payload_recipient_mismatch"
	ReasonAmountMismatch            = "invalid_exact_svm_payload_amount_mismatch"
	ReasonUnknownFourthInstruction  = "invalid_exact_svm_payload_unknown_fourth_instruction"
	ReasonUnknownFifthInstruction   = "invalid_exact_svm_payload_unknown_fifth_instruction"
	ReasonUnknownSixthInstruction   = "invalid_exact_svm_payload_unknown_sixth_instruction"
	ReasonMemoCount                 = "invalid_exact_svm_payload_memo_count"
	ReasonMemoMismatch              = "invalid_exact_svm_payload_memo_mismatch"
	// ReasonSimulationFailed is what the reference returns when simulation
	// fails. The local facilitator cannot simulate, so it uses this code for
	// the few statically certain on-chain failures it can see (a memo that
	// is not UTF-8 or names a non-signer, a transfer whose token accounts are
	// not writable): co-signing those would only burn the fee payer's fee.
	ReasonSimulationFailed = "invalid_exact_svm_transaction_simulation_failed"
)

// ReferenceMaxComputeUnitPrice is the reference facilitator's priority-fee
// cap (5 lamports per compute unit, in micro-lamports); ExactRules uses it
// when MaxComputeUnitPrice is left at zero.
const ReferenceMaxComputeUnitPrice = 5_000_000

// Instruction discriminators the scheme pins down.
const (
	computeBudgetSetLimit = 2
	computeBudgetSetPrice = 3
	tokenTransferChecked  = 12
)

// Fee arithmetic constants of the Solana fee schedule.
const (
	lamportsPerSignature    = 5000
	microLamportsPerLamport = 1_000_000
)

// Invalid is a policy refusal: the transaction decoded but must not be
// co-signed. Reason is one of the static Reason* codes, safe to return to
// the paying client verbatim.
type Invalid struct{ Reason string }

// Error returns the bare reason so it can go straight into x402 responses.
func (e *Invalid) Error() string { return e.Reason }

func invalid(reason string) (*ExactTransfer, error) {
	return nil, &Invalid{Reason: reason}
}

// ExactRules is what the payment requirements demand of the transaction.
type ExactRules struct {
	// FeePayer is the facilitator key the requirements advertised in
	// extra.feePayer; it must be static key 0 and touch nothing else.
	FeePayer PublicKey
	PayTo    PublicKey
	Mint     PublicKey
	Amount   uint64
	// MaxComputeUnitPrice caps the priority fee in micro-lamports per
	// compute unit; zero means ReferenceMaxComputeUnitPrice, because a zero
	// cap would refuse the official client (which bids 1) and is never
	// what a caller means.
	MaxComputeUnitPrice uint64
	// Memo is extra.memo when the requirements set one.
	Memo *string
}

// ExactTransfer is what a verified payment commits to, for the caller to
// record and settle against.
type ExactTransfer struct {
	// Payer is the TransferChecked authority, i.e. the client wallet that
	// x402 reports as "payer".
	Payer            PublicKey
	Source           PublicKey
	Destination      PublicKey
	Mint             PublicKey
	TokenProgram     PublicKey
	Amount           uint64
	Decimals         uint8
	ComputeUnitLimit uint32
	ComputeUnitPrice uint64
	// Memo is the data of the first Memo instruction, nil when there is none.
	Memo []byte
}

// FeeLamports is the most the fee payer can be charged for this
// transaction: the base fee per signature plus the priority fee
// ceil(price * limit / 1e6). It saturates rather than wrapping so an absurd
// bid can never look cheap.
func (x *ExactTransfer) FeeLamports(numSignatures int) uint64 {
	if numSignatures < 0 {
		numSignatures = 0
	}
	hi, lo := bits.Mul64(x.ComputeUnitPrice, uint64(x.ComputeUnitLimit))
	lo, carry := bits.Add64(lo, microLamportsPerLamport-1, 0)
	hi += carry
	var priority uint64
	if hi >= microLamportsPerLamport {
		priority = math.MaxUint64
	} else {
		priority, _ = bits.Div64(hi, lo, microLamportsPerLamport)
	}
	baseHi, base := bits.Mul64(uint64(numSignatures), lamportsPerSignature)
	if baseHi != 0 {
		return math.MaxUint64
	}
	total, c := bits.Add64(base, priority, 0)
	if c != 0 {
		return math.MaxUint64
	}
	return total
}

// VerifyExact decides whether the facilitator may co-sign t as fee payer
// under the x402 exact-scheme rules (scheme_exact_svm.md, "Facilitator
// Verification Rules") plus the reference facilitator's static checks. It
// only ever fails with *Invalid. It cannot check account existence (the
// source ATA, and the destination ATA since no create-ATA instruction is
// allowed), balances, the mint's decimals or simulation: those need RPC and
// remain the job of whoever broadcasts.
func VerifyExact(t *Transaction, r ExactRules) (*ExactTransfer, error) {
	if t == nil {
		return invalid(ReasonCouldNotBeDecoded)
	}
	m := &t.Message
	// Lookup tables would hide accounts (possibly the fee payer) behind
	// on-chain state we cannot read offline.
	if m.AddressTableLookups != 0 || len(m.Lookups) != 0 {
		return invalid(ReasonTransaction)
	}
	if m.sanitize() != nil {
		return invalid(ReasonTransaction)
	}
	// The checks below read Message while signatures cover MessageBytes;
	// they must be the same message or we would approve one thing and sign
	// another.
	if len(t.MessageBytes) == 0 || !bytes.Equal(m.Serialize(), t.MessageBytes) {
		return invalid(ReasonTransaction)
	}
	if len(t.Signatures) != int(m.NumRequiredSignatures) || m.NumRequiredSignatures < 2 {
		return invalid(ReasonTransaction)
	}
	keys := m.AccountKeys
	if keys[0] != r.FeePayer {
		return invalid(ReasonFeePayerMismatch)
	}
	// Slot 0 belongs to the fee payer, which signs last; it may be empty
	// but must not carry a bogus value.
	if t.Signatures[0] != ([64]byte{}) && !t.VerifySignature(0) {
		return invalid(ReasonSignatureInvalid)
	}
	for i := 1; i < len(t.Signatures); i++ {
		if !t.VerifySignature(i) {
			return invalid(ReasonSignatureInvalid)
		}
	}

	ixs := m.Instructions
	if len(ixs) < 3 || len(ixs) > 6 {
		return invalid(ReasonInstructionsLength)
	}
	program := func(ix CompiledInstruction) PublicKey { return keys[ix.ProgramIndex] }

	limitIx := ixs[0]
	if program(limitIx) != computeBudgetProgramKey || len(limitIx.Accounts) != 0 ||
		len(limitIx.Data) != 5 || limitIx.Data[0] != computeBudgetSetLimit {
		return invalid(ReasonComputeLimitInstruction)
	}
	priceIx := ixs[1]
	if program(priceIx) != computeBudgetProgramKey || len(priceIx.Accounts) != 0 ||
		len(priceIx.Data) != 9 || priceIx.Data[0] != computeBudgetSetPrice {
		return invalid(ReasonComputePriceInstruction)
	}
	maxPrice := r.MaxComputeUnitPrice
	if maxPrice == 0 {
		maxPrice = ReferenceMaxComputeUnitPrice
	}
	price := binary.LittleEndian.Uint64(priceIx.Data[1:])
	if price > maxPrice {
		return invalid(ReasonComputePriceTooHigh)
	}

	transferIx := ixs[2]
	tokenProgram := program(transferIx)
	if (tokenProgram != tokenProgramKey && tokenProgram != token2022ProgramKey) ||
		len(transferIx.Data) != 10 || transferIx.Data[0] != tokenTransferChecked ||
		len(transferIx.Accounts) != 4 {
		return invalid(ReasonNoTransferInstruction)
	}
	// Lookups are refused above, so every account index is a static key.
	srcIdx, mintIdx, dstIdx, authIdx := int(transferIx.Accounts[0]), int(transferIx.Accounts[1]),
		int(transferIx.Accounts[2]), int(transferIx.Accounts[3])
	x := &ExactTransfer{
		Payer:            keys[authIdx],
		Source:           keys[srcIdx],
		Destination:      keys[dstIdx],
		Mint:             keys[mintIdx],
		TokenProgram:     tokenProgram,
		Amount:           binary.LittleEndian.Uint64(transferIx.Data[1:9]),
		Decimals:         transferIx.Data[9],
		ComputeUnitLimit: binary.LittleEndian.Uint32(limitIx.Data[1:]),
		ComputeUnitPrice: price,
	}
	if x.Payer == r.FeePayer || x.Source == r.FeePayer {
		return invalid(ReasonFeePayerTransferringFunds)
	}
	// An authority that does not sign means the transfer cannot execute;
	// it is not a transfer the client authorised.
	if authIdx >= int(m.NumRequiredSignatures) {
		return invalid(ReasonNoTransferInstruction)
	}
	if !m.isWritable(srcIdx) || !m.isWritable(dstIdx) {
		return invalid(ReasonSimulationFailed)
	}
	if x.Mint != r.Mint {
		return invalid(ReasonMintMismatch)
	}
	wantDst, err := FindAssociatedTokenAddress(r.PayTo, r.Mint, tokenProgram)
	if err != nil || x.Destination != wantDst {
		return invalid(ReasonRecipientMismatch)
	}
	if x.Amount != r.Amount {
		return invalid(ReasonAmountMismatch)
	}

	// Optional slots follow the spec's list: positions 4 and 5 may be
	// Lighthouse or Memo, position 6 only Memo (so at most two Lighthouse).
	unknown := [...]string{ReasonUnknownFourthInstruction, ReasonUnknownFifthInstruction, ReasonUnknownSixthInstruction}
	for i, ix := range ixs[3:] {
		p := program(ix)
		if p == memoProgramKey || (p == lighthouseProgramKey && i < 2) {
			continue
		}
		return invalid(unknown[i])
	}

	// The fee payer must be inert: not an account of any instruction (so no
	// program can debit or reassign it) and not an invoked program.
	for _, ix := range ixs {
		if program(ix) == r.FeePayer {
			return invalid(ReasonFeePayerInAccounts)
		}
		for _, a := range ix.Accounts {
			if keys[a] == r.FeePayer {
				return invalid(ReasonFeePayerInAccounts)
			}
		}
	}

	memos := 0
	for _, ix := range ixs[3:] {
		if program(ix) != memoProgramKey {
			continue
		}
		// The Memo program fails on non-UTF-8 data and on listed accounts
		// that did not sign.
		if !utf8.Valid(ix.Data) {
			return invalid(ReasonSimulationFailed)
		}
		for _, a := range ix.Accounts {
			if int(a) >= int(m.NumRequiredSignatures) {
				return invalid(ReasonSimulationFailed)
			}
		}
		if memos == 0 {
			x.Memo = bytes.Clone(ix.Data)
			if x.Memo == nil {
				x.Memo = []byte{}
			}
		}
		memos++
	}
	if r.Memo != nil {
		if memos != 1 {
			return invalid(ReasonMemoCount)
		}
		if !bytes.Equal(x.Memo, []byte(*r.Memo)) {
			return invalid(ReasonMemoMismatch)
		}
	}
	return x, nil
}
