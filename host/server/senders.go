package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/pluginhost"
)

// The host's refusals of a sender's costly unpaid work (senderlimit):
// 429 with Retry-After, before the body is read.
const (
	// codeUnpaidRate: the client's unpaid requests on paid routes (each is
	// adapted before its 402) are past its allowance.
	codeUnpaidRate = "unpaid_rate"
	// codeSenderHeld: the client's records crashed or hung a plugin again
	// and again; its requests wait out a hold.
	codeSenderHeld = "sender_held"
)

// admitSender applies the per-client limits to a request on a service
// route before its body is read: a held client, or an unpaid request on a
// paid route past the client's allowance, is answered 429 with
// Retry-After, nothing read or charged. ok is false when it answered.
func (s *Server) admitSender(q *request) bool {
	if s.cfg.Senders == nil {
		return true
	}
	addr := clientAddr(q.r, s.cfg.TrustedProxies)
	if held, after := s.cfg.Senders.Held(addr); held {
		s.senderRefusal(q, codeSenderHeld, after)
		return false
	}
	if q.op != nil && s.unpaid(q.r) {
		if ok, after := s.cfg.Senders.Unpaid(addr); !ok {
			s.senderRefusal(q, codeUnpaidRate, after)
			return false
		}
	}
	return true
}

// unpaid is a request on a paid route that presents no payment to a gate
// that takes them.
func (s *Server) unpaid(r *http.Request) bool {
	p, ok := s.cfg.Payments.(payment.Presenter)
	return ok && !p.Presented(r.Header)
}

func (s *Server) senderRefusal(q *request, code string, after time.Duration) {
	secs := max(int64((after+time.Second-1)/time.Second), 1)
	q.w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	facts := map[string]any{"retry_after_ms": after.Milliseconds()}
	if code == codeUnpaidRate {
		facts["per_minute"] = s.cfg.Senders.Limits().UnpaidPerMinute
	}
	s.hostRefusal(q, http.StatusTooManyRequests, code, facts)
}

// senderFault counts a crash or hang of a plugin against the client whose
// record caused it: the restart is everyone's, the hold that follows
// repeats is that client's alone. A crash while the process held other
// records too is counted against none of them: any one may have caused
// it, and a client whose good record merely shared the end must never be
// held (the record that did it crashes the process again, alone, soon).
func (s *Server) senderFault(q *request, f pluginhost.AdapterFault) {
	cause := f.Cause
	if s.cfg.Senders == nil || (cause != pluginhost.FaultCrashed && cause != pluginhost.FaultDeadline) ||
		cause == pluginhost.FaultCrashed && f.Mates > 0 {
		return
	}
	addr := clientAddr(q.r, s.cfg.TrustedProxies)
	if s.cfg.Senders.Fault(addr) {
		s.limited.Warn("a client's records keep crashing or hanging a plugin: its requests are held", "service", q.sv.Desc.GetService(),
			"cause", cause)
	}
}

// senderPaymentRefused counts a presented payment the gate refused as
// unpaid work: a flood of bogus payments costs its sender the allowance
// an unpaid flood would.
func (s *Server) senderPaymentRefused(q *request) {
	if s.cfg.Senders != nil && q.op != nil && !s.unpaid(q.r) {
		s.cfg.Senders.Refused(clientAddr(q.r, s.cfg.TrustedProxies))
	}
}

// senderPaid gives a client that paid its unpaid request back: a payer's
// own 402s never run out its allowance.
func (s *Server) senderPaid(q *request) {
	if s.cfg.Senders != nil {
		s.cfg.Senders.Refund(clientAddr(q.r, s.cfg.TrustedProxies))
	}
}
