package x402

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
)

// Paid is the outcome of a paying call.
type Paid struct {
	Status int
	Body   []byte
	// Settlement is the decoded PAYMENT-RESPONSE, when the answer had one.
	Settlement *SettleResponse
	// Marker is the delivery marker still redeemable for this payment:
	// set only while the answer is a 503 (the report paid for and not yet
	// delivered), the last one the host gave; empty once an answer is
	// delivered or refused (the marker is then spent, expired or invalid).
	Marker string
	// Requirements are what the 402 asked for (nil when none was asked).
	Requirements *Requirements
	// Payment is the PAYMENT-SIGNATURE this call sent ("" when none): a
	// payment the host took and did not answer for stays redeemable by
	// sending it again with the same request (Payer.Resend).
	Payment string
	// Identifier is the x402 payment-identifier id Payment carries ("" when
	// it carries none): the host answers a payment, or a later one with the
	// same id, with the report it issued for it instead of charging again.
	Identifier string
	// Reached: a request carrying the payment (or a marker) got past its
	// connection, in any attempt: the host may hold the payment whatever
	// became of its answer. False only when every attempt failed to
	// connect (NothingSent), or none carried a payment.
	Reached bool
}

// Payer makes x402 v2 paid calls with a Solana wallet: POST, read the 402,
// build and sign the exact-scheme transfer, retry once with
// PAYMENT-SIGNATURE, and redeem a delivery marker when the host could not
// deliver after checking the payment. Every payment it builds carries an
// x402 payment-identifier id (specs/extensions/payment_identifier.md), so
// that a re-send of it, or a fresh payment built with the same id, is
// answered with the one report it bought.
type Payer struct {
	Client *http.Client
	Wallet ed25519.PrivateKey
	// MarkerRetries bounds the re-sends after a 503 on a paid request: a
	// delivery marker's redemptions, or the same payment or marker again
	// when the host did not get to it (0 means 3; negative means none).
	MarkerRetries int
	// Chain, when set, is a Solana RPC node: it gives the blockhash a 402
	// lacks, and the wallet's balance is checked before anything is signed.
	Chain *solanarpc.Client
	// Nodes names the node to read a blockhash from when a 402 carries
	// none and Chain is nil, by CAIP-2 network; nil means DefaultNode's
	// (the networks' public endpoints, as the official client uses). An
	// empty map reads from none: such a 402 is then refused before
	// anything is signed.
	Nodes map[string]string
	// Identifier is the payment-identifier id of the payments Call and Sign
	// build: empty means a fresh one (NewIdentifier) for each. Set to an
	// earlier payment's id (Paid.Identifier), it builds a fresh transaction
	// the host treats as that payment's retry, as the official client does:
	// answered with the report issued for the id, never settled itself.
	Identifier string
	// Approve, when set, is asked before a payment is built and signed for
	// the 402's requirements: an error refuses the call there, nothing
	// signed (a spend cap).
	Approve func(Requirements) error
}

// ErrShort is a wallet that does not hold what a call costs.
var ErrShort = errors.New("x402: the wallet does not hold the price")

// onChain checks with the chain that the wallet can pay r, and returns the
// blockhash to sign with when r carries none.
func (p *Payer) onChain(ctx context.Context, r Requirements) (string, error) {
	mint, err := solana.ParsePublicKey(r.Asset)
	if err != nil {
		return "", errors.New("x402: requirements name no valid asset")
	}
	owner := solana.PublicKey{}
	copy(owner[:], p.Wallet.Public().(ed25519.PublicKey))
	ata, err := solana.FindAssociatedTokenAddress(owner, mint, solana.TokenProgram())
	if err != nil {
		return "", err
	}
	held, exists, err := p.Chain.TokenBalance(ctx, ata.String())
	if err != nil {
		return "", fmt.Errorf("x402: the wallet's balance: %w", err)
	}
	price, _ := strconv.ParseUint(r.Amount, 10, 64)
	if !exists || held < price {
		account := "its token account " + ata.String() + " holds"
		if !exists {
			account = "it has no token account for it, so it holds"
		}
		return "", fmt.Errorf("%w: wallet %s pays in %s; %s %s (%d atomic units); the call costs %s (%d)", ErrShort, owner, r.Asset, account, USD(held), held, USD(price), price)
	}
	if bh, _ := r.Extra["recentBlockhash"].(string); bh != "" {
		return "", nil
	}
	h, err := p.Chain.LatestBlockhash(ctx)
	if err != nil {
		return "", fmt.Errorf("x402: a recent blockhash: %w", err)
	}
	return h.Hash, nil
}

// DefaultNode is the public JSON-RPC endpoint a Payer with no node of
// its own reads a blockhash from when a 402 carries none (a host whose
// remote facilitator has no node beside it): the network's own, the one
// the official x402 client falls back to; "" for a network without one.
// Rate-limited and best-effort: a payer who pays often gives a node of
// its own (--solana-rpc).
func DefaultNode(network string) string {
	switch network {
	case SolanaMainnet:
		return "https://api.mainnet-beta.solana.com"
	case SolanaDevnet:
		return "https://api.devnet.solana.com"
	}
	return ""
}

// ErrNoNode is a 402 without a recentBlockhash that this payer can read
// none for: no node of its own and no default node for the network.
// Nothing was signed or sent.
var ErrNoNode = errors.New("x402: the 402 carries no recentBlockhash (the host has no Solana node of its own) and this payer has no node for its network: give one with --solana-rpc or SOLANA_RPC_URL")

// fallbackBlockhash is the blockhash to sign r with when the payer has no
// node of its own: "" when r carries one, else the network's default
// node's latest.
func (p *Payer) fallbackBlockhash(ctx context.Context, r Requirements) (string, error) {
	if bh, _ := r.Extra["recentBlockhash"].(string); validHash(bh) {
		return "", nil
	}
	url := DefaultNode(r.Network)
	if p.Nodes != nil {
		url = p.Nodes[r.Network]
	}
	if url == "" {
		return "", ErrNoNode
	}
	h, err := solanarpc.New(url).LatestBlockhash(ctx)
	if err != nil {
		return "", fmt.Errorf("%w (the default node for %s, %s, did not give one: %w)", ErrNoNode, r.Network, url, err)
	}
	return h.Hash, nil
}

// validHash is whether s is a base58 32-byte hash.
func validHash(s string) bool {
	b, err := solana.DecodeBase58(s)
	return err == nil && len(b) == 32
}

// USD prints 6-decimal atomic units as dollars for a person: at least two
// decimals, no trailing zeros past them ($0.05, $0.0125, $1.00).
func USD(units uint64) string {
	s := strings.TrimRight(fmt.Sprintf("%06d", units%1_000_000), "0")
	for len(s) < 2 {
		s += "0"
	}
	return fmt.Sprintf("$%d.%s", units/1_000_000, s)
}

// NothingSent reports whether err is a request that never reached the
// host (its connection was refused or could not be made, or the name did
// not resolve): whatever it carried, a payment included, was not received.
func NothingSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// known USDC mints and their decimals: the client needs the mint's
// decimals and token program, which would otherwise take an RPC call.
var knownMints = map[string]uint8{USDCMainnet: 6, USDCDevnet: 6}

// Call pays for one request.
func (p *Payer) Call(ctx context.Context, url string, body []byte) (*Paid, error) {
	if p.Client == nil {
		p.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, raw, err := p.post(ctx, url, body, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPaymentRequired {
		return p.finish(ctx, url, body, resp, raw, nil, nil, nil)
	}
	h := resp.Header.Get(HeaderRequired)
	if h == "" {
		return nil, errors.New("x402: 402 without a PAYMENT-REQUIRED header")
	}
	rawReq, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("x402: PAYMENT-REQUIRED: %w", err)
	}
	var pr PaymentRequired
	if err := json.Unmarshal(rawReq, &pr); err != nil {
		return nil, fmt.Errorf("x402: PAYMENT-REQUIRED: %w", err)
	}
	var chosen *Requirements
	for i, a := range pr.Accepts {
		if a.Scheme == "exact" && strings.HasPrefix(a.Network, "solana:") {
			chosen = &pr.Accepts[i]
			break
		}
	}
	if chosen == nil {
		return nil, errors.New("x402: the 402 offers no exact-scheme Solana payment")
	}
	if p.Approve != nil {
		if err := p.Approve(*chosen); err != nil {
			return &Paid{Status: resp.StatusCode, Body: raw, Requirements: chosen}, err
		}
	}
	blockhash := ""
	if p.Chain != nil {
		if blockhash, err = p.onChain(ctx, *chosen); err != nil {
			return nil, err
		}
	} else if blockhash, err = p.fallbackBlockhash(ctx, *chosen); err != nil {
		return nil, err
	}
	id, err := p.identifier()
	if err != nil {
		return nil, err
	}
	sig, err := p.sign(*chosen, pr.Resource, blockhash, id)
	if err != nil {
		return nil, err
	}
	sent := map[string]string{HeaderSignature: sig}
	resp, raw, err = p.post(ctx, url, body, sent)
	paid, err := p.finish(ctx, url, body, resp, raw, err, chosen, sent)
	return withPayment(paid, sig), err
}

// Resend sends a request again with a payment an earlier call sent (Paid
// or its error carried it): a host that settled it and did not deliver
// answers with the report, charging nothing more; one that never took it
// takes it now.
func (p *Payer) Resend(ctx context.Context, url string, body []byte, payment string) (*Paid, error) {
	if p.Client == nil {
		p.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	sent := map[string]string{HeaderSignature: payment}
	resp, raw, err := p.post(ctx, url, body, sent)
	paid, err := p.finish(ctx, url, body, resp, raw, err, nil, sent)
	return withPayment(paid, payment), err
}

// withPayment names the payment a call sent, and its id, on its outcome or
// its error.
func withPayment(paid *Paid, payment string) *Paid {
	if paid == nil {
		paid = &Paid{}
	}
	paid.Payment = payment
	if pp, err := DecodePayment(payment); err == nil {
		// a payment saved before ids were sent, or one of a wrong shape,
		// is still re-sent as it is: the host decides what it buys
		paid.Identifier, _ = pp.Identifier()
	}
	return paid
}

// errPayerIdentifier is a Payer.Identifier the payment-identifier extension
// does not allow.
var errPayerIdentifier = fmt.Errorf("x402: Payer.Identifier: %w", ErrIdentifier)

// identifier is the id the next payment carries: the Payer's own, or a
// fresh one, so no payment leaves without one.
func (p *Payer) identifier() (string, error) {
	if p.Identifier == "" {
		id, err := NewIdentifier()
		if err != nil {
			return "", fmt.Errorf("x402: payment identifier: %w", err)
		}
		return id, nil
	}
	if !ValidIdentifier(p.Identifier) {
		return "", errPayerIdentifier
	}
	return p.Identifier, nil
}

// Redeem sends a request with a delivery marker a 503 gave for it (the
// report paid for and not delivered) instead of a payment, and re-sends
// as Call does while the host answers 503.
func (p *Payer) Redeem(ctx context.Context, url string, body []byte, marker string) (*Paid, error) {
	if p.Client == nil {
		p.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	sent := map[string]string{HeaderMarker: marker}
	resp, raw, err := p.post(ctx, url, body, sent)
	paid, err := p.finish(ctx, url, body, resp, raw, err, nil, sent)
	if paid != nil && paid.Status == http.StatusServiceUnavailable && paid.Marker == "" {
		paid.Marker = marker // a 503 without a new one left this one unspent
	}
	return paid, err
}

// Sign builds and signs the transfer requirements ask for and returns the
// PAYMENT-SIGNATURE header value, with the Payer's payment-identifier id (a
// fresh one when Identifier is empty). Each call makes a new transaction (a
// fresh memo nonce), so two payments never collide.
func (p *Payer) Sign(r Requirements, res Resource) (string, error) {
	id, err := p.identifier()
	if err != nil {
		return "", err
	}
	return p.sign(r, res, "", id)
}

// sign is Sign with blockhash ("" for the requirements' own) and the id.
// The id travels inside the header value, not beside it, so whoever keeps
// the header for a re-send (Paid.Payment, assay call's saved payment)
// keeps the id with it.
func (p *Payer) sign(r Requirements, res Resource, blockhash, id string) (string, error) {
	tx, err := p.build(r, blockhash)
	if err != nil {
		return "", err
	}
	return EncodeHeader(PaymentPayload{X402Version: Version, Resource: &res, Accepted: r,
		Payload:    SVMPayload{Transaction: base64.StdEncoding.EncodeToString(tx.Serialize())},
		Extensions: map[string]any{ExtensionIdentifier: WithIdentifier(id)}})
}

// finish decodes the answer and re-sends a paid request the host answered
// 503, or that got no answer at all (the host died or restarted while it
// held it): with the delivery marker a 503 carries (the payment was taken,
// the report not delivered: redeemed, no second payment), or, without one,
// with what was sent before (a payment the host did not get to is still
// unspent, and one it took and did not deliver is redeemed by sending it
// again, on any host on its store). sent is nil for an unpaid request,
// which is not re-sent. The last marker seen stays in the answer until a
// report is delivered.
func (p *Payer) finish(ctx context.Context, url string, body []byte, resp *http.Response, raw []byte, postErr error, reqs *Requirements, sent map[string]string) (*Paid, error) {
	retries := p.MarkerRetries
	switch {
	case retries == 0:
		retries = 3
	case retries < 0:
		retries = 0
	}
	marker := ""
	var out *Paid
	// whether any request that carried the payment got past connecting
	reached := false
	defer func() {
		if out != nil {
			out.Reached = out.Reached || reached && sent != nil
		}
	}()
	for {
		reached = reached || sent != nil && (postErr == nil || !NothingSent(postErr))
		wait := time.Second
		if postErr == nil {
			if m := resp.Header.Get(HeaderMarker); m != "" {
				marker, sent = m, map[string]string{HeaderMarker: m}
			}
			out = &Paid{Status: resp.StatusCode, Body: raw, Requirements: reqs, Marker: marker}
			if h := resp.Header.Get(HeaderResponse); h != "" {
				if b, err := base64.StdEncoding.DecodeString(h); err == nil {
					var s SettleResponse
					if json.Unmarshal(b, &s) == nil {
						out.Settlement = &s
					}
				}
			}
			if resp.StatusCode != http.StatusServiceUnavailable {
				out.Marker = "" // delivered or refused: nothing left to redeem
				return out, nil
			}
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 && s < 60 {
				wait = time.Duration(s) * time.Second
			}
		}
		if sent == nil || retries == 0 {
			if postErr != nil && out != nil {
				out.Marker = marker
			}
			if out == nil && reached {
				out = &Paid{Requirements: reqs} // no answer, but the payment left
			}
			return out, postErr
		}
		retries--
		select {
		case <-ctx.Done():
			if out == nil && reached {
				out = &Paid{Requirements: reqs}
			}
			return out, ctx.Err()
		case <-time.After(wait):
		}
		resp, raw, postErr = p.post(ctx, url, body, sent)
	}
}

func (p *Payer) post(ctx context.Context, url string, body []byte, header map[string]string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("x402: request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("x402: POST: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("x402: read answer: %w", err)
	}
	return resp, raw, nil
}

// build makes the transfer the requirements ask for.
func (p *Payer) build(r Requirements, recent string) (*solana.Transaction, error) {
	decimals, ok := knownMints[r.Asset]
	if !ok {
		return nil, errors.New("x402: the asset is not a known USDC mint; its decimals would need an RPC lookup")
	}
	fp, _ := r.Extra["feePayer"].(string)
	feePayer, err := solana.ParsePublicKey(fp)
	if err != nil {
		return nil, errors.New("x402: requirements name no valid extra.feePayer")
	}
	payTo, err := solana.ParsePublicKey(r.PayTo)
	if err != nil {
		return nil, errors.New("x402: requirements name no valid payTo")
	}
	mint, err := solana.ParsePublicKey(r.Asset)
	if err != nil {
		return nil, errors.New("x402: requirements name no valid asset")
	}
	amount, err := strconv.ParseUint(r.Amount, 10, 64)
	if err != nil {
		return nil, errors.New("x402: requirements name no valid amount")
	}
	bh, _ := r.Extra["recentBlockhash"].(string)
	if recent != "" {
		bh = recent
	}
	hash, err := solana.DecodeBase58(bh)
	if err != nil || len(hash) != 32 {
		return nil, ErrNoNode
	}
	var blockhash [32]byte
	copy(blockhash[:], hash)
	memo := []byte(nil)
	if m, ok := r.Extra["memo"].(string); ok {
		memo = []byte(m)
	} else {
		nonce := make([]byte, 16)
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("x402: nonce: %w", err)
		}
		memo = []byte(hex.EncodeToString(nonce))
	}
	return solana.BuildExactTransfer(solana.BuildParams{
		FeePayer: feePayer, Payer: p.Wallet, PayTo: payTo, Mint: mint, TokenProgram: solana.TokenProgram(),
		Amount: amount, Decimals: decimals, RecentBlockhash: blockhash, Memo: memo,
		ComputeUnitLimit: 20000, ComputeUnitPrice: 1,
	})
}
