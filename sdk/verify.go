package sdk

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// SignatureAlg is the algorithm every answer's signature member names.
const SignatureAlg = "Ed25519"

// Verification errors.
var (
	ErrNoSignature = errors.New("answer carries no signature member")
	ErrUnknownKey  = errors.New("signature key_id is not in the key set")
	ErrBadSig      = errors.New("signature does not verify")
)

// VerifyAnswer checks a signed answer against a JWKS document (a host's
// /keys) and returns the id of the key that signed it. It lives in the sdk
// so that a payer, or a plugin author's test, checks a report with nothing
// of the host's: the signed payload is the RFC 8785 form of the answer
// without its signature member.
func VerifyAnswer(answer, jwks []byte) (string, error) {
	tree, err := DecodeJSON(answer)
	if err != nil {
		return "", fmt.Errorf("answer: %w", err)
	}
	members, ok := tree.(map[string]any)
	if !ok {
		return "", errors.New("answer is not a JSON object")
	}
	sig, ok := members["signature"].(map[string]any)
	if !ok {
		return "", ErrNoSignature
	}
	alg, _ := sig["alg"].(string)
	kid, _ := sig["key_id"].(string)
	value, _ := sig["value"].(string)
	if alg != SignatureAlg {
		return "", fmt.Errorf("signature member: %w", ErrBadSig)
	}
	var set struct {
		Keys []struct{ Kty, Crv, X, Kid string } `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		return "", fmt.Errorf("key set is not valid JSON: %w", err)
	}
	var pub ed25519.PublicKey
	for _, j := range set.Keys {
		if j.Kid == kid && j.Kty == "OKP" && j.Crv == "Ed25519" {
			x, err := base64.RawURLEncoding.DecodeString(j.X)
			if err != nil || len(x) != ed25519.PublicKeySize {
				return "", fmt.Errorf("key %s: malformed x", j.Kid)
			}
			pub = x
		}
	}
	if pub == nil {
		return "", ErrUnknownKey
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return "", ErrBadSig
	}
	delete(members, "signature")
	payload, err := CanonicalJSON(members)
	if err != nil {
		return "", err
	}
	if !ed25519.Verify(pub, payload, raw) {
		return "", ErrBadSig
	}
	return kid, nil
}
