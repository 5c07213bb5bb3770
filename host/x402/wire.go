// Package x402 speaks x402 v2 over HTTP for the host's paid routes: the
// wire types and headers, the facilitator interface with its remote (HTTP)
// and local (offline, embedded) implementations, and the payment gate the
// server calls. Scheme `exact` on Solana only.
package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/assay-audit/assay/host/solana"
)

// Version is the protocol version this package speaks.
const Version = 2

// Header names (HTTP transport v2; matched case-insensitively by net/http).
const (
	HeaderRequired  = "PAYMENT-REQUIRED"
	HeaderSignature = "PAYMENT-SIGNATURE"
	HeaderResponse  = "PAYMENT-RESPONSE"
)

// Solana networks in CAIP-2 form and their USDC mints.
const (
	SolanaMainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	SolanaDevnet  = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	SolanaTestnet = "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"
	USDCMainnet   = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	USDCDevnet    = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
)

// Resource describes the paid resource.
type Resource struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// Requirements is one accepted way to pay.
type Requirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	Amount            string         `json:"amount"`
	Asset             string         `json:"asset"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int64          `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// PaymentRequired is the 402 answer's payload.
type PaymentRequired struct {
	X402Version int            `json:"x402Version"`
	Error       string         `json:"error,omitempty"`
	Resource    Resource       `json:"resource"`
	Accepts     []Requirements `json:"accepts"`
	Extensions  map[string]any `json:"extensions"`
}

// PaymentPayload is what the client sends in PAYMENT-SIGNATURE.
type PaymentPayload struct {
	X402Version int            `json:"x402Version"`
	Resource    *Resource      `json:"resource,omitempty"`
	Accepted    Requirements   `json:"accepted"`
	Payload     SVMPayload     `json:"payload"`
	Extensions  map[string]any `json:"extensions,omitempty"`
}

// SVMPayload is the exact scheme's payload on Solana.
type SVMPayload struct {
	// Transaction is the standard-base64 wire transaction, signed by the
	// client, with the fee payer's slot still empty.
	Transaction string `json:"transaction"`
}

// SettleResponse is PAYMENT-RESPONSE and the facilitator's /settle answer.
type SettleResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Payer       string `json:"payer,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
}

// VerifyResponse is the facilitator's /verify answer.
type VerifyResponse struct {
	IsValid       bool   `json:"isValid"`
	InvalidReason string `json:"invalidReason,omitempty"`
	Payer         string `json:"payer,omitempty"`
}

// SupportedKind is one entry of /supported.
type SupportedKind struct {
	X402Version int            `json:"x402Version"`
	Scheme      string         `json:"scheme"`
	Network     string         `json:"network"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// Supported is the facilitator's /supported answer.
type Supported struct {
	Kinds      []SupportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions"`
	Signers    map[string][]string `json:"signers"`
}

// EncodeHeader is base64(JSON(v)) with the standard, padded alphabet.
func EncodeHeader(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("x402: encode header: %w", err)
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// MaxHeaderBytes bounds a PAYMENT-SIGNATURE value: a Solana transaction is
// at most 1,232 bytes, so its JSON envelope is far below this.
const MaxHeaderBytes = 16 << 10

// Errors decoding a payment header; static, never quoting the header.
var (
	ErrHeaderSize     = errors.New("payment header too large")
	ErrHeaderEncoding = errors.New("payment header is not standard base64")
	ErrHeaderJSON     = errors.New("payment header is not the expected JSON")
	ErrHeaderVersion  = errors.New("payment header is not x402 version 2")
)

// DecodePayment decodes a PAYMENT-SIGNATURE value strictly: standard padded
// base64, one JSON object, version 2, a transaction present.
func DecodePayment(h string) (*PaymentPayload, error) {
	if len(h) > MaxHeaderBytes {
		return nil, ErrHeaderSize
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(h)
	if err != nil {
		return nil, ErrHeaderEncoding
	}
	var p PaymentPayload
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&p); err != nil || dec.More() {
		return nil, ErrHeaderJSON
	}
	if p.X402Version != Version {
		return nil, ErrHeaderVersion
	}
	if p.Payload.Transaction == "" {
		return nil, ErrHeaderJSON
	}
	return &p, nil
}

// dynamicExtra are extra keys a client may legitimately see change between
// the 402 and its retry (memo: each 402 has its own, checked for its shape).
var dynamicExtra = map[string]bool{"recentBlockhash": true, "lastValidBlockHeight": true, "memo": true}

// Matches reports whether a client's accepted requirements are the ones the
// server offers: every field equal, every server extra key equal except the
// dynamic ones.
func (r Requirements) Matches(accepted Requirements) bool { return r.Mismatch(accepted) == "" }

// Mismatch names the first way a client's accepted requirements differ
// from the ones the server offers ("" when they match), in the exact
// scheme's own reason words where it has them: another asset, pay_to,
// amount or fee payer is what a payment made for another host or another
// price looks like.
func (r Requirements) Mismatch(accepted Requirements) string {
	switch {
	case r.Scheme != accepted.Scheme:
		return ReasonUnsupportedScheme
	case r.Network != accepted.Network:
		return ReasonInvalidNetwork
	case r.Asset != accepted.Asset:
		return solana.ReasonMintMismatch
	case r.PayTo != accepted.PayTo:
		return solana.ReasonRecipientMismatch
	case r.Amount != accepted.Amount:
		return solana.ReasonAmountMismatch
	case r.MaxTimeoutSeconds != accepted.MaxTimeoutSeconds:
		return ReasonNoMatchingRequirements
	}
	for k, v := range r.Extra {
		if dynamicExtra[k] {
			continue
		}
		same := false
		if s, ok := v.(string); ok {
			// the usual case (feePayer): compared as strings, so a
			// client's value is never re-encoded, however deep it nests
			a, ok := accepted.Extra[k].(string)
			same = ok && a == s
		} else {
			same = reflect.DeepEqual(normalize(v), normalize(accepted.Extra[k]))
		}
		switch {
		case same:
		case k == "feePayer":
			return solana.ReasonFeePayerMismatch
		default:
			return ReasonNoMatchingRequirements
		}
	}
	return ""
}

// Reasons a payment's requirements are refused for before anything is
// verified (the exact scheme's own, solana.Reason*, where it has one).
const (
	// ReasonUnsupportedScheme: a scheme other than exact.
	ReasonUnsupportedScheme = "unsupported_scheme"
	// ReasonInvalidNetwork: a payment on another network.
	ReasonInvalidNetwork = "invalid_network"
	// ReasonNoMatchingRequirements: another timeout or extra member.
	ReasonNoMatchingRequirements = "no_matching_payment_requirements"
	// ReasonRouteMismatch: a payment made from another route's 402 (its
	// memo, in the transaction the payer signed, names that route; or the
	// resource it names is another route).
	ReasonRouteMismatch = "route_mismatch"
)

// normalize makes JSON-decoded and Go-built values comparable.
func normalize(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}
