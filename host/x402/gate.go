package x402

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/redelivery"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/solanarpc"
	"github.com/assay-audit/assay/host/store"
)

// HeaderMarker carries a delivery marker on a re-sent request.
const HeaderMarker = "ASSAY-DELIVERY-MARKER"

// deliveryLease is how long a settled claim's holder keeps it to sign,
// write and record the answer: a holder that dies then frees it soon.
const deliveryLease = 5 * time.Second

// Gate codes (refusal codes of the paid route's payment step).
const (
	CodeRequired      = "payment_required"
	CodeInvalid       = "payment_invalid"
	CodeReplayed      = "payment_replayed"
	CodeNotSettled    = "payment_not_settled"
	CodeMarkerInvalid = "marker_invalid"
	CodeMarkerExpired = "marker_expired"
	CodeMarkerSpent   = "marker_spent"
	CodeInProgress    = "payment_in_progress"
	// CodeConflict: the payment (or its payment identifier) was issued a
	// report for another submission (the extension's "same id, another
	// payload", 409).
	CodeConflict = "payment_conflict"
	// CodeIdentifierInvalid: a payment-identifier id not of the spec's
	// shape (400).
	CodeIdentifierInvalid = "payment_identifier_invalid"
	// CodeIssuedElsewhere: the report was issued by a host whose
	// redelivery secret this one does not share (503).
	CodeIssuedElsewhere = "redelivery_unavailable"
)

var gateMessages = map[string]string{
	CodeRequired:          "this route is paid: send the payment in PAYMENT-SIGNATURE (x402 v2)",
	CodeInvalid:           "the payment was refused; nothing was charged",
	CodeReplayed:          "that payment's transaction was already settled and its report's redelivery window has ended; nothing was delivered for it again",
	CodeNotSettled:        "the payment could not be settled; nothing was charged",
	CodeMarkerInvalid:     "the delivery marker is not one this service issued for this route",
	CodeMarkerExpired:     "the delivery marker has expired",
	CodeMarkerSpent:       "the delivery marker was already redeemed",
	CodeInProgress:        "this payment was taken and another request is delivering its report; nothing more was charged; send it again after Retry-After",
	CodeConflict:          "this payment was issued a report for another submission: send that submission to have its report again; nothing was charged by this request",
	CodeIdentifierInvalid: "the payment-identifier id must be 16 to 128 letters, digits, hyphens or underscores; nothing was charged",
	CodeIssuedElsewhere:   "this payment's report was issued by a host whose redelivery secret this host does not share; nothing was charged by this request; send it again",
	CodeUnavailable:       "the payment could not be completed; nothing was charged; try again",
	CodeIdentityMismatch:  "this host's payment configuration is not the payment identity its store settles as (store_identity, host_identity): it takes no payment on this store; nothing was read of the payment and nothing was charged",
}

// Config sets up a Gate.
type Config struct {
	Facilitator Facilitator
	Store       *store.Store
	Network     string
	Asset       string
	PayTo       string
	// MaxTimeoutSeconds is the requirements' maxTimeoutSeconds (default
	// 300); delivery markers live as long.
	MaxTimeoutSeconds int64
	// PublicURL is the host's public base URL for resource.url; empty
	// means the request's own scheme and Host.
	PublicURL string
	// HostID names this host across its restarts (stable per data dir):
	// a host that starts releases the claims an earlier run of it left
	// leased. Empty: a random id (nothing to release).
	HostID string
	// Lease is how long a request holds a payment's claim while it settles
	// and delivers (default: 10 s, plus 30 s with a facilitator that
	// broadcasts); a claim whose host died is free again after it.
	Lease time.Duration
	Now   func() time.Time
	// Chain, when set, resolves claims left settling from the chain and
	// gives 402s a live blockhash (a ChainLookup beside a remote
	// facilitator); the embedded facilitator on a chain is its own.
	Chain interface {
		Resolver
		blockhashSource
		TransactionFee(ctx context.Context, txID string) *int64
	}
	// Sealer keeps issued answers for redelivery (nil: one from a random
	// secret, good for this run only).
	Sealer *redelivery.Sealer
	// Redelivery is how long an issued answer can be had again (default
	// DefaultRedelivery).
	Redelivery time.Duration
	// DeferResolve leaves the claims a crash left settling to
	// ResolveSettling: a host whose node did not answer at start looks
	// them up once it does, instead of holding its start on it.
	DeferResolve bool
	// OnHeld is called (it must not block) when a request meets the
	// host's hold (SetHold): the host may ask its payment path again.
	OnHeld func()
	// OnIdentityMismatch is called once, when the gate first finds that
	// the store's payment identity is not this gate's (hold.go); stamped
	// is the store's (zero: the store settled on a chain before stamps).
	OnIdentityMismatch func(stamped store.PaymentIdentity)
}

// DefaultRedelivery is how long an issued paid answer is kept for a
// re-send of its payment (docs/payers.md, "Redelivery").
const DefaultRedelivery = 24 * time.Hour

// Gate is the x402 payment gate (payment.Gate).
type Gate struct {
	cfg       Config
	markerKey []byte
	blockhash string
	owner     string // this run's lease holder name: HostID/nonce
	// Unspent is how many claims the store held undelivered when the gate
	// started (each redeemable by a re-send of its payment).
	Unspent int
	// Resolved is what the chain said, at start, of the claims left
	// settling.
	Resolved Resolved

	// hold is the host's (SetHold): its payment path is not proven yet,
	// or is misconfigured; mismatch is the store's, another identity's
	// stamp (hold.go). stampOK: the store's stamp is this gate's;
	// identityRead is when an unstamped store was last read (unix ns).
	hold, mismatch atomic.Pointer[Hold]
	stampOK        atomic.Bool
	identityRead   atomic.Int64
}

// NewGate builds the gate. With an offline facilitator the requirements
// carry a recentBlockhash of the gate's own, so clients need no RPC for one.
func NewGate(ctx context.Context, cfg Config) (*Gate, error) {
	if cfg.MaxTimeoutSeconds == 0 {
		cfg.MaxTimeoutSeconds = 300
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Facilitator == nil || cfg.Store == nil || cfg.Network == "" || cfg.Asset == "" || cfg.PayTo == "" {
		return nil, errors.New("x402: gate needs a facilitator, a store, a network, an asset and payTo")
	}
	if cfg.Redelivery == 0 {
		cfg.Redelivery = DefaultRedelivery
	}
	if cfg.Sealer == nil {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("x402: redelivery secret: %w", err)
		}
		var err error
		if cfg.Sealer, err = redelivery.New(secret); err != nil {
			return nil, err
		}
	}
	k, err := cfg.Store.MarkerKey(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Lease == 0 {
		cfg.Lease = 10 * time.Second
		if !cfg.Facilitator.Offline() {
			cfg.Lease += 30 * time.Second
		}
	}
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("x402: lease nonce: %w", err)
	}
	if cfg.HostID == "" {
		cfg.HostID = hex.EncodeToString(nonce) + "x"
	}
	g := &Gate{cfg: cfg, markerKey: k, owner: cfg.HostID + "/" + hex.EncodeToString(nonce)}
	if g.Unspent, err = cfg.Store.ReleaseLeasesOf(ctx, cfg.HostID, g.owner); err != nil {
		return nil, err
	}
	if err := g.startIdentity(ctx); err != nil {
		return nil, err
	}
	if r := g.resolver(); r != nil && !cfg.DeferResolve {
		if g.Resolved, err = g.resolveSettling(ctx, r); err != nil {
			return nil, err
		}
		g.Unspent -= g.Resolved.Dropped
	}
	if cfg.Facilitator.Offline() {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("x402: blockhash: %w", err)
		}
		g.blockhash = solana.EncodeBase58(b)
	}
	return g, nil
}

// blockhashSource reads the chain's recent blockhash (the embedded
// facilitator with an RPC node, or a ChainLookup).
type blockhashSource interface {
	RecentBlockhash(ctx context.Context) (solanarpc.Blockhash, bool)
}

// Requirements are what a paid request must pay.
func (g *Gate) Requirements(req payment.Request) Requirements {
	extra := map[string]any{"feePayer": g.cfg.Facilitator.FeePayer(), "memo": routeMemo(g.markerKey, req.Service, req.Op)}
	if g.cfg.Facilitator.Offline() {
		// the operator named house mode: a payer's client sees it before
		// it signs anything
		extra["house"] = HouseNote
	}
	if g.blockhash != "" {
		extra["recentBlockhash"] = g.blockhash
	}
	var src blockhashSource
	if g.cfg.Chain != nil {
		src = g.cfg.Chain
	} else if s, ok := g.cfg.Facilitator.(blockhashSource); ok {
		src = s
	}
	if src != nil && req.HTTP != nil {
		// a live one from the chain: a client needs no RPC of its own
		if h, ok := src.RecentBlockhash(req.HTTP.Context()); ok {
			extra["recentBlockhash"], extra["lastValidBlockHeight"] = h.Hash, h.LastValidBlockHeight
		}
	}
	return Requirements{Scheme: "exact", Network: g.cfg.Network, Amount: strconv.FormatInt(req.Price.USDCUnits, 10),
		Asset: g.cfg.Asset, PayTo: g.cfg.PayTo, MaxTimeoutSeconds: g.cfg.MaxTimeoutSeconds, Extra: extra}
}

// Presented implements payment.Presenter: the request carries a payment
// or a delivery marker.
func (g *Gate) Presented(h http.Header) bool {
	return h.Get(HeaderSignature) != "" || h.Get(HeaderMarker) != ""
}

// Terms implements payment.Publisher.
func (g *Gate) Terms() payment.Terms {
	t := payment.Terms{Protocol: "x402", Scheme: "exact", Network: g.cfg.Network, Asset: g.cfg.Asset, PayTo: g.cfg.PayTo,
		MaxTimeoutSeconds: g.cfg.MaxTimeoutSeconds}
	if g.cfg.Facilitator.Offline() {
		t.Note = HouseNote
	}
	t.PayerNeedsNode = !g.givesBlockhash()
	return t
}

// givesBlockhash is whether this gate's 402s carry a recentBlockhash: its
// own (house mode), or the chain's, read by the embedded facilitator or
// the ChainLookup beside a remote one. (One read failing leaves a single
// 402 without; the payer's client then falls back to its node.)
func (g *Gate) givesBlockhash() bool {
	if g.blockhash != "" || g.cfg.Chain != nil {
		return true
	}
	_, ok := g.cfg.Facilitator.(blockhashSource)
	return ok
}

// Offer implements payment.Publisher: req's PAYMENT-REQUIRED and the x402
// member, as its own 402 would carry them.
func (g *Gate) Offer(req payment.Request, reason string) (map[string]string, map[string]any) {
	d := g.demand402(req, CodeRequired, reason)
	return d.Header, map[string]any{"x402": d.Members["x402"]}
}

func (g *Gate) resource(req payment.Request) Resource {
	base := strings.TrimRight(g.cfg.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if req.HTTP.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + req.HTTP.Host
	}
	desc := req.Service + " " + req.Op + ": " + req.Price.Basis
	if g.cfg.Facilitator.Offline() {
		desc += " (" + HouseNote + ")"
	}
	return Resource{URL: base + req.HTTP.URL.Path, Description: desc, MimeType: "application/json"}
}

type admitted struct {
	payload *PaymentPayload
	header  string
	reqs    Requirements
	payer   string
	id      string       // the payment's identity (PaymentID)
	claim   *store.Claim // its claim when admitted (nil: a new payment)
	marker  string       // the marker being redeemed, if any
	token   string
	charged bool // a claim exists or a settlement was attempted
	// txID, blockhash and memo: what the chain will know the payment by
	// (a transaction id when the facilitator said before settling)
	txID, blockhash, memo string
	// settled: the facilitator's settlement, made while verifying (nil:
	// settling is still to do)
	settled *Settled
	// opened: this request opened the payment's claim settled (Withdraw
	// deletes it when no report follows)
	opened bool
	// identifier is the payer's payment-identifier id ("" for none), held
	// for this request only; lookup is its keyed form, the claim's
	identifier, lookup string
	// foreign: the claim admitted is the identifier's, not this payload's
	// (the official client's retry builds a fresh payment): this payload
	// is never verified nor settled
	foreign bool
	// issued is the answer kept for a payment whose report was issued
	issued *store.Issued
}

func examined() map[string]any {
	return map[string]any{"mode": "x402", "examined": true, "charged": false}
}

// demand402 is a 402 with a fresh PAYMENT-REQUIRED whose error says why.
func (g *Gate) demand402(req payment.Request, code, reason string) *payment.Demand {
	pr := PaymentRequired{X402Version: Version, Error: reason, Resource: g.resource(req),
		Accepts: []Requirements{g.Requirements(req)}, Extensions: map[string]any{ExtensionIdentifier: DeclareIdentifier()}}
	if b := bazaar(req.Input); b != nil {
		pr.Extensions["bazaar"] = b
	}
	h, _ := EncodeHeader(pr)
	d := &payment.Demand{Status: http.StatusPaymentRequired, Code: code, Message: gateMessages[code],
		Members: map[string]any{"x402": pr, "payment": examined()}, Header: map[string]string{HeaderRequired: h}}
	if code != CodeRequired {
		d.Facts = map[string]any{"reason": reason}
		d.Members["payment"] = examined()
	} else {
		d.Members["payment"] = map[string]any{"mode": "x402", "charged": false}
	}
	return d
}

func refuse(status int, code string) *payment.Demand {
	return &payment.Demand{Status: status, Code: code, Message: gateMessages[code], Members: map[string]any{"payment": examined()}}
}

// Admit implements payment.Gate.
func (g *Gate) Admit(ctx context.Context, req payment.Request) (*payment.Admission, *payment.Demand, error) {
	if token := req.HTTP.Header.Get(HeaderMarker); token != "" {
		return g.redeem(ctx, req, token)
	}
	h := req.HTTP.Header.Get(HeaderSignature)
	if h == "" {
		// a host that cannot take a payment now asks for none
		if d, err := g.holding(ctx); d != nil || err != nil {
			return nil, d, err
		}
		return nil, g.demand402(req, CodeRequired, "PAYMENT-SIGNATURE header is required"), nil
	}
	p, err := DecodePayment(h)
	if err != nil {
		return nil, g.demand402(req, CodeInvalid, "invalid_payload"), nil
	}
	reqs := g.Requirements(req)
	if reason := reqs.Mismatch(p.Accepted); reason != "" {
		return nil, g.demand402(req, CodeInvalid, reason), nil
	}
	if p.Resource != nil && !resourceOfRoute(p.Resource.URL, req) {
		return nil, g.demand402(req, CodeInvalid, ReasonRouteMismatch), nil
	}
	return g.check(ctx, req, p, h, reqs, "", "")
}

// check admits a payment: one whose claim is settled but undelivered (its
// host died, or the report failed after settlement) is admitted without
// the facilitator, to be delivered without a second charge; one already
// delivered is a replay; a new one is verified.
func (g *Gate) check(ctx context.Context, req payment.Request, p *PaymentPayload, h string, reqs Requirements, marker, token string) (*payment.Admission, *payment.Demand, error) {
	id, err := PaymentID(p)
	if err != nil {
		return nil, g.demand402(req, CodeInvalid, "invalid_exact_svm_payload_transaction"), nil
	}
	// the memo is the payment's own (each 402 has its own): the facilitator
	// checks the transaction against the one the payer was given
	memo, _ := p.Accepted.Extra["memo"].(string)
	reqs = reqs.withMemo(memo)
	ident, err := p.Identifier()
	if err != nil {
		return nil, refuse(http.StatusBadRequest, CodeIdentifierInvalid), nil
	}
	st := &admitted{payload: p, header: h, reqs: reqs, id: id, marker: marker, token: token, identifier: ident}
	if ident != "" {
		st.lookup = g.identifierLookup(req.Service, req.Op, ident)
	}
	c, err := g.claimOf(ctx, st)
	switch {
	case err == nil && c.State != store.ClaimSettling:
		// its settlement is recorded: delivering it moves nothing, held
		// or not
		return g.admitClaim(ctx, req, st, c)
	case err != nil && !errors.Is(err, store.ErrNoClaim):
		return nil, nil, err
	}
	// what follows settles, or verifies to settle: not while held
	if d, err := g.holding(ctx); d != nil || err != nil {
		return nil, d, err
	}
	if err == nil {
		return g.admitClaim(ctx, req, st, c)
	}
	// a new payment carries one of this host's memos, the one its 402 gave,
	// made for this route: one made from another route's 402 is refused
	// before anything is verified, and still buys its own route's report
	switch {
	case !IsHostMemo(memo):
		return nil, g.demand402(req, CodeInvalid, solana.ReasonMemoMismatch), nil
	case !memoOfRoute(g.markerKey, memo, req.Service, req.Op):
		return nil, g.demand402(req, CodeInvalid, ReasonRouteMismatch), nil
	}
	v, err := g.cfg.Facilitator.Verify(ctx, p, reqs)
	if err != nil {
		return nil, nil, err
	}
	if v.Reason != "" {
		return nil, g.demand402(req, CodeInvalid, v.Reason), nil
	}
	if v.TxID != "" && v.Settled == nil {
		// a transaction settled under the store's earlier schema (a claim
		// opened settled finds it itself: its insert meets the unique
		// transaction id, ErrDuplicateTx)
		taken, err := g.cfg.Store.TxClaimed(ctx, v.TxID)
		if err != nil {
			return nil, nil, err
		}
		if taken {
			return nil, g.demand402(req, CodeReplayed, "duplicate_settlement"), nil
		}
	}
	st.payer, st.txID, st.blockhash, st.memo, st.settled = v.Payer, v.TxID, v.Blockhash, memo, v.Settled
	if st.blockhash == "" {
		st.blockhash = payloadBlockhash(p)
	}
	return &payment.Admission{Facts: examined(), State: st}, nil, nil
}

// resourceOfRoute reports whether a payment's resource URL (the 402's,
// which the client copies) names req's route: its path ends in the op,
// after the service on a host of several (a host of one service answers
// at its root too). A URL that does not parse names no route.
func resourceOfRoute(raw string, req payment.Request) bool {
	if raw == "" {
		return true // the client sent none: the memo decides
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	return u.Path == "/"+req.Service+"/"+req.Op || u.Path == "/"+req.Op || req.HTTP != nil && u.Path == req.HTTP.URL.Path
}

// identifierLookup is the store's key for a payment identifier on one
// route: a MAC under the store's own key, the same on every host of a
// fleet, so the store never holds the identifier (the payer's key to its
// answer, never stored).
func (g *Gate) identifierLookup(service, op, identifier string) string {
	m := hmac.New(sha256.New, g.markerKey)
	m.Write([]byte("assay-payment-identifier/1\x00" + service + "\x00" + op + "\x00" + identifier))
	return "i1:" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// claimOf is the claim a payment comes under: its identifier's, when the
// payer sent one that a claim holds (whatever payment this request
// carries: the official client builds a fresh one for a retry), else the
// payment's own. ErrNoClaim for a new payment.
func (g *Gate) claimOf(ctx context.Context, st *admitted) (store.Claim, error) {
	if st.lookup != "" {
		c, err := g.cfg.Store.ClaimByIdentifier(ctx, st.lookup)
		if err == nil {
			st.foreign = c.PaymentID != st.id
			st.id = c.PaymentID
			return c, nil
		}
		if !errors.Is(err, store.ErrNoClaim) {
			return c, err
		}
	}
	return g.cfg.Store.GetClaim(ctx, st.id)
}

// admitClaim admits a payment that has a claim: one whose report was
// issued is answered again (Issued) while its answer is kept, and is a
// replay once its window has ended; one settled or settling but not
// issued (its host died, or the report failed after settlement) is
// measured and issued without a second charge.
func (g *Gate) admitClaim(ctx context.Context, req payment.Request, st *admitted, c store.Claim) (*payment.Admission, *payment.Demand, error) {
	switch {
	case c.Service != req.Service || c.Op != req.Op:
		// the payment bought (or is buying) another route's report
		return nil, g.demand402(req, CodeInvalid, ReasonRouteMismatch), nil
	case c.IDLookup == "" && st.lookup != "":
		// a claim opened without an identifier (the payment's first
		// sending had none, or a host from before identifiers opened it):
		// the payment alone names it, and its answer was kept without one
		st.identifier, st.lookup = "", ""
	case c.IDLookup != st.lookup:
		// the payment was first sent with another identifier, or with one
		// and now without: its answer opens only with it
		return nil, conflict(), nil
	}
	if c.State == store.ClaimIssued {
		a, err := g.cfg.Store.IssuedAnswer(ctx, c.PaymentID, g.cfg.Now())
		if errors.Is(err, store.ErrNotIssued) {
			if st.marker != "" {
				return nil, refuse(http.StatusBadRequest, CodeMarkerSpent), nil
			}
			return nil, g.demand402(req, CodeReplayed, "duplicate_settlement"), nil
		}
		if err != nil {
			return nil, nil, err
		}
		st.claim, st.payer, st.issued = &c, c.Payer, &a
		return &payment.Admission{Facts: examined(), State: st, Issued: true}, nil, nil
	}
	st.claim, st.payer, st.charged = &c, c.Payer, true
	return &payment.Admission{Facts: examined(), State: st}, nil, nil
}

// conflict is the 409 for a payment (or identifier) issued for another
// submission: nothing was charged by this request.
func conflict() *payment.Demand {
	d := refuse(http.StatusConflict, CodeConflict)
	d.Members["payment"] = map[string]any{"mode": "x402", "examined": true, "charged": false}
	return d
}

// Seal implements payment.Redeliverer: the answer of a receipt with a
// claim is kept, sealed for the payment, its identifier and the
// submission's digest, until the redelivery window ends.
func (g *Gate) Seal(a *payment.Admission, r *payment.Receipt, d redelivery.Digest, answer redelivery.Answer) (*store.Issued, error) {
	st, ok := a.State.(*admitted)
	if !ok || r == nil || r.Claim == nil {
		return nil, nil
	}
	sealed, err := g.cfg.Sealer.Seal(r.Claim.PaymentID, st.identifier, d, answer)
	if err != nil {
		return nil, err
	}
	return &store.Issued{SealKID: g.cfg.Sealer.KID(), Sealed: sealed, Expires: g.cfg.Now().Add(g.cfg.Redelivery)}, nil
}

// Redeliver implements payment.Redeliverer: the kept answer opens only
// for the submission it was issued for (and the identifier it was sent
// with); any other is a conflict, and nothing is charged either way.
func (g *Gate) Redeliver(_ context.Context, _ payment.Request, a *payment.Admission, d redelivery.Digest) (*redelivery.Answer, *payment.Demand, error) {
	st, ok := a.State.(*admitted)
	if !ok || st.issued == nil || st.claim == nil {
		return nil, nil, errors.New("x402: redelivery of an admission with no issued answer")
	}
	if st.issued.SealKID != g.cfg.Sealer.KID() {
		d := refuse(http.StatusServiceUnavailable, CodeIssuedElsewhere)
		d.Members["payment"] = map[string]any{"mode": "x402", "examined": true, "charged": false}
		d.Header = map[string]string{"Retry-After": "1"}
		return nil, d, nil
	}
	ans, err := g.cfg.Sealer.Open(st.claim.PaymentID, st.identifier, d, st.issued.Sealed)
	if errors.Is(err, redelivery.ErrMismatch) {
		return nil, conflict(), nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &ans, nil, nil
}

// SweepIssued deletes, every interval until ctx ends, the kept answers
// whose redelivery window has ended. A host runs it; several on one
// store each delete what has expired, none harmed by another's.
func (g *Gate) SweepIssued(ctx context.Context, every time.Duration, onError func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := g.cfg.Store.SweepIssued(sctx, g.cfg.Now())
		cancel()
		if err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// AdmitsLocally implements payment.LocalAdmitter: without a chain the
// embedded facilitator's check is the host's own work.
func (g *Gate) AdmitsLocally() bool { return g.cfg.Facilitator.Offline() }

// Settle implements payment.Gate. The request first holds the payment's
// claim (opening it, or taking over one whose lease ran out); a claim in
// settling is settled through the facilitator and recorded settled; a
// settled one is not settled again. The receipt carries the claim, which
// the server moves to delivered with the ledger line once the answer is
// written.
func (g *Gate) Settle(ctx context.Context, req payment.Request, a *payment.Admission) (*payment.Receipt, *payment.Demand, error) {
	st := a.State.(*admitted)
	if !g.cfg.Facilitator.Offline() && (st.claim == nil || st.claim.State == store.ClaimSettling) {
		// money is about to move: the store carries this gate's identity
		// first (the first settlement stamps it), or nothing is sent
		if d, err := g.ensureStamp(ctx); d != nil || err != nil {
			return nil, d, err
		}
	}
	now := g.cfg.Now()
	until := now.Add(g.cfg.Lease)
	opened := false
	if st.claim == nil {
		claim := store.Claim{PaymentID: st.id, Service: req.Service, Op: req.Op,
			PriceUSDCUnits: req.Price.USDCUnits, Payer: st.payer, House: g.cfg.Facilitator.Offline(),
			Owner: g.owner, LeaseUntil: until, Created: now, TxID: st.txID, Blockhash: st.blockhash, Memo: st.memo, IDLookup: st.lookup}
		if st.settled != nil {
			if r, d, done, err := g.openSettled(ctx, req, st, claim); done || err != nil {
				return r, d, err
			}
		} else {
			var err error
			opened, err = g.cfg.Store.OpenClaim(ctx, claim)
			if errors.Is(err, store.ErrIdentifierClaimed) {
				return nil, identifierBusy(), nil
			}
			if err != nil {
				return nil, nil, err
			}
		}
	}
	if !opened {
		leased, err := g.cfg.Store.LeaseClaim(ctx, st.id, g.owner, now, until)
		if err != nil {
			return nil, nil, err
		}
		if !leased {
			d, err := g.busyClaim(ctx, req, st.id, now)
			return nil, d, err
		}
	}
	st.charged = true
	c, err := g.cfg.Store.GetClaim(ctx, st.id)
	if err != nil {
		return nil, nil, err
	}
	if c.State == store.ClaimSettling && st.foreign {
		// the identifier's own payment is still settling (or its host died
		// settling it): only that payment can settle it, never this one
		g.release(st.id)
		return nil, identifierBusy(), nil
	}
	if c.State == store.ClaimSettling {
		var d *payment.Demand
		if c, d, err = g.settle(ctx, req, st, c, opened); err != nil || d != nil {
			return nil, d, err
		}
	} else if err := g.cfg.Store.RenewClaim(ctx, st.id, g.owner, g.cfg.Now().Add(deliveryLease)); err != nil {
		// a settled claim redeemed: what remains is the delivery
		return nil, nil, err
	}
	return g.receipt(req, st, c), nil, nil
}

// openSettled opens a new payment's claim already settled, the
// facilitator having settled while verifying: done is false when the
// payment has a claim already (another request's), to be leased as any.
func (g *Gate) openSettled(ctx context.Context, req payment.Request, st *admitted, c store.Claim) (_ *payment.Receipt, _ *payment.Demand, done bool, _ error) {
	s := st.settled
	c.TxID, c.Network, c.FeeLamports = s.TxID, s.Network, s.FeeLamports
	if s.Payer != "" {
		c.Payer = s.Payer
	}
	if c.Network == "" {
		c.Network = g.cfg.Network
	}
	c.LeaseUntil = g.cfg.Now().Add(deliveryLease)
	if g.cfg.Facilitator.Offline() {
		// nothing left the host: the claim is written with the report's
		// issue, in its transaction (one commit a paid request, not two);
		// another request with the same payment meets it there
		c.State = store.ClaimSettled
		r := g.receipt(req, st, c)
		r.Claim.Pending = &c
		return r, nil, true, nil
	}
	opened, err := g.cfg.Store.OpenSettledClaim(ctx, c, g.cfg.Now())
	switch {
	case errors.Is(err, store.ErrIdentifierClaimed):
		return nil, identifierBusy(), true, nil
	case errors.Is(err, store.ErrDuplicateTx):
		return nil, g.settleFailure(req, CodeReplayed, "duplicate_settlement", c.Payer), true, nil
	case err != nil:
		return nil, nil, true, err
	case !opened:
		return nil, nil, false, nil
	}
	st.charged, st.opened = true, true
	c.State = store.ClaimSettled
	return g.receipt(req, st, c), nil, true, nil
}

// SettlesLocally implements payment.EarlySettler: without a chain the
// settlement leaves nothing outside the host, and its claim is written
// with the report's issue (payment.Claim.Pending).
func (g *Gate) SettlesLocally() bool { return g.cfg.Facilitator.Offline() }

// Withdraw implements payment.EarlySettler: a claim this request opened
// settled (nothing was broadcast) is deleted, so the payment is as it was
// before the request; one it took over (a redemption) is released, still
// redeemable.
func (g *Gate) Withdraw(_ context.Context, a *payment.Admission, r *payment.Receipt) {
	st, ok := a.State.(*admitted)
	if !ok || r == nil || r.Claim == nil || r.Claim.Pending != nil {
		return // nothing was written
	}
	if !st.opened {
		g.release(r.Claim.PaymentID)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.cfg.Store.WithdrawClaim(ctx, r.Claim.PaymentID, r.Claim.Owner); err != nil {
		// the claim stays settled and undelivered: a re-send redeems it
		g.release(r.Claim.PaymentID)
		return
	}
	st.charged, st.opened = st.claim != nil, false
}

// receipt is a settled claim's receipt: the claim goes with it, for the
// server to move to delivered with the ledger line.
func (g *Gate) receipt(req payment.Request, st *admitted, c store.Claim) *payment.Receipt {
	resp, _ := EncodeHeader(SettleResponse{Success: true, Transaction: c.TxID, Network: c.Network, Payer: c.Payer})
	return &payment.Receipt{
		Payer: c.Payer, TransactionID: c.TxID, USDCUnits: req.Price.USDCUnits, FeeLamports: c.FeeLamports,
		House:  c.House,
		Facts:  g.receiptFacts(req, c),
		Header: map[string]string{HeaderResponse: resp},
		Claim:  &payment.Claim{PaymentID: st.id, Owner: g.owner},
	}
}

// receiptFacts are a report's payment member: what was paid, and, from a
// host in house mode, that nothing moved.
func (g *Gate) receiptFacts(req payment.Request, c store.Claim) map[string]any {
	f := map[string]any{"mode": "x402", "charged": true, "network": c.Network, "transaction": c.TxID, "payer": c.Payer,
		"price_usdc_units": req.Price.USDCUnits, "price_label": req.Price.Label}
	if c.House {
		f["house"] = HouseNote
	}
	return f
}

// HouseNote is what a host in house mode (the embedded facilitator with
// no chain) says in every 402 and every report it issues.
const HouseNote = "house mode: this host's own facilitator checks and co-signs payments and broadcasts nothing: no USDC moves and this host takes no money (charged means recorded in its books)"

// settle settles a claim in state settling through the facilitator and
// records it settled; d is the answer when the facilitator refused.
func (g *Gate) settle(ctx context.Context, req payment.Request, st *admitted, c store.Claim, opened bool) (_ store.Claim, d *payment.Demand, err error) {
	if g.cfg.Chain != nil && !opened {
		// an earlier settlement's outcome is unknown (its host died, or
		// no answer came): the chain says first, so a facilitator whose
		// replay guard remembers the transaction is never asked again
		if c, d, done, err := g.settleFromChain(ctx, req, g.cfg.Chain, c); done || err != nil {
			return c, d, err
		}
	}
	s, err := g.cfg.Facilitator.Settle(ctx, st.payload, st.reqs)
	if err != nil {
		// the outcome is unknown: the claim stays settling, free for a
		// re-send to settle again
		g.release(st.id)
		return c, nil, err
	}
	if s.Reason != "" {
		if opened || s.NeverLanded {
			// this request opened the claim and the facilitator refused, or
			// the chain is certain the transaction never landed: nothing
			// was taken
			err = g.cfg.Store.DropClaim(ctx, st.id, g.owner)
		} else {
			// an earlier settlement's outcome is unknown (its host died
			// during it): keep the claim for the operator, never forget it
			g.release(st.id)
		}
		return c, g.settleFailure(req, CodeNotSettled, s.Reason, s.Payer), err
	}
	c.TxID, c.Payer, c.Network, c.FeeLamports = s.TxID, s.Payer, s.Network, s.FeeLamports
	if c.FeeLamports == nil && g.cfg.Chain != nil {
		// a remote facilitator does not say the fee; the chain does
		c.FeeLamports = g.cfg.Chain.TransactionFee(ctx, c.TxID)
	}
	c.LeaseUntil = g.cfg.Now().Add(deliveryLease)
	if c.Payer == "" {
		c.Payer = st.payer
	}
	if c.Network == "" {
		c.Network = g.cfg.Network
	}
	switch err := g.cfg.Store.SettleClaim(ctx, st.id, g.owner, c, g.cfg.Now()); {
	case errors.Is(err, store.ErrDuplicateTx):
		// the transaction was settled under the store's earlier schema
		_ = g.cfg.Store.DropClaim(ctx, st.id, g.owner)
		return c, g.settleFailure(req, CodeReplayed, "duplicate_settlement", c.Payer), nil
	case err != nil:
		// settled and not recorded as such: a re-send settles again (the
		// same transaction) and records it
		g.release(st.id)
		return c, nil, err
	}
	c.State = store.ClaimSettled
	return c, nil, nil
}

// inProgressSettling is payment_in_progress's message while the other
// request's settlement is under way (charged: false, not yet known).
const inProgressSettling = "another request is settling this payment and its outcome is not known yet; nothing was charged by this request; send it again after Retry-After"

// busyClaim answers a payment whose claim another request holds (or that
// was delivered meanwhile).
func (g *Gate) busyClaim(ctx context.Context, req payment.Request, id string, now time.Time) (*payment.Demand, error) {
	c, err := g.cfg.Store.GetClaim(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.State == store.ClaimIssued {
		// issued by another request since this one was admitted: a
		// re-send is answered with it
		d := refuse(http.StatusServiceUnavailable, CodeInProgress)
		d.Header = map[string]string{"Retry-After": "1"}
		return d, nil
	}
	wait := max(1, int((c.LeaseUntil.Sub(now)+time.Second-1)/time.Second))
	d := refuse(http.StatusServiceUnavailable, CodeInProgress)
	// each claim state its own message and its one charged value: settled,
	// the payment was taken and its report is being delivered; settling,
	// the other request's settlement has no outcome yet
	charged := c.State == store.ClaimSettled
	if !charged {
		d.Message = inProgressSettling
	}
	d.Members["payment"] = map[string]any{"mode": "x402", "examined": true, "charged": charged}
	d.Header = map[string]string{"Retry-After": strconv.Itoa(wait)}
	return d, nil
}

// identifierBusy answers a payment whose identifier another payment's
// claim holds while that one is settling or being issued: this payment is
// not taken; a re-send after the wait gets the identifier's report.
func identifierBusy() *payment.Demand {
	d := refuse(http.StatusServiceUnavailable, CodeInProgress)
	d.Message = inProgressSettling
	d.Header = map[string]string{"Retry-After": "1"}
	return d
}

// release ends this run's lease on a claim, on a context of its own: the
// request's may be what ended.
func (g *Gate) release(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.cfg.Store.ReleaseClaim(ctx, id, g.owner)
}

// Release implements payment.Gate.
func (g *Gate) Release(_ context.Context, r *payment.Receipt) {
	if r != nil && r.Claim != nil && r.Claim.Pending == nil {
		g.release(r.Claim.PaymentID)
	}
}

func (g *Gate) settleFailure(req payment.Request, code, reason, payer string) *payment.Demand {
	resp, _ := EncodeHeader(SettleResponse{Success: false, ErrorReason: reason, Transaction: "", Network: g.cfg.Network, Payer: payer})
	return &payment.Demand{Status: http.StatusPaymentRequired, Code: code, Message: gateMessages[code], Facts: map[string]any{"reason": reason},
		Members: map[string]any{"payment": examined()}, Header: map[string]string{HeaderResponse: resp}}
}

// Undelivered implements payment.Gate: the payment passed its checks but
// the report was not delivered, so the client gets a marker that redeems
// this payment for one report, without paying again. The marker row holds
// the payment header only.
func (g *Gate) Undelivered(ctx context.Context, req payment.Request, a *payment.Admission) (map[string]any, map[string]string) {
	st, ok := a.State.(*admitted)
	if !ok {
		return examined(), nil
	}
	now := g.cfg.Now()
	token := st.token
	expires := now.Add(time.Duration(g.cfg.MaxTimeoutSeconds) * time.Second)
	if st.marker == "" {
		id := make([]byte, 18)
		if _, err := rand.Read(id); err != nil {
			return examined(), nil
		}
		mid := base64.RawURLEncoding.EncodeToString(id)
		m := store.Marker{ID: mid, Service: req.Service, Op: req.Op, Payment: st.header, Created: now, Expires: expires}
		if err := g.cfg.Store.PutMarker(ctx, m); err != nil {
			return examined(), nil
		}
		token = mid + "." + g.mac(mid)
	} else if m, err := g.cfg.Store.GetMarker(ctx, st.marker); err == nil {
		expires = m.Expires
	}
	facts := examined()
	// what the payment is now: a settlement that landed before the report
	// was lost is a charge, and the answer must not say otherwise
	facts["charged"] = st.charged
	dm := map[string]any{"token": token, "header": HeaderMarker}
	if !st.charged {
		// nothing was taken: the payment (and so the marker) is good until
		// the requirements' timeout; once taken, it never expires
		dm["expires_at"] = expires.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	facts["delivery_marker"] = dm
	return facts, map[string]string{HeaderMarker: token}
}

func (g *Gate) mac(id string) string {
	m := hmac.New(sha256.New, g.markerKey)
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (g *Gate) redeem(ctx context.Context, req payment.Request, token string) (*payment.Admission, *payment.Demand, error) {
	id, mac, ok := strings.Cut(token, ".")
	if !ok || len(token) > 256 || !hmac.Equal([]byte(mac), []byte(g.mac(id))) {
		return nil, refuse(http.StatusBadRequest, CodeMarkerInvalid), nil
	}
	m, err := g.cfg.Store.GetMarker(ctx, id)
	if errors.Is(err, store.ErrNoMarker) || (err == nil && (m.Service != req.Service || m.Op != req.Op)) {
		return nil, refuse(http.StatusBadRequest, CodeMarkerInvalid), nil
	}
	if err != nil {
		return nil, nil, err
	}
	p, err := DecodePayment(m.Payment)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, CodeMarkerInvalid), nil
	}
	// a marker whose payment was taken never expires (its claim says
	// whether it is spent); one whose payment was not lasts as the
	// payment's own timeout
	if pid, err := PaymentID(p); err == nil && !g.cfg.Now().Before(m.Expires) {
		if _, err := g.cfg.Store.GetClaim(ctx, pid); errors.Is(err, store.ErrNoClaim) {
			return nil, refuse(http.StatusBadRequest, CodeMarkerExpired), nil
		} else if err != nil {
			return nil, nil, err
		}
	}
	return g.check(ctx, req, p, m.Payment, g.Requirements(req), id, token)
}

// UnchargedFacts implements payment.Gate: a submission refused before the
// payment header was read says so.
func (g *Gate) UnchargedFacts() map[string]any {
	return map[string]any{"mode": "x402", "examined": false, "charged": false}
}

// PaymentID is a payment's identity before it is settled: a digest of the
// transaction message the payer signed (the fee payer's signature, which
// becomes the transaction id, is not there yet). The same payment re-sent
// has the same id; any other payment, another.
func PaymentID(p *PaymentPayload) (string, error) {
	raw, err := base64.StdEncoding.Strict().DecodeString(p.Payload.Transaction)
	if err != nil {
		return "", fmt.Errorf("x402: payment transaction: %w", err)
	}
	tx, err := solana.DecodeTransaction(raw)
	if err != nil {
		return "", fmt.Errorf("x402: payment transaction: %w", err)
	}
	sum := sha256.Sum256(append([]byte("assay-payment-id/1\x00"), tx.MessageBytes...))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// bazaar is the route's x402 v2 discovery metadata, the `bazaar`
// extension of PaymentRequired as the official packages define it
// (@x402/extensions, bazaar/http/types.ts BodyDiscoveryInfo; Go
// extensions/types DiscoveryExtension): info.input is an HTTP POST with a
// JSON body (the corpus's example), info.output JSON, and schema a JSON
// Schema (2020-12) that validates info, the route's request schema as
// input.body. nil when the route has no schema or example.
func bazaar(in payment.Input) map[string]any {
	var body, example map[string]any
	if json.Unmarshal(in.Schema, &body) != nil || json.Unmarshal(in.Example, &example) != nil || body == nil || example == nil {
		return nil
	}
	// the request schema's own definitions move to the root, where its
	// "#/$defs/…" references now resolve
	defs := body["$defs"]
	delete(body, "$defs")
	delete(body, "$schema")
	schema := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"properties": map[string]any{
			"input": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"type":     map[string]any{"type": "string", "const": "http"},
					"method":   map[string]any{"type": "string", "enum": []any{"POST"}},
					"bodyType": map[string]any{"type": "string", "enum": []any{"json", "form-data", "text"}},
					"body":     body,
				},
				"required":             []any{"type", "method", "bodyType", "body"},
				"additionalProperties": false,
			},
			"output": map[string]any{
				"type":       "object",
				"properties": map[string]any{"type": map[string]any{"type": "string"}, "format": map[string]any{"type": "string"}},
				"required":   []any{"type"},
			},
		},
		"required": []any{"input"},
	}
	if defs != nil {
		schema["$defs"] = defs
	}
	return map[string]any{
		"info": map[string]any{
			"input":  map[string]any{"type": "http", "method": "POST", "bodyType": "json", "body": example},
			"output": map[string]any{"type": "json", "format": "a signed report: Ed25519 over the RFC 8785 bytes, keys at GET /keys"},
		},
		"schema": schema,
	}
}
