package server

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/payment"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
)

// allowance is a caller's free pre-checks for the UTC day, as counted
// with this one: what a machine needs to pace itself without a refusal
// to learn from.
type allowance struct {
	perDay, remaining int64
	resets            time.Time // the next UTC midnight
	// interval is the minimum interval (a pre-check sooner than it is
	// refused with 429)
	interval time.Duration
	// at is when the free tier counted this pre-check: the reset is
	// counted from it
	at time.Time
}

// ratePolicy names the free allowance in the RateLimit fields.
const ratePolicy = `"free-precheck"`

func newAllowance(lim freetier.Limits, used int64, now time.Time) *allowance {
	day := now.UTC().Truncate(24 * time.Hour)
	return &allowance{perDay: lim.PerDay, remaining: max(lim.PerDay-used, 0), resets: day.Add(24 * time.Hour), interval: lim.MinInterval, at: now}
}

// state writes the allowance into an answer: the free_tier member and
// the RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-
// ratelimit-headers: quota q over window w seconds; r remaining, reset in
// t seconds). The window is the UTC day, so t counts to midnight, not a
// rolling 24 h.
func (a *allowance) state(h http.Header, answer map[string]any) {
	secs := a.secondsToReset()
	h.Set("RateLimit-Policy", ratePolicy+";q="+strconv.FormatInt(a.perDay, 10)+";w=86400")
	h.Set("RateLimit", ratePolicy+";r="+strconv.FormatInt(a.remaining, 10)+";t="+strconv.FormatInt(secs, 10))
	answer["free_tier"] = map[string]any{"per_day": a.perDay, "remaining": a.remaining,
		"resets_at": a.resets.Format(time.RFC3339), "min_interval_ms": a.interval.Milliseconds()}
}

// secondsToReset counts whole seconds to the reset, rounded up (at least
// 1).
func (a *allowance) secondsToReset() int64 {
	return max(int64((a.resets.Sub(a.at)+time.Second-1)/time.Second), 1)
}

// admitFree applies the free tier to a pre-check (refused ones count too)
// and answers the caller itself when it refuses.
func (s *Server) admitFree(q *request, v *pb.Validated) bool {
	if s.cfg.FreeTier == nil {
		return true
	}
	d := q.sv.Desc
	c := freetier.Caller{Addr: clientAddr(q.r, s.cfg.TrustedProxies)}
	badCaller := v.GetHasCaller() && !freetier.ValidWallet(v.GetCaller())
	if v.GetHasCaller() && !badCaller {
		c.Wallet = v.GetCaller()
	}
	lim := freetier.Limits{PerDay: d.GetFreeTier().GetPerDay(), MinInterval: time.Duration(d.GetFreeTier().GetMinIntervalMs()) * time.Millisecond}
	now := s.cfg.Now()
	adm, err := s.cfg.FreeTier.Admit(q.r.Context(), d.GetService(), ledger.UsageScope(d.GetService(), d.GetCriteriaId(), d.GetCriteriaRevision()), lim, c, now)
	if err != nil {
		s.limited.Error("free tier unavailable", "service", d.GetService(), "error", err)
		s.hostRefusal(q, http.StatusServiceUnavailable, codeFreeDown, nil)
		return false
	}
	q.allowance = newAllowance(lim, adm.Count, now)
	switch {
	case adm.Exhausted:
		s.cfg.Metrics.FreeRefused(d.GetService(), "exhausted")
		s.spent(q)
		return false
	case !adm.Admitted:
		s.cfg.Metrics.FreeRefused(d.GetService(), "interval")
		secs := (adm.RetryAfter + time.Second - 1) / time.Second
		q.w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
		s.hostRefusal(q, http.StatusTooManyRequests, codeInterval, map[string]any{
			"min_interval_ms": lim.MinInterval.Milliseconds(), "retry_after_ms": adm.RetryAfter.Milliseconds()})
		return false
	}
	s.cfg.Metrics.Free(d.GetService())
	// the family's own refusals come before the caller's (context-
	// composition's precede R-6, caller_invalid): the family
	// refusal is answered, still counted against the address
	if badCaller && v.GetOutcome() != pb.Outcome_REFUSED {
		s.hostRefusal(q, http.StatusBadRequest, codeCaller, nil)
		return false
	}
	return true
}

// spent answers a pre-check whose caller's allowance is spent: 402, as the
// criteria fix (on_exhaustion), and a 402 an x402 client can read. Its
// PAYMENT-REQUIRED is the paid route's own, its resource that route and
// its error naming the spent free pre-check: a client that pays by
// itself is shown what the paid route costs instead of failing on a 402
// without requirements; the pre-check itself takes no payment, so one
// sent to it is never settled. The body names the paid route and when the
// allowance resets (Retry-After too).
func (s *Server) spent(q *request) {
	d := q.sv.Desc
	facts := map[string]any{"per_day": q.allowance.perDay}
	var header map[string]string
	var members map[string]any
	if ops := d.GetOps(); len(ops) > 0 {
		op := ops[0]
		path := strings.TrimSuffix(q.r.URL.Path, "precheck") + op.GetName()
		facts["paid_route"] = "POST " + path
		if p, ok := s.cfg.Payments.(payment.Publisher); ok {
			r := q.r.Clone(q.r.Context())
			r.URL.Path, r.URL.RawPath = path, ""
			header, members = p.Offer(payment.Request{HTTP: r, Service: d.GetService(), Op: op.GetName(),
				Price: payment.Price{USDCUnits: op.GetPriceUsdcUnits(), Label: op.GetPriceLabel(), Basis: op.GetPriceBasis()},
				Input: q.sv.inputs[op.GetName()]}, spentReason)
		}
	}
	if header == nil {
		header = map[string]string{}
	}
	header["Retry-After"] = strconv.FormatInt(q.allowance.secondsToReset(), 10)
	s.hostRefusalMembers(q, http.StatusPaymentRequired, codeSpent, facts, members, header)
}

// spentReason is the spent allowance's 402 error, as an x402 client shows
// it.
const spentReason = "free_allowance_spent: this caller's free pre-checks for the UTC day are spent; a pre-check cannot be bought. " +
	"The paid route (this requirement's resource) measures the same body; or wait for the reset (Retry-After)."
