// Package redelivery keeps a paid answer so that a re-send of the same
// paid request, and only that, can have it again: the answer is sealed
// (AES-256-GCM) under a key derived from the host's redelivery secret,
// the payment, the payer's payment identifier when it sent one, and a
// digest of the submission. The store holds the sealed bytes and nothing
// it could open them with: neither the secret (the operator's key secret,
// or a file in the data dir) nor the submission nor its digest is ever
// stored, so a copy of the store proves nothing about any submission, and
// a re-send with another submission opens nothing.
package redelivery

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FileName is the data dir's redelivery secret, when the host has no
// operator's key secret to derive it from.
const FileName = "redelivery.key"

// secretBytes is the length of a redelivery secret file.
const secretBytes = 32

// Errors; static, never quoting an answer or a submission.
var (
	// ErrMismatch: the sealed answer does not open for this payment,
	// identifier and submission (another submission, most likely).
	ErrMismatch = errors.New("redelivery: the issued answer is another submission's")
	// ErrSecret: a secret too short to derive keys from.
	ErrSecret = errors.New("redelivery: the secret is shorter than 32 bytes")
)

// Digest is a submission's digest, held in memory for one request only.
type Digest [sha256.Size]byte

// DigestOf digests a submission's bytes.
func DigestOf(body []byte) Digest {
	d, _ := DigestReader(bytes.NewReader(body)) // a bytes.Reader never fails
	return d
}

// DigestReader digests a submission read from r.
func DigestReader(r io.Reader) (Digest, error) {
	h := sha256.New()
	h.Write([]byte("assay-redelivery-body/1\x00"))
	var d Digest
	if _, err := io.Copy(h, r); err != nil {
		return d, fmt.Errorf("redelivery: digest: %w", err)
	}
	h.Sum(d[:0])
	return d, nil
}

// Answer is an issued answer as it was written: its headers and body.
type Answer struct {
	Header map[string]string
	Body   []byte
}

// frame is an answer's plaintext: each header as two length-prefixed
// strings, a zero-length name to end them, then the body (the rest).
// JSON would spend as much again encoding the body as the cipher does.
func (a Answer) frame() []byte {
	n := len(a.Body) + 4
	for k, v := range a.Header {
		n += len(k) + len(v) + 8
	}
	out := make([]byte, 0, n)
	for k, v := range a.Header {
		if k == "" {
			continue
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(k)))
		out = append(out, k...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(v)))
		out = append(out, v...)
	}
	out = binary.BigEndian.AppendUint32(out, 0)
	return append(out, a.Body...)
}

// unframe reads a frame back; false when it is not one.
func unframe(p []byte) (Answer, bool) {
	a := Answer{Header: map[string]string{}}
	next := func() (string, bool) {
		if len(p) < 4 {
			return "", false
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return "", false
		}
		v := string(p[:n])
		p = p[n:]
		return v, true
	}
	for {
		k, ok := next()
		if !ok {
			return a, false
		}
		if k == "" {
			a.Body = p
			return a, true
		}
		v, ok := next()
		if !ok {
			return a, false
		}
		a.Header[k] = v
	}
}

// Sealer seals and opens answers under one redelivery secret.
type Sealer struct {
	master []byte
	kid    string
}

// New derives a Sealer from a secret of at least 32 bytes. Every host of
// a fleet must derive from the same secret to open each other's answers.
func New(secret []byte) (*Sealer, error) {
	if len(secret) < secretBytes {
		return nil, ErrSecret
	}
	master, err := hkdf.Key(sha256.New, secret, nil, "assay redelivery master/1", 32)
	if err != nil {
		return nil, fmt.Errorf("redelivery: derive: %w", err)
	}
	m := hmac.New(sha256.New, master)
	m.Write([]byte("seal key id"))
	return &Sealer{master: master, kid: hex.EncodeToString(m.Sum(nil)[:8])}, nil
}

// Open reads the data dir's redelivery secret, making it (mode 0600) on
// first use.
func Open(dir string) (*Sealer, error) {
	path := filepath.Join(dir, FileName)
	secret, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		secret = make([]byte, secretBytes)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("redelivery: secret: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("redelivery: data dir: %w", err)
		}
		// O_EXCL: of two first starts on one dir, one writes, the other reads it
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return Open(dir)
		}
		if err != nil {
			return nil, fmt.Errorf("redelivery: secret: %w", err)
		}
		if _, err := f.Write(secret); err != nil {
			f.Close()
			return nil, fmt.Errorf("redelivery: secret: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("redelivery: secret: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("redelivery: secret: %w", err)
	}
	return New(secret)
}

// KID names the secret (a MAC of it, not it): a host meeting an answer
// sealed under another secret (a fleet whose hosts do not share a key
// secret) knows it cannot tell a mismatch from a stranger's seal.
func (s *Sealer) KID() string { return s.kid }

// key is one answer's key: nothing of it is stored.
func (s *Sealer) key(paymentID, identifier string, d Digest) ([]byte, error) {
	info := "answer/1\x00" + identifier + "\x00" + string(d[:])
	return hkdf.Key(sha256.New, s.master, []byte(paymentID), info, 32)
}

func (s *Sealer) aead(paymentID, identifier string, d Digest) (cipher.AEAD, error) {
	k, err := s.key(paymentID, identifier, d)
	if err != nil {
		return nil, fmt.Errorf("redelivery: derive: %w", err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, fmt.Errorf("redelivery: cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// Seal seals an answer for the payment, identifier ("" for none) and
// submission digest it was issued for.
func (s *Sealer) Seal(paymentID, identifier string, d Digest, a Answer) (string, error) {
	plain := a.frame()
	g, err := s.aead(paymentID, identifier, d)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, g.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("redelivery: nonce: %w", err)
	}
	return base64.StdEncoding.EncodeToString(g.Seal(nonce, nonce, plain, []byte(paymentID))), nil
}

// Open opens a sealed answer: ErrMismatch when it was sealed for another
// payment, identifier or submission.
func (s *Sealer) Open(paymentID, identifier string, d Digest, sealed string) (Answer, error) {
	var a Answer
	raw, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return a, ErrMismatch
	}
	g, err := s.aead(paymentID, identifier, d)
	if err != nil {
		return a, err
	}
	if len(raw) < g.NonceSize() {
		return a, ErrMismatch
	}
	plain, err := g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte(paymentID))
	if err != nil {
		return a, ErrMismatch
	}
	a, ok := unframe(plain)
	if !ok {
		return a, ErrMismatch
	}
	return a, nil
}
