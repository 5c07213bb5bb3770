package x402

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/solana"
	"github.com/assay-audit/assay/host/store"
)

// HeaderMarker carries a delivery marker on a re-sent request.
const HeaderMarker = "ASSAY-DELIVERY-MARKER"

// Gate codes (refusal codes of the paid route's payment step).
const (
	CodeRequired      = "payment_required"
	CodeInvalid       = "payment_invalid"
	CodeReplayed      = "payment_replayed"
	CodeNotSettled    = "payment_not_settled"
	CodeMarkerInvalid = "marker_invalid"
	CodeMarkerExpired = "marker_expired"
	CodeMarkerSpent   = "marker_spent"
)

var gateMessages = map[string]string{
	CodeRequired:      "this route is paid: send the payment in PAYMENT-SIGNATURE (x402 v2)",
	CodeInvalid:       "the payment was refused; nothing was charged",
	CodeReplayed:      "that payment's transaction was already settled; nothing was delivered for it again",
	CodeNotSettled:    "the payment could not be settled; nothing was charged",
	CodeMarkerInvalid: "the delivery marker is not one this service issued for this route",
	CodeMarkerExpired: "the delivery marker has expired",
	CodeMarkerSpent:   "the delivery marker was already redeemed",
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
	Now       func() time.Time
}

// Gate is the x402 payment gate (payment.Gate).
type Gate struct {
	cfg       Config
	markerKey []byte
	blockhash string
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
	k, err := cfg.Store.MarkerKey(ctx)
	if err != nil {
		return nil, err
	}
	g := &Gate{cfg: cfg, markerKey: k}
	if cfg.Facilitator.Offline() {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("x402: blockhash: %w", err)
		}
		g.blockhash = solana.EncodeBase58(b)
	}
	return g, nil
}

// Requirements are what a paid request must pay.
func (g *Gate) Requirements(req payment.Request) Requirements {
	extra := map[string]any{"feePayer": g.cfg.Facilitator.FeePayer()}
	if g.blockhash != "" {
		extra["recentBlockhash"] = g.blockhash
	}
	return Requirements{Scheme: "exact", Network: g.cfg.Network, Amount: strconv.FormatInt(req.Price.USDCUnits, 10),
		Asset: g.cfg.Asset, PayTo: g.cfg.PayTo, MaxTimeoutSeconds: g.cfg.MaxTimeoutSeconds, Extra: extra}
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
	return Resource{URL: base + req.HTTP.URL.Path, Description: req.Service + " " + req.Op + ": " + req.Price.Basis, MimeType: "application/json"}
}

type admitted struct {
	payload *PaymentPayload
	header  string
	reqs    Requirements
	payer   string
	marker  string // the marker being redeemed, if any
	token   string
}

func examined() map[string]any {
	return map[string]any{"mode": "x402", "examined": true, "charged": false}
}

// demand402 is a 402 with a fresh PAYMENT-REQUIRED whose error says why.
func (g *Gate) demand402(req payment.Request, code, reason string) *payment.Demand {
	pr := PaymentRequired{X402Version: Version, Error: reason, Resource: g.resource(req),
		Accepts: []Requirements{g.Requirements(req)}, Extensions: map[string]any{}}
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
		return nil, g.demand402(req, CodeRequired, "PAYMENT-SIGNATURE header is required"), nil
	}
	p, err := DecodePayment(h)
	if err != nil {
		return nil, g.demand402(req, CodeInvalid, "invalid_payload"), nil
	}
	reqs := g.Requirements(req)
	if !reqs.Matches(p.Accepted) {
		return nil, g.demand402(req, CodeInvalid, "no_matching_payment_requirements"), nil
	}
	return g.check(ctx, req, p, h, reqs, "", "")
}

func (g *Gate) check(ctx context.Context, req payment.Request, p *PaymentPayload, h string, reqs Requirements, marker, token string) (*payment.Admission, *payment.Demand, error) {
	v, err := g.cfg.Facilitator.Verify(ctx, p, reqs)
	if err != nil {
		return nil, nil, err
	}
	if v.Reason != "" {
		return nil, g.demand402(req, CodeInvalid, v.Reason), nil
	}
	if v.TxID != "" {
		settled, err := g.cfg.Store.Settled(ctx, v.TxID)
		if err != nil {
			return nil, nil, err
		}
		if settled {
			return nil, g.demand402(req, CodeReplayed, "duplicate_settlement"), nil
		}
	}
	return &payment.Admission{Facts: examined(), State: &admitted{payload: p, header: h, reqs: reqs, payer: v.Payer, marker: marker, token: token}}, nil, nil
}

// Settle implements payment.Gate.
func (g *Gate) Settle(ctx context.Context, req payment.Request, a *payment.Admission) (*payment.Receipt, *payment.Demand, error) {
	st := a.State.(*admitted)
	s, err := g.cfg.Facilitator.Settle(ctx, st.payload, st.reqs)
	if err != nil {
		return nil, nil, err
	}
	if s.Reason != "" {
		return nil, g.settleFailure(req, CodeNotSettled, s.Reason, s.Payer), nil
	}
	claimed, err := g.cfg.Store.ClaimTx(ctx, s.TxID, g.cfg.Now())
	if err != nil {
		return nil, nil, err
	}
	if !claimed {
		return nil, g.settleFailure(req, CodeReplayed, "duplicate_settlement", s.Payer), nil
	}
	if st.marker != "" {
		if _, err := g.cfg.Store.SpendMarker(ctx, st.marker, g.cfg.Now()); err != nil {
			return nil, nil, err
		}
	}
	payer := s.Payer
	if payer == "" {
		payer = st.payer
	}
	network := s.Network
	if network == "" {
		network = g.cfg.Network
	}
	resp, _ := EncodeHeader(SettleResponse{Success: true, Transaction: s.TxID, Network: network, Payer: payer})
	return &payment.Receipt{
		Payer: payer, TransactionID: s.TxID, USDCUnits: req.Price.USDCUnits, FeeLamports: s.FeeLamports,
		House: g.cfg.Facilitator.Offline(),
		Facts: map[string]any{"mode": "x402", "charged": true, "network": network, "transaction": s.TxID, "payer": payer,
			"price_usdc_units": req.Price.USDCUnits, "price_label": req.Price.Label},
		Header: map[string]string{HeaderResponse: resp},
	}, nil, nil
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
	facts["delivery_marker"] = map[string]any{"token": token, "header": HeaderMarker, "expires_at": expires.UTC().Truncate(time.Second).Format(time.RFC3339)}
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
	if m.Spent {
		return nil, refuse(http.StatusBadRequest, CodeMarkerSpent), nil
	}
	if !g.cfg.Now().Before(m.Expires) {
		return nil, refuse(http.StatusBadRequest, CodeMarkerExpired), nil
	}
	p, err := DecodePayment(m.Payment)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, CodeMarkerInvalid), nil
	}
	return g.check(ctx, req, p, m.Payment, g.Requirements(req), id, token)
}

// UnchargedFacts implements payment.Gate: a submission refused before the
// payment header was read says so.
func (g *Gate) UnchargedFacts() map[string]any {
	return map[string]any{"mode": "x402", "examined": false, "charged": false}
}
