package server

// One metadata-only line per request, for log shippers: what the host
// decided about a request, never what the caller sent.

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Payment outcomes a paid route's request line names.
const (
	payOff          = "off"      // payments are off: nothing is ever charged
	payNone         = "not-paid" // answered before any payment was taken
	payRequired     = "required" // no payment sent: the 402
	payInvalid      = "invalid"
	payReplayed     = "replayed"
	payInProgress   = "in-progress" // another request is delivering that payment's report
	payUnavailable  = "unavailable" // the gate could not decide
	paySettleFailed = "settle-failed"
	// payUndelivered: the payment passed (or settled) but the report did
	// not go out; a re-send with its marker or payment redeems it
	payUndelivered = "undelivered"
	paySettled     = "settled"
	// payRedelivered: a payment whose report was issued, sent again with
	// the same submission: the kept answer, nothing charged
	payRedelivered = "redelivered"
	payConflict    = "conflict" // issued for another submission: 409
)

// demandOutcome groups a gate's refusal codes for the request line (the
// code itself is on the line too); settling says the refusal came from
// Settle, where anything unnamed is a failed settlement.
func demandOutcome(code string, settling bool) string {
	switch code {
	case "payment_required":
		return payRequired
	case "payment_replayed", "marker_spent":
		return payReplayed
	case "payment_in_progress":
		return payInProgress
	case "payment_not_settled":
		return paySettleFailed
	case "payment_conflict":
		return payConflict
	case "payment_unavailable", "payment_identity_mismatch": // a held gate's (x402.Hold)
		return payUnavailable
	}
	if settling {
		return paySettleFailed
	}
	return payInvalid
}

// requestNote is what a request's line says beyond its status, set as the
// handler decides and read once the answer is out.
type requestNote struct {
	code    string // the refusal's error code
	reason  string // a refused payment's reason code (the facilitator's or the gate's)
	payment string // a paid route's outcome (empty elsewhere)
	tx      string // the settled payment's transaction id
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	note   requestNote
}

// logRequest writes one request's line once its answer is out. Every
// value is the host's own: the route's pattern (the path and its query
// are the caller's), the method only when it is a standard one, codes of
// the host's, the gate's or the criteria's shape; no header, no body, no
// payer.
func (s *Server) logRequest(level hclog.Level, pattern, service, method string, rec *statusRecorder, took time.Duration) {
	log := s.cfg.Logger
	if level == hclog.Debug && !log.IsDebug() || level == hclog.Info && !log.IsInfo() {
		return // a disabled level builds nothing
	}
	args := make([]any, 0, 16)
	args = append(args, "route", pattern)
	if service != "" {
		args = append(args, "service", service)
	}
	args = append(args, "method", methodName(method), "status", rec.status)
	if c := rec.note.code; c != "" {
		if !codeShaped(c) {
			c = "other"
		}
		args = append(args, "code", c)
	}
	if r := rec.note.reason; r != "" {
		// a code of the facilitator's vocabulary, never the payment: an
		// operator acts on it (invalid_exact_svm_payload_…)
		if !reasonShaped(r) {
			r = "other"
		}
		args = append(args, "reason", r)
	}
	args = append(args, "duration_ms", float64(took.Microseconds())/1000)
	if rec.note.payment != "" {
		args = append(args, "payment", rec.note.payment)
	}
	if rec.note.tx != "" {
		args = append(args, "tx", rec.note.tx)
	}
	log.Log(level, "request", args...)
}

// methodName is the request's method when it is a standard one: the
// catch-all route takes any token a client sends as its method.
func methodName(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// codeShaped says c looks like a criteria code (as the metrics' labels
// require): a family's code comes from a plugin, which could put anything
// there.
// reasonShaped is a reason code: 1 to 96 of a-z, 0-9 and _, as x402's
// facilitators write theirs.
func reasonShaped(r string) bool {
	if r == "" || len(r) > 96 {
		return false
	}
	for i := 0; i < len(r); i++ {
		if b := r[i]; !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}

func codeShaped(c string) bool {
	if c == "" || len(c) > 64 {
		return false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		case i > 0 && (b == '_' || b == '.' || b == ':' || b == '-'):
		default:
			return false
		}
	}
	return true
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
