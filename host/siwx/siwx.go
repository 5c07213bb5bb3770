// Package siwx is x402's sign-in-with-x extension (CAIP-122; the SIWS
// message of Solana wallets) as the host uses it: a free pre-check proves
// the wallet its allowance is counted against. The host issues challenges
// (the extension an answer declares) and checks the proofs clients send
// back in the SIGN-IN-WITH-X header; the host's own clients sign them.
//
// A challenge's nonce is 8 random bytes and 8 bytes of an HMAC, under a
// key every host on one store derives from the store's secret, over the
// random bytes and every message field the host issued (domain, uri,
// statement, issuedAt, expirationTime, resources): any host of a fleet
// recognises its fleet's nonces without storing the ones it issued, and a
// client can neither make one up, nor stretch one's life, nor have a
// wallet sign other words under it. A nonce is spent once: the store records it until
// no host would accept its challenge anyway.
package siwx

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/assay-audit/assay/host/solana"
)

// The extension's names and the host's choices within it.
const (
	// Key names the extension in a PaymentRequired's extensions.
	Key = "sign-in-with-x"
	// Header carries a proof: base64 (standard, padded) of its JSON.
	Header = "SIGN-IN-WITH-X"
	// Version is CAIP-122's message version, always "1".
	Version = "1"
	// TypeEd25519 is the signature type of Solana wallets.
	TypeEd25519 = "ed25519"
	// TTL is how long a challenge stands from its issuedAt (the
	// extension's default: 5 minutes).
	TTL = 5 * time.Minute
	// Skew is how far ahead of a host's clock another host of its fleet
	// may have issued a challenge: issuedAt that far in the future is the
	// fleet's clocks, not a forgery (the nonce binds issuedAt).
	Skew = 30 * time.Second
	// Statement is what a wallet is asked to sign for.
	Statement = "Count free pre-checks against this wallet's allowance. Signing moves no funds."
	// Ask is the SIGN-IN-WITH-X value of a request for a challenge alone:
	// like any value that is no proof, it is refused before the body is
	// read, nothing counted, and the refusal carries a fresh challenge.
	Ask = "challenge"
	// DefaultChain is the CAIP-2 chain a host without published payment
	// terms names (the configuration's default network, Solana devnet):
	// a wallet's key is the same on every Solana chain.
	DefaultChain = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
)

// stampLayout is an instant as JavaScript's toISOString writes it, the
// form the official implementation issues and clients echo.
const stampLayout = "2006-01-02T15:04:05.000Z"

// Info is a challenge's message fields (extensions["sign-in-with-x"].info).
type Info struct {
	Domain         string   `json:"domain"`
	URI            string   `json:"uri"`
	Statement      string   `json:"statement,omitempty"`
	Version        string   `json:"version"`
	Nonce          string   `json:"nonce"`
	IssuedAt       string   `json:"issuedAt"`
	ExpirationTime string   `json:"expirationTime,omitempty"`
	NotBefore      string   `json:"notBefore,omitempty"`
	RequestID      string   `json:"requestId,omitempty"`
	Resources      []string `json:"resources,omitempty"`
}

// Chain is one entry of supportedChains.
type Chain struct {
	ChainID string `json:"chainId"`
	Type    string `json:"type"`
}

// Extension is a challenge: the extension object a PaymentRequired (or a
// pre-check answer's sign_in member) declares.
type Extension struct {
	Info            Info            `json:"info"`
	SupportedChains []Chain         `json:"supportedChains"`
	Schema          json.RawMessage `json:"schema"`
}

// schema is the proof's JSON Schema, as the extension publishes it.
const schema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"properties":{"domain":{"type":"string"},"address":{"type":"string"},"statement":{"type":"string"},` +
	`"uri":{"type":"string","format":"uri"},"version":{"type":"string"},"chainId":{"type":"string"},"type":{"type":"string"},` +
	`"nonce":{"type":"string"},"issuedAt":{"type":"string","format":"date-time"},` +
	`"expirationTime":{"type":"string","format":"date-time"},"notBefore":{"type":"string","format":"date-time"},` +
	`"requestId":{"type":"string"},"resources":{"type":"array","items":{"type":"string","format":"uri"}},"signature":{"type":"string"}},` +
	`"required":["domain","address","uri","version","chainId","type","nonce","issuedAt","signature"]}`

// Proof is what a client sends back: the challenge's fields, the chain
// it chose, its address and its signature over the message.
type Proof struct {
	Domain          string   `json:"domain"`
	Address         string   `json:"address"`
	Statement       string   `json:"statement,omitempty"`
	URI             string   `json:"uri"`
	Version         string   `json:"version"`
	ChainID         string   `json:"chainId"`
	Type            string   `json:"type"`
	Nonce           string   `json:"nonce"`
	IssuedAt        string   `json:"issuedAt"`
	ExpirationTime  string   `json:"expirationTime,omitempty"`
	NotBefore       string   `json:"notBefore,omitempty"`
	RequestID       string   `json:"requestId,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	SignatureScheme string   `json:"signatureScheme,omitempty"`
	Signature       string   `json:"signature"`
}

// Message is the Sign-In With Solana text the proof's signature is over
// (CAIP-122's ABNF with "Solana account"; Chain ID is the CAIP-2
// reference, the genesis hash), lines joined by "\n", none trailing.
func (p *Proof) Message() string {
	var b strings.Builder
	line := func(s string) { b.WriteString(s); b.WriteByte('\n') }
	line(p.Domain + " wants you to sign in with your Solana account:")
	line(p.Address)
	line("")
	if p.Statement != "" {
		line(p.Statement)
		line("")
	}
	_, reference, _ := strings.Cut(p.ChainID, ":")
	line("URI: " + p.URI)
	line("Version: " + p.Version)
	line("Chain ID: " + reference)
	line("Nonce: " + p.Nonce)
	line("Issued At: " + p.IssuedAt)
	for _, f := range []struct{ name, v string }{{"Expiration Time", p.ExpirationTime}, {"Not Before", p.NotBefore}, {"Request ID", p.RequestID}} {
		if f.v != "" {
			line(f.name + ": " + f.v)
		}
	}
	if len(p.Resources) > 0 {
		line("Resources:")
		for _, r := range p.Resources {
			line("- " + r)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Refusal is why a proof is not accepted: a static word, never any part
// of the proof.
type Refusal string

// The refusals, as the host's siwx_invalid answer names them (error.reason).
const (
	// NotAProof: the header is not base64 JSON of a proof with every
	// required field (Ask is one such value).
	NotAProof Refusal = "not_a_proof"
	// WrongVersion: version is not "1".
	WrongVersion Refusal = "version"
	// WrongChain: chainId is not the host's chain, or type not ed25519.
	WrongChain Refusal = "chain"
	// WrongDomain: domain is not the request's host.
	WrongDomain Refusal = "domain"
	// WrongURI: uri is not the URL the request was sent to.
	WrongURI Refusal = "uri"
	// UnknownNonce: no host of this fleet issued this challenge (the
	// nonce, or a message field it binds, is not as issued).
	UnknownNonce Refusal = "nonce"
	// Expired: the challenge's time is over (5 minutes from issuedAt).
	Expired Refusal = "expired"
	// NotYetValid: issuedAt is in the future (beyond Skew), or notBefore
	// not reached.
	NotYetValid Refusal = "not_yet_valid"
	// BadAddress: address is not a Solana address (base58, 32 bytes).
	BadAddress Refusal = "address"
	// BadSignature: signature is not address's Ed25519 signature (base58,
	// 64 bytes) over the message.
	BadSignature Refusal = "signature"
	// Replayed: the challenge was used already.
	Replayed Refusal = "replayed"
	// CallerMismatch: the proof's address is not the body's caller.
	CallerMismatch Refusal = "caller_mismatch"
)

func (r Refusal) Error() string { return "siwx: proof refused: " + string(r) }

// Nonces records spent nonces (the store).
type Nonces interface {
	// UseSignInNonce records nonce as spent until keep; fresh is false
	// when it was spent already.
	UseSignInNonce(ctx context.Context, nonce string, keep time.Time) (fresh bool, err error)
	// SweepSignInNonces deletes the records kept until before now.
	SweepSignInNonces(ctx context.Context, now time.Time) (int64, error)
}

// Service issues challenges and checks proofs for one fleet (one store).
type Service struct {
	key    []byte
	nonces Nonces
	// origin, when set, is the fleet's public base URL (scheme://host
	// and any base path; the host originHost): the challenges bind it
	// whatever Host a request names
	origin, originHost string
	// every sweepEvery-th spent nonce sweeps the records no proof can
	// use any more
	sweepEvery int64
	spent      atomic.Int64
}

// keyLabel separates the nonce key from every other use of the store's
// secret (the free tier's digests are HMACs of inputs holding a NUL,
// which this label never does).
const keyLabel = "assay sign-in-with-x nonce key v1"

// New is the service of the fleet whose store secret is secret (a
// separate key is derived from it), recording spent nonces in nonces.
// publicURL, when not "", is the fleet's public base URL (the operator's
// public_url): challenges then bind its host and scheme, never a Host a
// request names, so no site that relays requests to the host with its
// own Host gets a wallet's proof for it (x402's official client signs
// only a challenge whose domain is the host it asked).
func New(secret []byte, nonces Nonces, publicURL string) (*Service, error) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(keyLabel))
	s := &Service{key: m.Sum(nil), nonces: nonces, sweepEvery: 256}
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || u.Scheme != "http" && u.Scheme != "https" || !hostName(u.Host) {
			return nil, errors.New("siwx: the public URL is not an http(s) URL with a host")
		}
		// the base's path too, as the payment gate writes resource.url
		s.originHost = urlHost(u.Scheme, u.Host)
		s.origin = u.Scheme + "://" + s.originHost + strings.TrimRight(u.EscapedPath(), "/")
	}
	return s, nil
}

// Target is what a challenge for a request to path binds: the host and
// scheme of the fleet's public URL when it has one, else the request's
// own (scheme, as the connection or a trusted proxy says, and Host); a
// URL's host either way, its port dropped when the scheme's default (as
// a URL's host is written, and as the official client compares domain).
// ok is false for a Host that is no host name (nothing of it is echoed).
func (s *Service) Target(scheme, host, path, chain string) (Target, bool) {
	if s.origin != "" {
		return Target{Domain: s.originHost, URI: s.origin + path, Chain: chain}, true
	}
	if !hostName(host) {
		return Target{}, false
	}
	h := urlHost(scheme, host)
	return Target{Domain: h, URI: scheme + "://" + h + path, Chain: chain}, true
}

// urlHost is host as a URL of scheme writes it: lower case, without the
// scheme's default port.
func urlHost(scheme, host string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil && (scheme == "https" && port == "443" || scheme == "http" && port == "80") {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return host
}

// hostName is whether h is a host[:port] of a name or an address: the
// characters a URL's authority takes for one, nothing a message line or a
// URL could be bent with.
func hostName(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)) {
			return false
		}
	}
	return true
}

// Target is what a challenge is for: one request's host and URL, on the
// host's chain.
type Target struct {
	// Domain is the request's host as a URL's host is written: its name
	// and a port other than the scheme's default (x402's official client
	// refuses to sign a challenge whose domain is not the host it sent
	// the request to).
	Domain string
	// URI is the URL the request was sent to (scheme, host, path).
	URI string
	// Chain is the host's CAIP-2 chain.
	Chain string
}

// Challenge is a fresh challenge for t, issued at now.
func (s *Service) Challenge(t Target, now time.Time) (Extension, error) {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:8]); err != nil {
		return Extension{}, fmt.Errorf("siwx: nonce: %w", err)
	}
	issued := now.UTC().Truncate(time.Millisecond)
	info := Info{Domain: t.Domain, URI: t.URI, Statement: Statement, Version: Version,
		IssuedAt: issued.Format(stampLayout), ExpirationTime: issued.Add(TTL).Format(stampLayout), Resources: []string{t.URI}}
	copy(nonce[8:], s.mac(nonce[:8], info.Domain, info.URI, info.Statement, info.IssuedAt, info.ExpirationTime, info.NotBefore, info.RequestID, info.Resources))
	info.Nonce = hex.EncodeToString(nonce[:])
	return Extension{Info: info, SupportedChains: []Chain{{ChainID: t.Chain, Type: TypeEd25519}}, Schema: json.RawMessage(schema)}, nil
}

// mac is the nonce's second half: the HMAC of its random half and every
// message field the host issues (a proof that adds or edits one is no
// challenge the fleet issued), cut to 8 bytes.
func (s *Service) mac(random []byte, domain, uri, statement, issuedAt, expiration, notBefore, requestID string, resources []string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(random)
	for _, f := range []string{domain, uri, statement, issuedAt, expiration, notBefore, requestID} {
		m.Write([]byte{0})
		m.Write([]byte(f))
	}
	// as JSON: the list's split is bound too
	list, _ := json.Marshal(resources)
	m.Write([]byte{0})
	m.Write(list)
	return m.Sum(nil)[:8]
}

// maxHeader bounds a proof's header: a real one is under 1 KiB.
const maxHeader = 8 << 10

// Parse decodes a SIGN-IN-WITH-X value; every required field must be
// there (NotAProof otherwise).
func Parse(header string) (*Proof, error) {
	if len(header) > maxHeader {
		return nil, NotAProof
	}
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		return nil, NotAProof
	}
	var p Proof
	if json.Unmarshal(raw, &p) != nil {
		return nil, NotAProof
	}
	for _, v := range []string{p.Domain, p.Address, p.URI, p.Version, p.ChainID, p.Type, p.Nonce, p.IssuedAt, p.Signature} {
		if v == "" {
			return nil, NotAProof
		}
	}
	return &p, nil
}

// Check is header's proof when it holds for t at now: everything but
// whether its nonce was spent before (Spend). It touches no store, so a
// host refuses a bad proof before it reads the request's body.
func (s *Service) Check(header string, t Target, now time.Time) (*Proof, error) {
	p, err := Parse(header)
	if err != nil {
		return nil, err
	}
	switch {
	case p.Version != Version:
		return nil, WrongVersion
	case p.ChainID != t.Chain || p.Type != TypeEd25519:
		return nil, WrongChain
	case p.Domain != t.Domain:
		return nil, WrongDomain
	case p.URI != t.URI:
		return nil, WrongURI
	}
	nonce, err := hex.DecodeString(p.Nonce)
	if err != nil || len(nonce) != 16 || p.Nonce != strings.ToLower(p.Nonce) ||
		!hmac.Equal(nonce[8:], s.mac(nonce[:8], p.Domain, p.URI, p.Statement, p.IssuedAt, p.ExpirationTime, p.NotBefore, p.RequestID, p.Resources)) {
		return nil, UnknownNonce
	}
	if err := inTime(p, now); err != nil {
		return nil, err
	}
	pub, err := solana.DecodeBase58(p.Address)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, BadAddress
	}
	sig, err := solana.DecodeBase58(p.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize || !ed25519.Verify(ed25519.PublicKey(pub), []byte(p.Message()), sig) {
		return nil, BadSignature
	}
	return p, nil
}

// inTime checks the proof's instants at now: issued within TTL and not
// ahead of now (beyond Skew), not expired, past notBefore.
func inTime(p *Proof, now time.Time) error {
	issued, err := time.Parse(time.RFC3339Nano, p.IssuedAt)
	if err != nil {
		return UnknownNonce // the nonce bound it as issued: this is no issued challenge
	}
	switch {
	case issued.After(now.Add(Skew)):
		return NotYetValid
	case now.Sub(issued) >= TTL:
		return Expired
	}
	if p.ExpirationTime != "" {
		exp, err := time.Parse(time.RFC3339Nano, p.ExpirationTime)
		if err != nil || !now.Before(exp) {
			return Expired
		}
	}
	if p.NotBefore != "" {
		nb, err := time.Parse(time.RFC3339Nano, p.NotBefore)
		if err != nil || now.Before(nb) {
			return NotYetValid
		}
	}
	return nil
}

// Spend records a checked proof's nonce as spent; Replayed when it was
// spent before, on any host of the fleet. The record is kept while any
// host could still accept the challenge (its TTL, and Skew for a host
// whose clock is behind).
func (s *Service) Spend(ctx context.Context, p *Proof, now time.Time) error {
	issued, err := time.Parse(time.RFC3339Nano, p.IssuedAt)
	if err != nil {
		return UnknownNonce
	}
	fresh, err := s.nonces.UseSignInNonce(ctx, p.Nonce, issued.Add(TTL+Skew))
	if err != nil {
		return fmt.Errorf("siwx: spend nonce: %w", err)
	}
	if !fresh {
		return Replayed
	}
	if s.spent.Add(1)%s.sweepEvery == 0 {
		// housekeeping: the proof was decided; a sweep that fails is
		// tried again sweepEvery proofs on
		_, _ = s.nonces.SweepSignInNonces(ctx, now)
	}
	return nil
}
