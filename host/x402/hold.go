package x402

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/store"
)

// Codes of a held gate (503; nothing verified, nothing taken).
const (
	// CodeUnavailable: the host's payment path has not answered since it
	// started, or answers with a misconfiguration (the log and /readyz
	// name it). The server's own code for a gate that could not decide.
	CodeUnavailable = "payment_unavailable"
	// CodeIdentityMismatch: the store settles on a chain as a payment
	// identity (network, asset, pay_to) this host's configuration is not:
	// house proofs, payments off, or another identity.
	CodeIdentityMismatch = "payment_identity_mismatch"
)

// Reasons of a held gate's refusal (the error's reason, and the request
// log's): static words.
const (
	ReasonPathUnreachable = "payment_path_not_answering"
	ReasonPathMisconfig   = "payment_path_misconfigured"
	ReasonAnotherIdentity = "store_settles_as_another_identity"
	ReasonTakesNoMoney    = "store_settles_on_a_chain_and_this_host_takes_no_money"
)

// Hold is why a gate takes no payment for now. While one is set, a paid
// request without a payment, a new payment and a claim still settling
// are answered 503 Code, before anything is verified; a payment whose
// settlement is recorded (its report owed, or issued and kept) is still
// delivered, since nothing moves for it.
type Hold struct {
	Code string
	// Reason is the error's reason and the request log's: static words.
	Reason string
	// Facts are more members of the error: static words and public
	// addresses only.
	Facts map[string]any
	// RetryAfter is the Retry-After header's seconds (0: none).
	RetryAfter int
}

// UnreachableHold is a host's hold while its payment path has not
// answered since it started.
func UnreachableHold() *Hold {
	return &Hold{Code: CodeUnavailable, Reason: ReasonPathUnreachable, RetryAfter: 5}
}

// MisconfiguredHold is a host's hold while its payment path answers with
// a misconfiguration (another network, no token account for pay_to, …):
// settling then could pay the wrong place, or every payer would fail.
func MisconfiguredHold() *Hold {
	return &Hold{Code: CodeUnavailable, Reason: ReasonPathMisconfig}
}

// SetHold holds the gate (h nil: lifts the host's hold). The store's
// identity mismatch is the gate's own and is not lifted here.
func (g *Gate) SetHold(h *Hold) { g.hold.Store(h) }

// Held is the hold in force (nil: none): the identity mismatch first.
func (g *Gate) Held() *Hold {
	if h := g.mismatch.Load(); h != nil {
		return h
	}
	return g.hold.Load()
}

// IdentityMismatch is the store's identity hold (nil: none found).
func (g *Gate) IdentityMismatch() *Hold { return g.mismatch.Load() }

// Demand is the hold's 503 answer.
func (h *Hold) Demand() *payment.Demand {
	d := refuse(http.StatusServiceUnavailable, h.Code)
	d.Members["payment"] = map[string]any{"mode": "x402", "examined": false, "charged": false}
	d.Facts = map[string]any{"reason": h.Reason}
	for k, v := range h.Facts {
		d.Facts[k] = v
	}
	if h.RetryAfter > 0 {
		d.Header = map[string]string{"Retry-After": strconv.Itoa(h.RetryAfter)}
	}
	return d
}

// holding is the answer of a held gate (nil: not held). The store's
// stamp is read again at most once a second while it has none: a host
// started before another one's first settlement on the store finds it.
func (g *Gate) holding(ctx context.Context) (*payment.Demand, error) {
	h, err := g.identityHold(ctx)
	if err != nil {
		return nil, err
	}
	if h != nil {
		return h.Demand(), nil
	}
	if h = g.hold.Load(); h == nil {
		return nil, nil
	}
	if g.cfg.OnHeld != nil {
		g.cfg.OnHeld()
	}
	return h.Demand(), nil
}

// identity is what this gate takes money as.
func (g *Gate) identity() store.PaymentIdentity {
	return store.PaymentIdentity{Network: g.cfg.Network, Asset: g.cfg.Asset, PayTo: g.cfg.PayTo}
}

func (g *Gate) identityHold(ctx context.Context) (*Hold, error) {
	if h := g.mismatch.Load(); h != nil || g.stampOK.Load() {
		return h, nil
	}
	now := time.Now().UnixNano()
	if last := g.identityRead.Load(); last != 0 && now-last < int64(time.Second) {
		return nil, nil
	}
	stamp, ok, err := g.cfg.Store.PaymentIdentity(ctx)
	if err != nil {
		return nil, err
	}
	g.identityRead.Store(now)
	if !ok {
		return nil, nil
	}
	return g.compare(stamp), nil
}

// startIdentity reads the store's stamp when the gate starts. A store
// that took money under a build from before stamps is stamped now by a
// gate that settles (its identity is the one the operator runs), and is
// one a house gate takes no payment on.
func (g *Gate) startIdentity(ctx context.Context) error {
	stamp, ok, err := g.cfg.Store.PaymentIdentity(ctx)
	if err != nil {
		return err
	}
	if ok {
		g.compare(stamp)
		return nil
	}
	settled, err := g.cfg.Store.SettledOnChain(ctx)
	if err != nil || !settled {
		return err
	}
	if g.cfg.Facilitator.Offline() {
		g.compare(store.PaymentIdentity{})
		return nil
	}
	_, err = g.ensureStamp(ctx)
	return err
}

// ensureStamp stamps the store with this gate's identity unless it has
// a stamp, and holds the gate when the stamp in force is another's.
func (g *Gate) ensureStamp(ctx context.Context) (*payment.Demand, error) {
	if h := g.mismatch.Load(); h != nil {
		return h.Demand(), nil
	}
	if g.stampOK.Load() {
		return nil, nil
	}
	id := g.identity()
	id.StampedAt = g.cfg.Now().UTC()
	stamp, err := g.cfg.Store.StampPaymentIdentity(ctx, id)
	if err != nil {
		return nil, err
	}
	if h := g.compare(stamp); h != nil {
		return h.Demand(), nil
	}
	return nil, nil
}

// compare holds the gate when stamp is not its identity (a house gate's
// never is); nil when it is.
func (g *Gate) compare(stamp store.PaymentIdentity) *Hold {
	if !g.cfg.Facilitator.Offline() && stamp.Same(g.identity()) {
		g.stampOK.Store(true)
		return nil
	}
	host := map[string]any{"mode": "house"}
	reason := ReasonTakesNoMoney
	if !g.cfg.Facilitator.Offline() {
		host = identityFacts(g.identity())
		reason = ReasonAnotherIdentity
	}
	var stored any // null: the store settled before stamps
	if stamp.Network != "" {
		stored = identityFacts(stamp)
	}
	h := &Hold{Code: CodeIdentityMismatch, Reason: reason, Facts: map[string]any{"store_identity": stored, "host_identity": host}}
	if g.mismatch.CompareAndSwap(nil, h) && g.cfg.OnIdentityMismatch != nil {
		g.cfg.OnIdentityMismatch(stamp)
	}
	return g.mismatch.Load()
}

func identityFacts(id store.PaymentIdentity) map[string]any {
	return map[string]any{"network": id.Network, "asset": id.Asset, "pay_to": id.PayTo}
}

// ResolveSettling looks up on the chain the claims a crash left settling
// (NewGate does it unless Config.DeferResolve): landed, they become
// settled; never landed and never can, they go.
func (g *Gate) ResolveSettling(ctx context.Context) (Resolved, error) {
	r := g.resolver()
	if r == nil {
		return Resolved{}, nil
	}
	return g.resolveSettling(ctx, r)
}

// IdentityHold is the hold of a gate that takes no payment on a store
// that settles on a chain (payments off): the same code and facts as an
// x402 gate's.
func IdentityHold(stamp store.PaymentIdentity, mode string) *Hold {
	var stored any
	if stamp.Network != "" {
		stored = identityFacts(stamp)
	}
	return &Hold{Code: CodeIdentityMismatch, Reason: ReasonTakesNoMoney,
		Facts: map[string]any{"store_identity": stored, "host_identity": map[string]any{"mode": mode}}}
}
