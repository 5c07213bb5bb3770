package x402

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
)

// ExtensionIdentifier is the x402 `payment-identifier` extension's key in
// PaymentRequired.extensions and PaymentPayload.extensions
// (specs/extensions/payment_identifier.md): the client's idempotency key.
const ExtensionIdentifier = "payment-identifier"

// Identifier bounds (the extension's schema).
const (
	identifierMin = 16
	identifierMax = 128
)

// ErrIdentifier is a payment-identifier extension that is present but
// not the spec's shape (an id of 16–128 of [A-Za-z0-9_-]).
var ErrIdentifier = errors.New("payment identifier is not 16 to 128 letters, digits, hyphens or underscores")

// identifierSchema is the extension's JSON Schema, as the spec gives it.
func identifierSchema() map[string]any {
	return map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"properties": map[string]any{
			"required": map[string]any{"type": "boolean"},
			"id":       map[string]any{"type": "string", "minLength": identifierMin, "maxLength": identifierMax},
		},
		"required": []any{"required"},
	}
}

// DeclareIdentifier is the extension as a 402 advertises it: optional
// (a payment without one is still accepted and redelivered by its own
// PAYMENT-SIGNATURE, docs/payers.md).
func DeclareIdentifier() map[string]any {
	return map[string]any{"info": map[string]any{"required": false}, "schema": identifierSchema()}
}

// WithIdentifier is the extension as a client echoes it with its id.
func WithIdentifier(id string) map[string]any {
	return map[string]any{"info": map[string]any{"required": false, "id": id}, "schema": identifierSchema()}
}

// NewIdentifier is a fresh id in the spec's recommended form: "pay_" and
// 32 hex digits of a random 128-bit value.
func NewIdentifier() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "pay_" + hex.EncodeToString(b), nil
}

// ValidIdentifier reports whether id has the spec's shape.
func ValidIdentifier(id string) bool {
	if len(id) < identifierMin || len(id) > identifierMax {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Identifier is the payment's idempotency key: "" when the payload
// carries no payment-identifier extension or the extension has no id;
// ErrIdentifier when it has one of the wrong shape.
func (p *PaymentPayload) Identifier() (string, error) {
	ext, ok := p.Extensions[ExtensionIdentifier].(map[string]any)
	if !ok {
		if _, present := p.Extensions[ExtensionIdentifier]; present {
			return "", ErrIdentifier
		}
		return "", nil
	}
	info, _ := ext["info"].(map[string]any)
	raw, present := info["id"]
	if !present || raw == nil {
		return "", nil
	}
	id, ok := raw.(string)
	if !ok || !ValidIdentifier(id) {
		return "", ErrIdentifier
	}
	return id, nil
}
