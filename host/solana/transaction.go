package solana

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
)

// MaxTransactionSize is Solana's packet limit (1280-byte IPv6 MTU minus
// headers). Anything larger can never be sent, so the codec refuses it
// outright, which also bounds the work a hostile payload can cause.
const MaxTransactionSize = 1232

// Transaction is a wire transaction. MessageBytes is authoritative: it is
// what the signatures cover and what Serialize emits, so after editing
// Message a caller must refresh it (t.MessageBytes = t.Message.Serialize())
// before signing; VerifyExact refuses a transaction whose two views differ.
type Transaction struct {
	Signatures   [][64]byte
	Message      Message
	MessageBytes []byte
}

// DecodeTransaction parses wire bytes strictly: any input that Solana would
// reject as malformed, or that has a second encoding of the same content,
// is refused, so a decoded transaction re-serializes to exactly the input.
// Errors wrap ErrMalformedTransaction.
func DecodeTransaction(b []byte) (*Transaction, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty input", ErrMalformedTransaction)
	}
	if len(b) > MaxTransactionSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformedTransaction, len(b), MaxTransactionSize)
	}
	r := &reader{b: b}
	nSig, err := r.shortVec()
	if err != nil {
		return nil, err
	}
	if nSig*64 > len(b)-r.off {
		return nil, fmt.Errorf("%w: %d signatures exceed the input", ErrMalformedTransaction, nSig)
	}
	t := &Transaction{Signatures: make([][64]byte, nSig)}
	for i := range t.Signatures {
		copy(t.Signatures[i][:], b[r.off:])
		r.off += 64
	}
	msgStart := r.off
	if t.Message, err = decodeMessage(r); err != nil {
		return nil, err
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformedTransaction, len(b)-r.off)
	}
	if err := t.Message.sanitize(); err != nil {
		return nil, err
	}
	if nSig != int(t.Message.NumRequiredSignatures) {
		return nil, fmt.Errorf("%w: %d signatures for %d required signers", ErrMalformedTransaction, nSig, t.Message.NumRequiredSignatures)
	}
	t.MessageBytes = bytes.Clone(b[msgStart:])
	return t, nil
}

// Serialize emits the wire form that would be broadcast. It uses
// MessageBytes (falling back to Message.Serialize when empty) so the bytes
// sent are the bytes signed; it returns nil when nothing encodable exists.
func (t *Transaction) Serialize() []byte {
	msg := t.MessageBytes
	if len(msg) == 0 {
		msg = t.Message.Serialize()
	}
	if msg == nil || len(t.Signatures) > maxShortVec {
		return nil
	}
	b := make([]byte, 0, 3+64*len(t.Signatures)+len(msg))
	b = appendShortVec(b, len(t.Signatures))
	for i := range t.Signatures {
		b = append(b, t.Signatures[i][:]...)
	}
	return append(b, msg...)
}

// ErrNotSigner is returned (wrapped) when a key is asked to sign a
// transaction that does not list it as a required signer, which for the
// facilitator means the payment was built for another fee payer.
var ErrNotSigner = errors.New("solana: key is not a required signer")

// SignAs fills priv's signature slot. The slot is found by public key among
// the required signers rather than assumed, so the facilitator cannot
// accidentally overwrite the client's signature.
func (t *Transaction) SignAs(priv ed25519.PrivateKey) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("sign transaction: private key is %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if len(t.MessageBytes) == 0 {
		t.MessageBytes = t.Message.Serialize()
		if t.MessageBytes == nil {
			return fmt.Errorf("sign transaction: %w: message cannot be encoded", ErrMalformedTransaction)
		}
	}
	n := int(t.Message.NumRequiredSignatures)
	if len(t.Signatures) == 0 {
		t.Signatures = make([][64]byte, n)
	}
	if len(t.Signatures) != n {
		return fmt.Errorf("sign transaction: %w: %d signature slots for %d signers", ErrMalformedTransaction, len(t.Signatures), n)
	}
	var pub PublicKey
	copy(pub[:], priv.Public().(ed25519.PublicKey))
	for i := 0; i < n && i < len(t.Message.AccountKeys); i++ {
		if t.Message.AccountKeys[i] == pub {
			copy(t.Signatures[i][:], ed25519.Sign(priv, t.MessageBytes))
			return nil
		}
	}
	return fmt.Errorf("sign transaction as %s: %w", pub, ErrNotSigner)
}

// VerifySignature checks one signer slot against MessageBytes; it answers
// false rather than erroring for out-of-range slots so callers can loop
// over slots without extra bounds logic.
func (t *Transaction) VerifySignature(slot int) bool {
	if slot < 0 || slot >= len(t.Signatures) || slot >= int(t.Message.NumRequiredSignatures) ||
		slot >= len(t.Message.AccountKeys) || len(t.MessageBytes) == 0 {
		return false
	}
	key := t.Message.AccountKeys[slot]
	return ed25519.Verify(ed25519.PublicKey(key[:]), t.MessageBytes, t.Signatures[slot][:])
}
