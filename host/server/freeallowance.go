package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/siwx"
	"github.com/assay-audit/assay/sdk"
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
	// counted names whose allowance this is: countedWallet (a proven
	// one) or countedAddress
	counted string
	// signIn is a fresh sign-in challenge for the caller's next pre-check
	// (nil when none could be made)
	signIn *siwx.Extension
}

// What free_tier.counted says.
const (
	countedWallet  = "wallet"
	countedAddress = "address"
)

// ratePolicy names the free allowance in the RateLimit fields.
const ratePolicy = `"free-precheck"`

func newAllowance(lim freetier.Limits, used int64, now time.Time) *allowance {
	day := now.UTC().Truncate(24 * time.Hour)
	return &allowance{perDay: lim.PerDay, remaining: max(lim.PerDay-used, 0), resets: day.Add(24 * time.Hour), interval: lim.MinInterval, at: now}
}

// state writes the allowance into an answer: the free_tier member (whose
// counted says whose allowance it is), the sign_in member (the challenge
// for the next pre-check) and the RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers: quota q over window w seconds; r
// remaining, reset in t seconds). The window is the UTC day, so t counts
// to midnight, not a rolling 24 h.
func (a *allowance) state(h http.Header, answer map[string]any) {
	secs := a.secondsToReset()
	h.Set("RateLimit-Policy", ratePolicy+";q="+strconv.FormatInt(a.perDay, 10)+";w=86400")
	h.Set("RateLimit", ratePolicy+";r="+strconv.FormatInt(a.remaining, 10)+";t="+strconv.FormatInt(secs, 10))
	answer["free_tier"] = map[string]any{"per_day": a.perDay, "remaining": a.remaining,
		"resets_at": a.resets.Format(time.RFC3339), "min_interval_ms": a.interval.Milliseconds(), "counted": a.counted}
	if a.signIn != nil {
		answer[siwx.Member] = a.signIn
	}
}

// secondsToReset counts whole seconds to the reset, rounded up (at least
// 1).
func (a *allowance) secondsToReset() int64 {
	return max(int64((a.resets.Sub(a.at)+time.Second-1)/time.Second), 1)
}

// admitFree applies the free tier to a pre-check (refused ones count too)
// and answers the caller itself when it refuses. A proven wallet
// (SIGN-IN-WITH-X, checked by signIn) is counted; a caller the body names
// without a proof is only the caller's word, so the pre-check is counted
// against the client address, as one naming no caller is.
func (s *Server) admitFree(q *request, v *pb.Validated) bool {
	if s.cfg.FreeTier == nil {
		return true
	}
	d := q.sv.Desc
	now := s.cfg.Now()
	c, ok := s.freeCaller(q, v, now)
	if !ok {
		return false
	}
	badCaller := v.GetHasCaller() && !freetier.ValidWallet(v.GetCaller())
	lim := freetier.Limits{PerDay: d.GetFreeTier().GetPerDay(), MinInterval: time.Duration(d.GetFreeTier().GetMinIntervalMs()) * time.Millisecond}
	adm, err := s.cfg.FreeTier.Admit(q.r.Context(), d.GetService(), ledger.UsageScope(d.GetService(), d.GetCriteriaId(), d.GetCriteriaRevision()), lim, c, now)
	if err != nil {
		s.freeDown(q, err, now)
		return false
	}
	q.allowance = newAllowance(lim, adm.Count, now)
	q.allowance.counted, q.allowance.signIn = countedAddress, s.challenge(q, now)
	if c.Wallet != "" {
		q.allowance.counted = countedWallet
	}
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
	// refusal is answered, still counted
	if badCaller && v.GetOutcome() != pb.Outcome_REFUSED {
		s.hostRefusal(q, http.StatusBadRequest, codeCaller, nil)
		return false
	}
	return true
}

// freeCaller is whom a pre-check is counted against: the client address,
// and the wallet a SIGN-IN-WITH-X proof proved (its nonce spent here, once
// the family has validated the body, so a replay is refused before any
// count). A proof for another wallet than the body's caller, or a replay,
// is refused (401 siwx_invalid), nothing counted. ok is false when the
// request has been answered.
func (s *Server) freeCaller(q *request, v *pb.Validated, now time.Time) (freetier.Caller, bool) {
	c := freetier.Caller{Addr: clientAddr(q.r, s.cfg.TrustedProxies)}
	p, _ := q.r.Context().Value(provenKey{}).(*siwx.Proof)
	if p == nil {
		return c, true
	}
	if v.GetHasCaller() && freetier.ValidWallet(v.GetCaller()) && v.GetCaller() != p.Address {
		s.signInRefused(q, siwx.CallerMismatch, now)
		return c, false
	}
	switch err := s.cfg.FreeTier.SignIn().Spend(q.r.Context(), p, now); {
	case errors.Is(err, siwx.Replayed):
		s.signInRefused(q, siwx.Replayed, now)
		return c, false
	case err != nil:
		s.freeDown(q, err, now)
		return c, false
	}
	c.Wallet = p.Address
	return c, true
}

// freeDown answers a pre-check the free tier's store could not count.
func (s *Server) freeDown(q *request, err error, now time.Time) {
	s.limited.Error("free tier unavailable", "service", q.sv.Desc.GetService(), "error", err)
	var members map[string]any
	if ch := s.challenge(q, now); ch != nil {
		members = map[string]any{siwx.Member: ch}
	}
	s.hostRefusalMembers(q, http.StatusServiceUnavailable, codeFreeDown, nil, members, nil)
}

// spent answers a pre-check whose caller's allowance is spent: 402, as the
// criteria fix (on_exhaustion), and a 402 an x402 client can read. Its
// PAYMENT-REQUIRED is the paid route's own, its resource that route and
// its error naming the spent free pre-check: a client that pays by
// itself is shown what the paid route costs instead of failing on a 402
// without requirements; the pre-check itself takes no payment, so one
// sent to it is never settled. An address's spent allowance declares
// sign-in-with-x in it too (extensions), so a client with a wallet proves
// it and is counted against the wallet's. The body names the paid route
// and when the allowance resets (Retry-After too).
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
	if q.allowance.counted != countedWallet && q.allowance.signIn != nil {
		// the official client signs in from a 402's extensions: proving a
		// wallet with allowance left turns this 402 into a pre-check
		header, members = declareSignIn(header, members, *q.allowance.signIn)
	}
	header["Retry-After"] = strconv.FormatInt(q.allowance.secondsToReset(), 10)
	s.hostRefusalMembers(q, http.StatusPaymentRequired, codeSpent, facts, members, header)
}

// spentReason is the spent allowance's 402 error, as an x402 client shows
// it.
const spentReason = "free_allowance_spent: this caller's free pre-checks for the UTC day are spent; a pre-check cannot be bought. " +
	"The paid route (this requirement's resource) measures the same body; or wait for the reset (Retry-After)."

// Sign-in answers (401, nothing read or counted past the header, sign_in
// carrying a fresh challenge):
const (
	// codeSignIn refuses a SIGN-IN-WITH-X that proves nothing here:
	// error.reason names why (a siwx.Refusal)
	codeSignIn = "siwx_invalid"
	// codeChallenge answers the challenge request (SIGN-IN-WITH-X:
	// challenge): a challenge asked for without spending a pre-check
	codeChallenge = "siwx_challenge"
)

// signInMessage is a sign-in answer's message (server.go's hostMessages
// holds the other codes' words; these ride in the answer's facts).
func signInMessage(code string) string {
	if code == codeChallenge {
		return "a sign-in challenge, as asked (SIGN-IN-WITH-X: challenge): nothing was read or counted; " +
			"sign sign_in with the wallet and send the pre-check with the proof in SIGN-IN-WITH-X"
	}
	return "the SIGN-IN-WITH-X proof was not accepted (error.reason says why); nothing was counted; " +
		"sign the challenge in sign_in with the wallet and send the pre-check again with the new proof"
}

// provenKey holds, in a pre-check's context, the proof signIn checked.
type provenKey struct{}

// signIn checks a pre-check's SIGN-IN-WITH-X before its body is read
// (signature, host, URL, time and the nonce's HMAC: no store), so a proof
// that cannot hold, or the challenge request (siwx.Ask), costs the host
// no body and no plugin and counts nothing: it is answered 401 with a
// fresh challenge. A proof that holds rides in q.r's context to the free
// tier, which spends its nonce. False when the request has been answered.
// The header is the caller's: it is never logged nor echoed.
func (s *Server) signIn(q *request) bool {
	header := q.r.Header.Get(siwx.Header)
	if header == "" || s.cfg.FreeTier == nil {
		return true
	}
	now := s.cfg.Now()
	if header == siwx.Ask {
		s.signInAnswer(q, codeChallenge, nil, now)
		return false
	}
	var p *siwx.Proof
	err := error(siwx.WrongDomain)
	if t, ok := s.signInTarget(q.r); ok {
		p, err = s.cfg.FreeTier.SignIn().Check(header, t, now)
	}
	if err != nil {
		r, _ := err.(siwx.Refusal)
		s.signInRefused(q, r, now)
		return false
	}
	q.r = q.r.WithContext(context.WithValue(q.r.Context(), provenKey{}, p))
	return true
}

// signInRefused answers codeSignIn for reason r.
func (s *Server) signInRefused(q *request, r siwx.Refusal, now time.Time) {
	if r == "" {
		r = siwx.NotAProof
	}
	s.signInAnswer(q, codeSignIn, map[string]any{"reason": string(r)}, now)
}

// signInAnswer is a 401 of code with a challenge fresh at now.
func (s *Server) signInAnswer(q *request, code string, facts map[string]any, now time.Time) {
	var members map[string]any
	if ch := s.challenge(q, now); ch != nil {
		members = map[string]any{siwx.Member: ch}
	}
	if facts == nil {
		facts = map[string]any{}
	}
	facts["message"] = signInMessage(code)
	// RFC 9110: a 401 names the scheme that answers it
	header := map[string]string{"WWW-Authenticate": `Sign-In-With-X realm="free pre-check"`}
	s.hostRefusalMembers(q, http.StatusUnauthorized, code, facts, members, header)
}

// challenge is a sign-in challenge for q's pre-check URL issued at now
// (the instant the request's decision was made: one reading of the
// host's clock), nil when the request's host is no name a challenge can
// bind, or none could be made.
func (s *Server) challenge(q *request, now time.Time) *siwx.Extension {
	t, ok := s.signInTarget(q.r)
	if !ok {
		return nil
	}
	e, err := s.cfg.FreeTier.SignIn().Challenge(t, now)
	if err != nil {
		return nil
	}
	return &e
}

// signInTarget is what a challenge of r binds (siwx.Service.Target):
// scheme https when the connection is TLS or a trusted proxy says so, and
// the host's chain (its payment terms' network).
func (s *Server) signInTarget(r *http.Request) (siwx.Target, bool) {
	scheme := "http"
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	if r.TLS != nil || isTrusted(peer, s.cfg.TrustedProxies) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	chain := siwx.DefaultChain
	if p, ok := s.cfg.Payments.(payment.Publisher); ok && p.Terms().Network != "" {
		chain = p.Terms().Network
	}
	return s.cfg.FreeTier.SignIn().Target(scheme, r.Host, r.URL.Path, chain)
}

// declareSignIn is a 402's PAYMENT-REQUIRED header and x402 member (the
// payment gate's Offer) with ext declared in their extensions, as x402's
// sign-in-with-x specifies; either left as it was when it does not
// decode as a PaymentRequired.
func declareSignIn(header map[string]string, members map[string]any, ext siwx.Extension) (map[string]string, map[string]any) {
	with := func(raw []byte) ([]byte, bool) {
		tree, err := sdk.DecodeJSON(raw)
		pr, _ := tree.(map[string]any)
		if err != nil || pr == nil {
			return nil, false
		}
		exts, _ := pr["extensions"].(map[string]any)
		if exts == nil {
			exts = map[string]any{}
		}
		exts[siwx.Key] = ext
		pr["extensions"] = exts
		out, err := json.Marshal(pr)
		return out, err == nil
	}
	outHeader := make(map[string]string, len(header))
	for k, v := range header {
		outHeader[k] = v
		if !strings.EqualFold(k, "PAYMENT-REQUIRED") {
			continue
		}
		if raw, err := base64.StdEncoding.DecodeString(v); err == nil {
			if out, ok := with(raw); ok {
				outHeader[k] = base64.StdEncoding.EncodeToString(out)
			}
		}
	}
	outMembers := make(map[string]any, len(members))
	for k, v := range members {
		outMembers[k] = v
	}
	if x, ok := members["x402"]; ok {
		if raw, err := json.Marshal(x); err == nil {
			if out, ok := with(raw); ok {
				outMembers["x402"] = json.RawMessage(out)
			}
		}
	}
	return outHeader, outMembers
}
