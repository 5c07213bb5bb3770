package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/assay-audit/assay/host/admission"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/envelope"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/sharedbody"
)

// launchProofKey marks a request as the host's own launch proof.
type launchProofKey struct{}

// LaunchProof marks ctx's requests as the host's own launch proof: they
// reach a service held back while its proof runs. Only code in the host's
// process can set a context value: no caller can.
func LaunchProof(ctx context.Context) context.Context {
	return context.WithValue(ctx, launchProofKey{}, true)
}

func isLaunchProof(ctx context.Context) bool { v, _ := ctx.Value(launchProofKey{}).(bool); return v }

// handle is one request's life: its body, a working place, the family's
// validation, then a pre-check's answer or a paid op's delivery.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, sv *service, op *pb.Op) {
	q := s.newRequest(w, r, sv, op)
	switch st := s.cfg.States.State(sv.key()); {
	case st.Starting && isLaunchProof(r.Context()):
		// the host's own proof of the service: answered as it will be
	case st.Starting:
		// its launch proof runs on this host: served within seconds, so the
		// connection stays for the retry
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeStarting,
			map[string]any{"reason": st.Reason, "since": sdk.Instant(st.Since)}, nil, map[string]string{"Retry-After": "2"})
		return
	case st.Stopped:
		// before the body, the plugin and the payment gate: nothing of the
		// request is read, nothing charged
		w.Header().Set("Connection", "close")
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeStopped,
			map[string]any{"reason": st.Reason, "since": sdk.Instant(st.Since)}, nil, map[string]string{"Retry-After": "60"})
		return
	}
	if !s.admitSender(q) {
		return // a held client, or an unpaid request past its allowance: before the body
	}
	if op == nil && !s.signIn(q) {
		return // a SIGN-IN-WITH-X that proves nothing: refused before the body
	}
	body, shared, ok := s.receive(q)
	if !ok {
		return
	}
	if shared != nil {
		defer shared.Close() // after the session's Close, deferred below
	}
	// a place is taken once the body is here, before the plugin or the
	// payment gate sees the request: a busy refusal charges nothing
	leave, ok := s.place(q, shared == nil && len(body) < pluginhost.SharedBodyMin)
	if !ok {
		return
	}
	defer leave()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.CallTimeout)
	defer cancel()
	start := &pb.Start{Route: pb.Start_PRECHECK, Body: body, NowUnixNano: q.start.UnixNano()}
	var pc *paidCall
	var early func() bool
	if op != nil {
		start.Route, start.Op = pb.Start_OP, op.GetName()
		pc = s.newPaidCall(ctx, q)
		defer pc.end()
		early = pc.early
		pc.digestBody(body, shared)
	}
	sess, v, err := s.validate(ctx, sv, start, shared, early)
	body, start.Body = nil, nil
	if err != nil {
		if pc.admitted() {
			// admitted while the family validated and told to proceed: it
			// may have died measuring before its validation was read, so
			// the answer is an admitted request's (its delivery marker)
			s.undelivered(q, pc, err)
			return
		}
		s.boundaryFailure(q, err)
		return
	}
	closeSession := sync.OnceFunc(sess.Close)
	defer closeSession()
	if op == nil {
		// what remains of a pre-check (the free tier's write, the
		// signature) waits for paid requests in hand, in its place: the
		// place still bounds the bodies held
		if err := s.priority.Yield(ctx); err != nil {
			clientGone(w)
			return
		}
		if !s.admitFree(q, v) {
			return
		}
	}
	if s.notAccepted(q, pc, v) {
		return
	}
	if op == nil {
		s.familyAnswer(q, http.StatusOK, envelope.KindPrecheck, v.GetBody(), v.GetCheckEndUnixNano(), nil)
		return
	}
	s.deliver(q, pc, sess, func() { closeSession(); leave() })
}

// notAccepted answers a validation that is no acceptance: the family's
// refusal or could-not-measure (any early settlement withdrawn first, so
// the answer's payment member is true when it is sent), or an outcome no
// family may send. False leaves an accepted request to go on.
func (s *Server) notAccepted(q *request, pc *paidCall, v *pb.Validated) bool {
	service := q.sv.Desc.GetService()
	switch v.GetOutcome() {
	case pb.Outcome_ACCEPTED:
		return false
	case pb.Outcome_REFUSED:
		pc.withdraw()
		s.cfg.Metrics.Refusal(service, v.GetCode())
		q.note.code = v.GetCode()
		s.familyAnswer(q, http.StatusBadRequest, envelope.KindRefusal, v.GetBody(), v.GetCheckEndUnixNano(), nil)
	case pb.Outcome_COULD_NOT_MEASURE:
		pc.withdraw()
		s.cfg.Metrics.CouldNotMeasure(service, v.GetCode())
		q.note.code = v.GetCode()
		s.familyAnswer(q, http.StatusUnprocessableEntity, envelope.KindCouldNotMeasure, v.GetBody(), v.GetCheckEndUnixNano(), nil)
	default:
		s.boundaryFailure(q, pluginhost.ErrFailed)
	}
	return true
}

// newRequest is a request's state, its log line's note included.
func (s *Server) newRequest(w http.ResponseWriter, r *http.Request, sv *service, op *pb.Op) *request {
	q := &request{w: w, r: r, sv: sv, op: op, start: s.cfg.Now(), began: time.Now()}
	if rec, ok := w.(*statusRecorder); ok {
		q.note = &rec.note
	} else {
		q.note = &requestNote{}
	}
	if op != nil {
		q.note.payment = payNone
		if _, off := s.cfg.Payments.(payment.Off); off {
			q.note.payment = payOff
		}
	}
	return q
}

// receive reads the body within the service's cap: a large one (or one
// of unknown length) straight into a sealed shared file when the family
// takes those, a small one into memory. ok is false when the request has
// been answered.
func (s *Server) receive(q *request) (body []byte, shared *sharedbody.Body, ok bool) {
	limit := q.sv.Desc.GetBodyBytes()
	if q.r.ContentLength > limit {
		s.hostRefusal(q, http.StatusRequestEntityTooLarge, codeBodyCap, map[string]any{"cap": limit})
		return nil, nil, false
	}
	var err error
	if sb, is := q.sv.Backend.(sharedBackend); is && sb.TakesSharedBodies() && (q.r.ContentLength < 0 || q.r.ContentLength >= pluginhost.SharedBodyMin) {
		shared, err = sharedbody.Read(q.r.Body, limit)
	}
	switch {
	case shared == nil && (err == nil || errors.Is(err, sharedbody.ErrUnsupported)):
		body, err = readBody(q.r, limit)
	case err != nil && !errors.Is(err, sharedbody.ErrSource):
		// the host's memory refused the body: nothing was read as a request
		s.cfg.Logger.Error("request body could not be held", "service", q.sv.Desc.GetService())
		s.hostRefusal(q, http.StatusInternalServerError, codeInternal, nil)
		return nil, nil, false
	}
	if err != nil {
		if shared != nil {
			shared.Close()
		}
		s.bodyReadFailure(q, err)
		return nil, nil, false
	}
	if int64(len(body)) > limit || shared != nil && shared.Len() > limit {
		if shared != nil {
			shared.Close()
		}
		s.hostRefusal(q, http.StatusRequestEntityTooLarge, codeBodyCap, map[string]any{"cap": limit})
		return nil, nil, false
	}
	return body, shared, true
}

// place is enter for any request: a pre-check first yields to paid
// requests in hand and, in its place, takes its turn
// (admission.Priority), held to its answer, since its free-tier write
// shares the store's commits with paid claims. leave gives both back.
func (s *Server) place(q *request, small bool) (leave func(), ok bool) {
	if q.op != nil {
		return s.enter(q, small)
	}
	if err := s.priority.Yield(q.r.Context()); err != nil {
		clientGone(q.w)
		return nil, false
	}
	leavePlace, ok := s.enter(q, small)
	if !ok {
		return nil, false
	}
	turn, err := s.priority.Turn(q.r.Context())
	if err != nil {
		leavePlace()
		clientGone(q.w)
		return nil, false
	}
	return func() { turn(); leavePlace() }, true
}

// enter takes a working place for the request (small bodies have places
// of their own). The place bounds the plugins' work and the bodies held
// for it: leave gives it back once the family has answered, before
// settlement, signing and the ledger line, which are the host's own, and
// may be called more than once. ok is false when the request has been
// answered.
func (s *Server) enter(q *request, small bool) (leave func(), ok bool) {
	gate := q.sv.gate(q.op, small)
	leave, err := gate.Enter(q.r.Context())
	if err != nil {
		if errors.Is(err, admission.ErrBusy) {
			s.cfg.Logger.Debug("service at capacity", "service", q.sv.Desc.GetService(), "op", q.opName(), "working", gate.Working(), "waiting", gate.Waiting())
			// a place can free no sooner than a wait could have ended
			after := strconv.Itoa(max(1, int((gate.Wait()+time.Second-1)/time.Second)))
			s.hostRefusalWith(q, http.StatusServiceUnavailable, codeBusy, nil, nil, map[string]string{"Retry-After": after})
		} else {
			clientGone(q.w)
		}
		return nil, false
	}
	return sync.OnceFunc(leave), true
}

// validate opens a session and starts the request; early, when set, runs
// once the start is sent and says whether the Proceed goes right behind
// it (pluginhost.Session.ProceedIf). A plugin found dead at this point
// (it crashed an instant ago and the supervisor is restarting it) is
// tried once more: nothing has happened to the request yet, and the retry
// waits for the restarted plugin within the request's deadline.
func (s *Server) validate(ctx context.Context, sv *service, start *pb.Start, shared *sharedbody.Body, early func() bool) (Session, *pb.Validated, error) {
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		sess, err := sv.Backend.Open(ctx)
		if err != nil {
			return nil, nil, err
		}
		if e, ok := sess.(earlyProceeder); ok && early != nil {
			e.ProceedIf(early)
		}
		var v *pb.Validated
		if ss, ok := sess.(sharedStarter); ok && shared != nil {
			v, err = ss.StartShared(start, shared)
		} else {
			v, err = sess.Start(start)
		}
		if err == nil {
			return sess, v, nil
		}
		sess.Close()
		last = err
		if !errors.Is(err, pluginhost.ErrUnavailable) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, last
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil, nil, last
}
