package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Facilitator verifies and settles exact-scheme payments.
type Facilitator interface {
	// Verify checks a payment against requirements without settling it.
	Verify(ctx context.Context, p *PaymentPayload, r Requirements) (*Verified, error)
	// Settle settles a verified payment.
	Settle(ctx context.Context, p *PaymentPayload, r Requirements) (*Settled, error)
	// FeePayer is the address the requirements name as extra.feePayer.
	FeePayer() string
	// Offline reports a facilitator that never broadcasts: every payment
	// it accepts is a house proof, and it needs no real blockhash.
	Offline() bool
}

// Verified is a verify answer. Reason is set when the payment is invalid.
type Verified struct {
	Reason string
	Payer  string
	// TxID is the transaction id settlement will produce, when it can be
	// known before settling (the embedded facilitator); "" otherwise.
	TxID string
	// Blockhash is the transaction's recent blockhash, when the
	// facilitator can look the transaction up on the chain later (the
	// embedded one with an RPC node): stored with the claim, it lets a
	// host resolve a claim a crash left settling.
	Blockhash string
	// Settled, when set, is the settlement itself, made while verifying:
	// a facilitator whose settling has no effect outside the host (the
	// embedded one without a chain) has nothing left to do at Settle, so
	// the gate records the claim settled in one write.
	Settled *Settled
}

// Settled is a settle answer. Reason is set when settlement failed.
type Settled struct {
	Reason string
	// NeverLanded: the chain is certain this transaction never landed and
	// never can (its blockhash expired): nothing was taken, so the claim
	// goes, whoever opened it.
	NeverLanded bool
	TxID        string
	Payer       string
	Network     string
	FeeLamports *int64
}

// ErrFacilitator wraps transport failures talking to a facilitator: the
// payment's state is unknown to the host, so nothing is delivered.
var ErrFacilitator = errors.New("facilitator unavailable")

// Remote is an x402 facilitator reached over HTTP.
type Remote struct {
	BaseURL string
	Client  *http.Client
	// feePayer is the facilitator's signer: given, or asked of /supported
	// (Discover), possibly after the host started
	feePayer atomic.Pointer[string]
	// VerifyTimeout and SettleTimeout bound each call.
	VerifyTimeout, SettleTimeout time.Duration
	// Retries is how often a safe call is retried after a transport error
	// or a 5xx.
	Retries int
}

// SupportedWithin bounds NewRemote's question to /supported, retries
// included.
const SupportedWithin = 8 * time.Second

// ErrNoFeePayer is a facilitator that answers /supported without a fee
// payer for the exact scheme on the network: an answer, not an outage.
var ErrNoFeePayer = errors.New("x402: the facilitator's /supported names no exact-scheme fee payer for the network")

// NewRemote asks the facilitator's /supported which fee payer it signs
// with for network (unless feePayer is given) and returns the client.
func NewRemote(ctx context.Context, baseURL, network, feePayer string) (*Remote, error) {
	r := NewRemoteAt(baseURL)
	if feePayer != "" {
		r.feePayer.Store(&feePayer)
		return r, nil
	}
	if err := r.Discover(ctx, network); err != nil {
		return nil, err
	}
	return r, nil
}

// Discover asks the facilitator's /supported which fee payer it signs
// with for network. A facilitator that does not answer is ErrFacilitator
// (a host may start without it and ask again); one that answers without
// a fee payer, ErrNoFeePayer.
func (r *Remote) Discover(ctx context.Context, network string) error {
	var sup Supported
	// the host's start waits on this: retries and all, a facilitator that
	// never answers holds it SupportedWithin, not three whole timeouts
	sctx, cancel := context.WithTimeout(ctx, SupportedWithin)
	defer cancel()
	if err := r.call(sctx, http.MethodGet, "/supported", nil, &sup, r.VerifyTimeout, true); err != nil {
		if sctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("%w: no answer to /supported within %s (check the facilitator's URL, or pass its fee payer)", ErrFacilitator, SupportedWithin)
		}
		return err
	}
	for _, k := range sup.Kinds {
		if k.Scheme == "exact" && k.Network == network {
			if fp, ok := k.Extra["feePayer"].(string); ok && fp != "" {
				r.feePayer.Store(&fp)
				return nil
			}
		}
	}
	for pattern, signers := range sup.Signers {
		if (pattern == network || pattern == "solana:*") && len(signers) > 0 {
			r.feePayer.Store(&signers[0])
			return nil
		}
	}
	return ErrNoFeePayer
}

// NewRemoteAt is a client of the facilitator at baseURL that has asked it
// nothing yet (serve --check's preflight: Offers; a gate uses NewRemote).
func NewRemoteAt(baseURL string) *Remote {
	return &Remote{BaseURL: strings.TrimRight(baseURL, "/"), Client: &http.Client{},
		VerifyTimeout: 10 * time.Second, SettleTimeout: 30 * time.Second, Retries: 2}
}

// Offers is whether the facilitator's /supported lists scheme on network
// (the payment preflight's question).
func (r *Remote) Offers(ctx context.Context, scheme, network string) (bool, error) {
	var sup Supported
	sctx, cancel := context.WithTimeout(ctx, SupportedWithin)
	defer cancel()
	if err := r.call(sctx, http.MethodGet, "/supported", nil, &sup, r.VerifyTimeout, true); err != nil {
		return false, err
	}
	for _, k := range sup.Kinds {
		if k.Scheme == scheme && k.Network == network {
			return true, nil
		}
	}
	return false, nil
}

// FeePayer is the facilitator's signer ("" until it is known: Discover).
func (r *Remote) FeePayer() string {
	if fp := r.feePayer.Load(); fp != nil {
		return *fp
	}
	return ""
}

// Offline is false: a remote facilitator broadcasts.
func (r *Remote) Offline() bool { return false }

type facilitatorRequest struct {
	X402Version         int             `json:"x402Version"`
	PaymentPayload      *PaymentPayload `json:"paymentPayload"`
	PaymentRequirements Requirements    `json:"paymentRequirements"`
}

// Verify calls /verify; it is safe to retry.
func (r *Remote) Verify(ctx context.Context, p *PaymentPayload, req Requirements) (*Verified, error) {
	var v VerifyResponse
	if err := r.call(ctx, http.MethodPost, "/verify", facilitatorRequest{Version, p, req}, &v, r.VerifyTimeout, true); err != nil {
		return nil, err
	}
	if !v.IsValid {
		reason := v.InvalidReason
		if reason == "" {
			reason = "invalid_payload"
		}
		return &Verified{Reason: reason, Payer: v.Payer}, nil
	}
	return &Verified{Payer: v.Payer}, nil
}

// reasonSettlementPending is the official facilitator's answer for a
// transaction it sent whose confirmation it did not see in time.
const reasonSettlementPending = "settlement_pending"

// Settle calls /settle. It is retried only when the request provably never
// left (the connection was refused): a settle that may have reached the
// facilitator is never sent twice.
func (r *Remote) Settle(ctx context.Context, p *PaymentPayload, req Requirements) (*Settled, error) {
	var s SettleResponse
	if err := r.call(ctx, http.MethodPost, "/settle", facilitatorRequest{Version, p, req}, &s, r.SettleTimeout, false); err != nil {
		return nil, err
	}
	if !s.Success && s.ErrorReason == reasonSettlementPending {
		// sent, and not confirmed within the facilitator's wait: it may
		// still land, so nothing is known (the claim stays settling, and
		// the chain or the facilitator decides on a re-send)
		return nil, fmt.Errorf("%w: settlement pending: the transaction was sent and is not confirmed yet", ErrFacilitator)
	}
	if !s.Success {
		reason := s.ErrorReason
		if reason == "" {
			reason = "unexpected_settle_error"
		}
		return &Settled{Reason: reason, Payer: s.Payer, Network: s.Network}, nil
	}
	if s.Transaction == "" {
		return nil, fmt.Errorf("%w: settle succeeded without a transaction id", ErrFacilitator)
	}
	return &Settled{TxID: s.Transaction, Payer: s.Payer, Network: s.Network}, nil
}

// call does one facilitator exchange. A 4xx whose body decodes into out is
// an answer (facilitators answer invalid payments with 400); a 5xx or a
// transport error is retried when idempotent allows it.
func (r *Remote) call(ctx context.Context, method, path string, in, out any, timeout time.Duration, idempotent bool) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("x402: encode %s: %w", path, err)
		}
	}
	var last error
	for attempt := 0; attempt <= r.Retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %s: %w", ErrFacilitator, path, ctx.Err())
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		retry, err := r.once(ctx, method, path, body, out, timeout)
		if err == nil {
			return nil
		}
		last = err
		if !retry || (!idempotent && !neverSent(err)) {
			break
		}
	}
	return last
}

func (r *Remote) once(ctx context.Context, method, path string, body []byte, out any, timeout time.Duration) (retry bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, method, r.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrFacilitator, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.Client.Do(req)
	if err != nil {
		// the URL out: a facilitator's may carry a key, and this error
		// reaches the log and the preflight's findings
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return true, fmt.Errorf("%w: %s: %w", ErrFacilitator, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return true, fmt.Errorf("%w: %s: read: %w", ErrFacilitator, path, err)
	}
	if resp.StatusCode >= 500 {
		return true, fmt.Errorf("%w: %s: status %d", ErrFacilitator, path, resp.StatusCode)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return false, fmt.Errorf("%w: %s: status %d with an unreadable body", ErrFacilitator, path, resp.StatusCode)
	}
	if resp.StatusCode >= 300 && !hasVerdict(raw) {
		return false, fmt.Errorf("%w: %s: status %d", ErrFacilitator, path, resp.StatusCode)
	}
	return false, nil
}

// hasVerdict: a non-2xx body counts as an answer only if it carries the
// answer's own verdict member.
func hasVerdict(raw []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, v := m["isValid"]
	_, s := m["success"]
	return v || s
}

// neverSent recognises a failure before the request left: a refused dial.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
