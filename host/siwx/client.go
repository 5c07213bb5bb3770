package siwx

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/assay-audit/assay/host/solana"
)

// Member is the member of a host's pre-check answer that carries a fresh
// challenge (the extension object, as a 402 declares it): a client proves
// its next pre-check with it without asking for another.
const Member = "sign_in"

// ErrNoChain is a challenge that names no ed25519 (Solana) chain.
var ErrNoChain = errors.New("siwx: the challenge offers no Solana (ed25519) chain")

// ErrNoChallenge is a host that answered a challenge request without one
// (it serves no free tier, or predates sign-in): asking it again is no
// use.
var ErrNoChallenge = errors.New("siwx: the host gave no sign-in challenge")

// Sign is wallet's proof for challenge e, on e's first Solana chain, as
// the official client builds it: the challenge's fields echoed, the
// address and the base58 Ed25519 signature over the SIWS message added.
func Sign(e Extension, wallet ed25519.PrivateKey) (*Proof, error) {
	var chain *Chain
	for i, c := range e.SupportedChains {
		if c.Type == TypeEd25519 && strings.HasPrefix(c.ChainID, "solana:") {
			chain = &e.SupportedChains[i]
			break
		}
	}
	if chain == nil {
		return nil, ErrNoChain
	}
	pub, ok := wallet.Public().(ed25519.PublicKey)
	if !ok || len(wallet) != ed25519.PrivateKeySize {
		return nil, errors.New("siwx: the wallet is no Ed25519 key")
	}
	i := e.Info
	p := &Proof{Domain: i.Domain, Address: solana.EncodeBase58(pub), Statement: i.Statement, URI: i.URI, Version: i.Version,
		ChainID: chain.ChainID, Type: chain.Type, Nonce: i.Nonce, IssuedAt: i.IssuedAt, ExpirationTime: i.ExpirationTime,
		NotBefore: i.NotBefore, RequestID: i.RequestID, Resources: i.Resources}
	p.Signature = solana.EncodeBase58(ed25519.Sign(wallet, []byte(p.Message())))
	return p, nil
}

// Encode is p's SIGN-IN-WITH-X value: base64 (standard, padded) of its
// JSON.
func (p *Proof) Encode() (string, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("siwx: encode: %w", err)
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// FromAnswer is the challenge a host's answer carries in its sign_in
// member (ok false: none, or not one a Solana wallet can sign).
func FromAnswer(body []byte) (Extension, bool) {
	var a map[string]json.RawMessage
	if json.Unmarshal(body, &a) != nil || a[Member] == nil {
		return Extension{}, false
	}
	var e Extension
	if json.Unmarshal(a[Member], &e) != nil || e.Info.Nonce == "" {
		return Extension{}, false
	}
	for _, c := range e.SupportedChains {
		if c.Type == TypeEd25519 {
			return e, true
		}
	}
	return Extension{}, false
}

// maxAnswer bounds the refusal read for its challenge.
const maxAnswer = 1 << 20

// AskChallenge gets a fresh challenge for the pre-check at url without
// spending anything: the pre-check sent with SIGN-IN-WITH-X: challenge
// and no body is refused (401 siwx_invalid) before its body is read or
// anything counted, and the refusal carries the challenge. A host that
// serves no free tier (or predates sign-in) gives none: an error.
func AskChallenge(ctx context.Context, c *http.Client, url string) (Extension, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, http.NoBody)
	if err != nil {
		return Extension{}, fmt.Errorf("siwx: ask a challenge: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(Header, Ask)
	resp, err := c.Do(req)
	if err != nil {
		return Extension{}, fmt.Errorf("siwx: ask a challenge: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Extension{}, fmt.Errorf("siwx: ask a challenge: %w", err)
	}
	e, ok := FromAnswer(body)
	if !ok {
		return Extension{}, fmt.Errorf("%w (status %d)", ErrNoChallenge, resp.StatusCode)
	}
	return e, nil
}

// Prove is wallet's SIGN-IN-WITH-X value for the next pre-check at url: a
// challenge asked for (AskChallenge: nothing counted), signed. One
// request more than a pre-check proved with the challenge the last answer
// carried (FromAnswer), which a client sending many should use instead.
func Prove(ctx context.Context, c *http.Client, url string, wallet ed25519.PrivateKey) (string, error) {
	e, err := AskChallenge(ctx, c, url)
	if err != nil {
		return "", err
	}
	p, err := Sign(e, wallet)
	if err != nil {
		return "", err
	}
	return p.Encode()
}
