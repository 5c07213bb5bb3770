package solana

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"
)

// Defaults of the official x402 client (@x402/svm DEFAULT_COMPUTE_UNIT_LIMIT
// and DEFAULT_COMPUTE_UNIT_PRICE_MICROLAMPORTS).
const (
	DefaultComputeUnitLimit = 20_000
	DefaultComputeUnitPrice = 1
)

// randomMemoBytes is the nonce size the spec asks for (at least 16 bytes,
// hex-encoded so the Memo program's UTF-8 check passes).
const randomMemoBytes = 16

// ErrBuild is returned (wrapped) for parameters that could only produce a
// transaction the verifier or the cluster would refuse.
var ErrBuild = errors.New("solana: cannot build exact transfer")

// BuildParams describes one x402 exact payment as the client sees it.
type BuildParams struct {
	// FeePayer is extra.feePayer from the payment requirements.
	FeePayer PublicKey
	// Payer is the client wallet; it signs as TransferChecked authority.
	Payer        ed25519.PrivateKey
	PayTo        PublicKey
	Mint         PublicKey
	TokenProgram PublicKey
	Amount       uint64
	Decimals     uint8
	// RecentBlockhash bounds the transaction's lifetime (~60-90 s).
	RecentBlockhash [32]byte
	// Memo is extra.memo; nil means a random hex nonce, as the official
	// client does.
	Memo []byte
	// ComputeUnitLimit of zero means DefaultComputeUnitLimit, since a zero
	// limit could never execute the transfer.
	ComputeUnitLimit uint32
	ComputeUnitPrice uint64
}

// accountMeta and instruction are the uncompiled form, before accounts are
// deduplicated and turned into indexes.
type accountMeta struct {
	key              PublicKey
	signer, writable bool
}

type instruction struct {
	program  PublicKey
	accounts []accountMeta
	data     []byte
}

// BuildExactTransfer builds and client-signs the v0 transaction the official
// @x402/svm client builds: SetComputeUnitLimit, SetComputeUnitPrice,
// TransferChecked from the payer's ATA to the payee's ATA, then Memo. The
// fee payer's signature slot is left zero for the facilitator to fill.
func BuildExactTransfer(p BuildParams) (*Transaction, error) {
	if len(p.Payer) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: payer key is %d bytes, want %d", ErrBuild, len(p.Payer), ed25519.PrivateKeySize)
	}
	var payer PublicKey
	copy(payer[:], p.Payer.Public().(ed25519.PublicKey))
	if payer == p.FeePayer {
		return nil, fmt.Errorf("%w: payer and fee payer must differ", ErrBuild)
	}
	if p.TokenProgram != tokenProgramKey && p.TokenProgram != token2022ProgramKey {
		return nil, fmt.Errorf("%w: token program %s is neither Token nor Token-2022", ErrBuild, p.TokenProgram)
	}
	source, err := FindAssociatedTokenAddress(payer, p.Mint, p.TokenProgram)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBuild, err)
	}
	dest, err := FindAssociatedTokenAddress(p.PayTo, p.Mint, p.TokenProgram)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBuild, err)
	}
	memo := p.Memo
	if memo == nil {
		var nonce [randomMemoBytes]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return nil, fmt.Errorf("%w: memo nonce: %w", ErrBuild, err)
		}
		memo = []byte(hex.EncodeToString(nonce[:]))
	}
	if !utf8.Valid(memo) {
		return nil, fmt.Errorf("%w: memo is not UTF-8, the Memo program would fail", ErrBuild)
	}
	limit := p.ComputeUnitLimit
	if limit == 0 {
		limit = DefaultComputeUnitLimit
	}

	limitData := make([]byte, 5)
	limitData[0] = computeBudgetSetLimit
	binary.LittleEndian.PutUint32(limitData[1:], limit)
	priceData := make([]byte, 9)
	priceData[0] = computeBudgetSetPrice
	binary.LittleEndian.PutUint64(priceData[1:], p.ComputeUnitPrice)
	transferData := make([]byte, 10)
	transferData[0] = tokenTransferChecked
	binary.LittleEndian.PutUint64(transferData[1:9], p.Amount)
	transferData[9] = p.Decimals

	ixs := []instruction{
		{program: computeBudgetProgramKey, data: limitData},
		{program: computeBudgetProgramKey, data: priceData},
		{program: p.TokenProgram, data: transferData, accounts: []accountMeta{
			{key: source, writable: true},
			{key: p.Mint},
			{key: dest, writable: true},
			{key: payer, signer: true},
		}},
		{program: memoProgramKey, data: append([]byte(nil), memo...)},
	}
	msg, err := compileMessage(p.FeePayer, ixs, p.RecentBlockhash)
	if err != nil {
		return nil, err
	}
	t := &Transaction{
		Signatures:   make([][64]byte, msg.NumRequiredSignatures),
		Message:      *msg,
		MessageBytes: msg.Serialize(),
	}
	if t.MessageBytes == nil {
		return nil, fmt.Errorf("%w: message cannot be encoded", ErrBuild)
	}
	if n := len(t.Serialize()); n > MaxTransactionSize {
		return nil, fmt.Errorf("%w: transaction is %d bytes, at most %d", ErrBuild, n, MaxTransactionSize)
	}
	if err := t.SignAs(p.Payer); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBuild, err)
	}
	return t, nil
}

// compileMessage turns instructions into a v0 message the way @solana/kit
// does, so our bytes match the official client's: roles are merged per key,
// the fee payer comes first, then signers before non-signers and writable
// before read-only (the order Solana's header requires), and within each
// group keys are sorted by kit's address collation.
func compileMessage(feePayer PublicKey, ixs []instruction, blockhash [32]byte) (*Message, error) {
	type role struct{ signer, writable bool }
	roles := map[PublicKey]*role{feePayer: {signer: true, writable: true}}
	programs := map[PublicKey]bool{}
	upsert := func(k PublicKey, signer, writable bool) {
		r, ok := roles[k]
		if !ok {
			r = &role{}
			roles[k] = r
		}
		r.signer = r.signer || signer
		r.writable = r.writable || writable
	}
	for _, ix := range ixs {
		if ix.program == feePayer {
			return nil, fmt.Errorf("%w: the fee payer cannot be an invoked program", ErrBuild)
		}
		programs[ix.program] = true
		upsert(ix.program, false, false)
		for _, a := range ix.accounts {
			upsert(a.key, a.signer, a.writable)
		}
	}
	for k := range programs {
		if roles[k].writable {
			return nil, fmt.Errorf("%w: invoked program %s cannot be writable", ErrBuild, k)
		}
	}
	if len(roles) > 256 {
		return nil, fmt.Errorf("%w: %d accounts, at most 256", ErrBuild, len(roles))
	}

	keys := make([]PublicKey, 0, len(roles))
	names := make(map[PublicKey]string, len(roles))
	for k := range roles {
		keys = append(keys, k)
		names[k] = k.String()
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if (a == feePayer) != (b == feePayer) {
			return a == feePayer
		}
		ra, rb := roles[a], roles[b]
		if ra.signer != rb.signer {
			return ra.signer
		}
		if ra.writable != rb.writable {
			return ra.writable
		}
		return kitAddressCompare(names[a], names[b]) < 0
	})

	m := &Message{Versioned: true, AccountKeys: keys, RecentBlockhash: blockhash}
	index := make(map[PublicKey]uint8, len(keys))
	for i, k := range keys {
		index[k] = uint8(i)
		r := roles[k]
		switch {
		case r.signer:
			m.NumRequiredSignatures++
			if !r.writable {
				m.NumReadonlySigned++
			}
		case !r.writable:
			m.NumReadonlyUnsigned++
		}
	}
	for _, ix := range ixs {
		ci := CompiledInstruction{ProgramIndex: index[ix.program], Data: ix.data}
		ci.Accounts = make([]uint8, len(ix.accounts))
		for i, a := range ix.accounts {
			ci.Accounts[i] = index[a.key]
		}
		m.Instructions = append(m.Instructions, ci)
	}
	return m, nil
}

// kitAddressCompare mimics @solana/kit's getAddressComparator, an ICU
// collator ("en", caseFirst "lower", sensitivity "variant") over base58
// text. For this alphabet that means: compare case-insensitively with
// digits before letters (shorter prefix first); only if that ties, the
// first position whose case differs decides, lower case first.
func kitAddressCompare(a, b string) int {
	primary := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return int(c - '0')
		case c >= 'a' && c <= 'z':
			return 10 + int(c-'a')
		case c >= 'A' && c <= 'Z':
			return 10 + int(c-'A')
		}
		return 100 + int(c)
	}
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if pa, pb := primary(a[i]), primary(b[i]); pa != pb {
			return pa - pb
		}
	}
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] >= 'a' && a[i] <= 'z' {
				return -1
			}
			return 1
		}
	}
	return 0
}
