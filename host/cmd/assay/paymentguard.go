package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/preflight"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
)

// payGuard holds a gate's paid routes while its payment path is not
// proven: a host whose node or facilitator did not answer at start serves
// its pre-checks, redeliveries and catalog and answers paid calls 503
// payment_unavailable (nothing verified, nothing taken) until the path
// answers, then takes payments with nothing restarted. A path that
// answers with a definite misconfiguration (another network, no token
// account for pay_to, …) holds the gate too, whenever it is found: a
// payment is never settled to the wrong place. Each preflight run moves
// the hold: readiness's every minute, and one a held request asks for
// (kick, at most every kickEvery).
type payGuard struct {
	ctx context.Context // the host's: a probe a request asks for runs under it
	run func(context.Context) []preflight.Finding
	log hclog.Logger

	gate    *x402.Gate
	probing atomic.Bool
	kicked  atomic.Int64 // unix ns of the last probe a request asked for

	mu            sync.Mutex
	proven        bool // the path answered in full once, with no misconfiguration
	misconfigured bool // its latest answer was a misconfiguration
	resolved      bool // the claims a crash left settling were looked up
}

// kickEvery spaces the probes held requests ask for: a flood of paid
// calls during an outage asks the node once in that time.
const kickEvery = 5 * time.Second

// start holds g until the path answers, when it did not at start.
func (p *payGuard) start(g *x402.Gate, proven bool) {
	p.gate = g
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proven, p.resolved = proven, proven
	if !proven {
		g.SetHold(x402.UnreachableHold())
		p.log.Warn("payments: the payment path did not answer at start: this host serves pre-checks, redeliveries and its catalog, " +
			"and answers paid calls 503 payment_unavailable (nothing taken) until it answers; the preflight asks again (GET /readyz shows it)")
	}
}

// checks is the preflight readiness repeats and shows: each run also
// moves the hold. A check that got no answer is shown as not refusing a
// start, since it no longer does.
func (p *payGuard) checks(ctx context.Context) []preflight.Finding {
	fs := p.probe(ctx)
	out := make([]preflight.Finding, len(fs))
	for i, f := range fs {
		if f.Unreachable {
			f.Fatal = false
		}
		out[i] = f
	}
	return out
}

func (p *payGuard) probe(ctx context.Context) []preflight.Finding {
	fs := p.run(ctx)
	p.observe(ctx, fs)
	return fs
}

// kick asks the path again, in the background, for a request the hold
// refused (x402.Config.OnHeld): a node back up is noticed at the next
// paid call rather than at readiness's next minute.
func (p *payGuard) kick() {
	now := time.Now().UnixNano()
	last := p.kicked.Load()
	if now-last < int64(kickEvery) || !p.kicked.CompareAndSwap(last, now) || !p.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer p.probing.Store(false)
		ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
		defer cancel()
		p.probe(ctx)
	}()
}

// observe moves the hold by one preflight run: a misconfiguration holds
// the gate; a path that answered every check with none lifts the hold
// (looking up, the first time, the claims a crash left settling); a run
// the node or facilitator did not answer leaves things as they were (a
// proven path's own calls then fail on their own, 503, nothing taken).
func (p *payGuard) observe(ctx context.Context, fs []preflight.Finding) {
	var problems []string
	for _, f := range fs {
		if f.Misconfigured() {
			problems = append(problems, f.What+": "+f.Err+" (fix: "+f.Fix+")")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case len(problems) > 0:
		if !p.misconfigured {
			p.log.Error("payments: the payment path answers with a misconfiguration: paid calls are answered 503 payment_unavailable (nothing taken) until it is fixed",
				"problems", strings.Join(problems, "; "))
		}
		p.misconfigured = true
		p.gate.SetHold(x402.MisconfiguredHold())
	case !answered(fs):
	default:
		if !p.resolved {
			p.resolve(ctx)
		}
		if !p.proven || p.misconfigured {
			p.log.Info("payments: the payment path answers: paid calls are taken")
		}
		p.proven, p.misconfigured = true, false
		p.gate.SetHold(nil)
	}
}

// resolve looks up the claims a crash left settling, as a start whose
// node answered does (x402.Config.DeferResolve); a failure is tried
// again at the next run (a re-send resolves its own claim meanwhile).
func (p *payGuard) resolve(ctx context.Context) {
	r, err := p.gate.ResolveSettling(ctx)
	if err != nil {
		p.log.Warn("payment claims left settling were not looked up on the chain; tried again at the next preflight", "error", err)
		return
	}
	p.resolved = true
	if r != (x402.Resolved{}) {
		p.log.Info("payment claims left settling, looked up on the chain", "landed_now_settled", r.Settled,
			"never_landed_released", r.Dropped, "still_unknown", r.Unknown)
	}
}

// answered is whether every check got its answer from the node and the
// facilitator.
func answered(fs []preflight.Finding) bool {
	for _, f := range fs {
		if !f.OK() && f.Unreachable {
			return false
		}
	}
	return true
}

// preflightChecks is the payment preflight on params; beside a remote
// facilitator whose fee payer is not known yet (it did not answer at
// start), it asks /supported for it first.
func preflightChecks(params preflight.Params, remote *x402.Remote) func(context.Context) []preflight.Finding {
	return func(ctx context.Context) []preflight.Finding {
		var out []preflight.Finding
		if remote != nil && remote.FeePayer() == "" {
			what := "the facilitator names its fee payer on " + params.Network
			switch err := remote.Discover(ctx, params.Network); {
			case errors.Is(err, x402.ErrNoFeePayer):
				out = append(out, preflight.Finding{What: what, Err: "its /supported names none for the exact scheme",
					Fix: "set fee_payer to the facilitator's, or use a facilitator that settles " + params.Network, Fatal: true})
			case err != nil:
				out = append(out, preflight.Finding{What: what, Err: "no answer", Detail: err.Error(),
					Fix: "check the facilitator's URL (payments) and that this host reaches it", Unreachable: true})
			}
		}
		return append(out, preflight.Run(ctx, params)...)
	}
}

// offGate is payments off: every answer free, a ledger line at price 0.
// On a store that settles on a chain it takes no paid call: its lines
// would be house lines in books that hold real money, and its reports
// given away beside hosts that sell them (the database also refuses such
// a line once the store is stamped: store.StampPaymentIdentity).
func offGate(ctx context.Context, st *store.Store, log hclog.Logger) (payment.Gate, func(context.Context) []preflight.Finding, error) {
	stamp, stamped, err := st.PaymentIdentity(ctx)
	if err != nil {
		return nil, nil, err
	}
	settled := stamped
	if !stamped {
		if settled, err = st.SettledOnChain(ctx); err != nil {
			return nil, nil, err
		}
	}
	if !settled {
		return payment.Off{}, nil, nil
	}
	logMismatch(log, stamp, "off", store.PaymentIdentity{})
	return offRefused{hold: x402.IdentityHold(stamp, "off")}, nil, nil
}

// offRefused is payments off on a store that settles on a chain: every
// paid call is answered 503 payment_identity_mismatch, nothing measured.
type offRefused struct{ hold *x402.Hold }

func offFacts() map[string]any { return map[string]any{"mode": "off", "charged": false} }

func (o offRefused) refusal() *payment.Demand {
	d := o.hold.Demand()
	d.Members["payment"] = offFacts()
	return d
}

// Admit refuses: the store takes its payments on a chain.
func (o offRefused) Admit(context.Context, payment.Request) (*payment.Admission, *payment.Demand, error) {
	return nil, o.refusal(), nil
}

// Settle is never reached (Admit admits nothing); it refuses as Admit.
func (o offRefused) Settle(context.Context, payment.Request, *payment.Admission) (*payment.Receipt, *payment.Demand, error) {
	return nil, o.refusal(), nil
}

// Undelivered has nothing to keep: nothing was admitted.
func (offRefused) Undelivered(context.Context, payment.Request, *payment.Admission) (map[string]any, map[string]string) {
	return offFacts(), nil
}

// Release has nothing to release.
func (offRefused) Release(context.Context, *payment.Receipt) {}

// UnchargedFacts says payments are off.
func (offRefused) UnchargedFacts() map[string]any { return map[string]any{"mode": "off"} }

// paymentsMode names a payments setting for the log: a facilitator's URL
// may carry a key.
func paymentsMode(payments string) string {
	if strings.Contains(payments, "://") {
		return "facilitator"
	}
	return payments
}

// logMismatch says at error, once, that the store settles as another
// payment identity than this host's configuration (mode: house, off, or
// the host's own identity): public addresses only, never a URL or a key.
func logMismatch(log hclog.Logger, stamped store.PaymentIdentity, mode string, host store.PaymentIdentity) {
	args := []any{"host_payments", mode}
	if host.Network != "" && mode != "house" && mode != "off" {
		args = append(args, "host_network", host.Network, "host_asset", host.Asset, "host_pay_to", host.PayTo)
	}
	if stamped.Network != "" {
		args = append(args, "store_network", stamped.Network, "store_asset", stamped.Asset, "store_pay_to", stamped.PayTo,
			"store_stamped_at", stamped.StampedAt.UTC().Format(time.RFC3339))
	} else {
		args = append(args, "store_identity", "settled on a chain before its identity was stamped")
	}
	log.Error("payments: this store settles on a chain as another payment identity than this host's configuration: "+
		"paid calls are answered 503 payment_identity_mismatch (nothing verified or taken); pre-checks, redeliveries and the catalog are served; "+
		"run this host with the store's payments (--payments local and its network and pay_to), or point it at another store", args...)
}
