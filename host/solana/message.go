package solana

import (
	"fmt"
)

// versionPrefix flags a versioned message; legacy messages start with the
// signer count, which is always below 128.
const versionPrefix = 0x80

// CompiledInstruction is an instruction as it travels on the wire: accounts
// and program are indexes into the message's account list, which is why the
// verifier resolves every index before trusting anything.
type CompiledInstruction struct {
	ProgramIndex uint8
	Accounts     []uint8
	Data         []byte
}

// AddressTableLookup is one v0 address-lookup-table reference. The verifier
// refuses any of them (their contents need RPC to resolve), but the codec
// keeps them so arbitrary valid transactions still round-trip exactly.
type AddressTableLookup struct {
	Table    PublicKey
	Writable []uint8
	Readonly []uint8
}

// Message is the signed part of a transaction. Versioned selects the v0
// layout (first byte 0x80) over legacy. AddressTableLookups counts the v0
// lookups and Lookups holds them; Serialize writes Lookups, and the
// decoder keeps both in step. Lookups is an addition to the brief's shape:
// without it a decoded v0 message with lookups could not re-serialize.
type Message struct {
	Versioned             bool
	NumRequiredSignatures uint8
	NumReadonlySigned     uint8
	NumReadonlyUnsigned   uint8
	AccountKeys           []PublicKey
	RecentBlockhash       [32]byte
	Instructions          []CompiledInstruction
	AddressTableLookups   int
	Lookups               []AddressTableLookup
}

// Serialize produces the exact bytes signatures cover. It returns nil when
// the message cannot be encoded at all (a list longer than 65535), so a
// signer can never sign a truncated or ambiguous encoding.
func (m *Message) Serialize() []byte {
	if len(m.AccountKeys) > maxShortVec || len(m.Instructions) > maxShortVec || len(m.Lookups) > maxShortVec {
		return nil
	}
	b := make([]byte, 0, 256)
	if m.Versioned {
		b = append(b, versionPrefix)
	}
	b = append(b, m.NumRequiredSignatures, m.NumReadonlySigned, m.NumReadonlyUnsigned)
	b = appendShortVec(b, len(m.AccountKeys))
	for i := range m.AccountKeys {
		b = append(b, m.AccountKeys[i][:]...)
	}
	b = append(b, m.RecentBlockhash[:]...)
	b = appendShortVec(b, len(m.Instructions))
	for _, ix := range m.Instructions {
		if len(ix.Accounts) > maxShortVec || len(ix.Data) > maxShortVec {
			return nil
		}
		b = append(b, ix.ProgramIndex)
		b = appendShortVec(b, len(ix.Accounts))
		b = append(b, ix.Accounts...)
		b = appendShortVec(b, len(ix.Data))
		b = append(b, ix.Data...)
	}
	if m.Versioned {
		b = appendShortVec(b, len(m.Lookups))
		for _, l := range m.Lookups {
			if len(l.Writable) > maxShortVec || len(l.Readonly) > maxShortVec {
				return nil
			}
			b = append(b, l.Table[:]...)
			b = appendShortVec(b, len(l.Writable))
			b = append(b, l.Writable...)
			b = appendShortVec(b, len(l.Readonly))
			b = append(b, l.Readonly...)
		}
	}
	return b
}

// reader is a bounds-checked cursor; every read fails instead of panicking
// so hostile input can only ever produce an error.
type reader struct {
	b   []byte
	off int
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, fmt.Errorf("%w: truncated at offset %d", ErrMalformedTransaction, r.off)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.off {
		return nil, fmt.Errorf("%w: truncated at offset %d", ErrMalformedTransaction, r.off)
	}
	out := make([]byte, n)
	copy(out, r.b[r.off:r.off+n])
	r.off += n
	return out, nil
}

func (r *reader) shortVec() (int, error) {
	n, used, err := readShortVec(r.b[r.off:])
	if err != nil {
		return 0, fmt.Errorf("at offset %d: %w", r.off, err)
	}
	r.off += used
	return n, nil
}

// key reads a 32-byte value (address or blockhash).
func (r *reader) key() ([32]byte, error) {
	var k [32]byte
	if len(r.b)-r.off < len(k) {
		return k, fmt.Errorf("%w: truncated at offset %d", ErrMalformedTransaction, r.off)
	}
	copy(k[:], r.b[r.off:])
	r.off += len(k)
	return k, nil
}

// decodeMessage parses one message starting at r's cursor; the caller owns
// the trailing-bytes check because the message is the last field.
func decodeMessage(r *reader) (Message, error) {
	var m Message
	first, err := r.byte()
	if err != nil {
		return m, err
	}
	if first&versionPrefix != 0 {
		if v := first &^ versionPrefix; v != 0 {
			return m, fmt.Errorf("%w: unsupported message version %d", ErrMalformedTransaction, v)
		}
		m.Versioned = true
		if m.NumRequiredSignatures, err = r.byte(); err != nil {
			return m, err
		}
	} else {
		m.NumRequiredSignatures = first
	}
	if m.NumReadonlySigned, err = r.byte(); err != nil {
		return m, err
	}
	if m.NumReadonlyUnsigned, err = r.byte(); err != nil {
		return m, err
	}
	nKeys, err := r.shortVec()
	if err != nil {
		return m, err
	}
	// Each key needs 32 bytes; checking up front keeps a hostile count from
	// driving a large allocation.
	if nKeys*32 > len(r.b)-r.off {
		return m, fmt.Errorf("%w: %d account keys exceed the input", ErrMalformedTransaction, nKeys)
	}
	m.AccountKeys = make([]PublicKey, nKeys)
	for i := range m.AccountKeys {
		if m.AccountKeys[i], err = r.key(); err != nil {
			return m, err
		}
	}
	if m.RecentBlockhash, err = r.key(); err != nil {
		return m, err
	}
	nIx, err := r.shortVec()
	if err != nil {
		return m, err
	}
	// The smallest instruction is three bytes (program index, two empty
	// length prefixes).
	if nIx*3 > len(r.b)-r.off {
		return m, fmt.Errorf("%w: %d instructions exceed the input", ErrMalformedTransaction, nIx)
	}
	m.Instructions = make([]CompiledInstruction, nIx)
	for i := range m.Instructions {
		ix := &m.Instructions[i]
		if ix.ProgramIndex, err = r.byte(); err != nil {
			return m, err
		}
		n, err := r.shortVec()
		if err != nil {
			return m, err
		}
		if ix.Accounts, err = r.bytes(n); err != nil {
			return m, err
		}
		if n, err = r.shortVec(); err != nil {
			return m, err
		}
		if ix.Data, err = r.bytes(n); err != nil {
			return m, err
		}
	}
	if m.Versioned {
		nLookups, err := r.shortVec()
		if err != nil {
			return m, err
		}
		if nLookups*34 > len(r.b)-r.off {
			return m, fmt.Errorf("%w: %d lookups exceed the input", ErrMalformedTransaction, nLookups)
		}
		if nLookups > 0 {
			m.Lookups = make([]AddressTableLookup, nLookups)
		}
		for i := range m.Lookups {
			l := &m.Lookups[i]
			if l.Table, err = r.key(); err != nil {
				return m, err
			}
			n, err := r.shortVec()
			if err != nil {
				return m, err
			}
			if l.Writable, err = r.bytes(n); err != nil {
				return m, err
			}
			if n, err = r.shortVec(); err != nil {
				return m, err
			}
			if l.Readonly, err = r.bytes(n); err != nil {
				return m, err
			}
		}
		m.AddressTableLookups = nLookups
	}
	return m, nil
}

// sanitize applies the structural rules the Solana runtime enforces before
// it will even consider a transaction (the "sanitize" step), so the
// verifier never indexes out of range and never approves something the
// cluster would refuse as malformed.
func (m *Message) sanitize() error {
	nStatic := len(m.AccountKeys)
	if !m.Versioned && (len(m.Lookups) != 0 || m.AddressTableLookups != 0) {
		return fmt.Errorf("%w: legacy messages cannot carry lookups", ErrMalformedTransaction)
	}
	if m.AddressTableLookups != len(m.Lookups) {
		return fmt.Errorf("%w: lookup count %d disagrees with %d lookups", ErrMalformedTransaction, m.AddressTableLookups, len(m.Lookups))
	}
	if m.NumReadonlySigned >= m.NumRequiredSignatures {
		return fmt.Errorf("%w: fee payer must be a writable signer", ErrMalformedTransaction)
	}
	if int(m.NumRequiredSignatures) > nStatic ||
		int(m.NumRequiredSignatures)+int(m.NumReadonlyUnsigned) > nStatic {
		return fmt.Errorf("%w: header counts exceed the %d account keys", ErrMalformedTransaction, nStatic)
	}
	total := nStatic
	for i, l := range m.Lookups {
		if len(l.Writable) == 0 && len(l.Readonly) == 0 {
			return fmt.Errorf("%w: lookup %d loads no accounts", ErrMalformedTransaction, i)
		}
		total += len(l.Writable) + len(l.Readonly)
	}
	if total > 256 {
		return fmt.Errorf("%w: %d accounts, at most 256", ErrMalformedTransaction, total)
	}
	seen := make(map[PublicKey]struct{}, nStatic)
	for _, k := range m.AccountKeys {
		if _, dup := seen[k]; dup {
			return fmt.Errorf("%w: duplicate account key", ErrMalformedTransaction)
		}
		seen[k] = struct{}{}
	}
	for i, ix := range m.Instructions {
		// Programs must be static keys, and the fee payer (index 0) can
		// never be invoked as a program.
		if ix.ProgramIndex == 0 || int(ix.ProgramIndex) >= nStatic {
			return fmt.Errorf("%w: instruction %d program index out of range", ErrMalformedTransaction, i)
		}
		for _, a := range ix.Accounts {
			if int(a) >= total {
				return fmt.Errorf("%w: instruction %d account index out of range", ErrMalformedTransaction, i)
			}
		}
	}
	return nil
}

// isWritable reports the write lock a static key gets from the header,
// which is what decides whether a token transfer can actually debit/credit
// the accounts it names.
func (m *Message) isWritable(i int) bool {
	n := int(m.NumRequiredSignatures)
	if i < n {
		return i < n-int(m.NumReadonlySigned)
	}
	return i < len(m.AccountKeys)-int(m.NumReadonlyUnsigned)
}
