package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/redelivery"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk/envelope"
	"github.com/assay-audit/assay/sdk/sharedbody"
)

// paidCall is a paid request's payment as the handler moves it along:
// the gate's admission, asked while the family validates when it never
// leaves the host, and the settlement, begun while the family measures
// when that too is the host's own (payment.EarlySettler), so the claim's
// commit overlaps the round trip instead of following it. The handler
// owns the settling goroutine: every path waits for it (end).
type paidCall struct {
	s      *Server
	ctx    context.Context
	req    payment.Request
	paid   *admitted
	unmark func() // ends the request's priority over pre-checks
	// early is what the session runs once the Start is sent (nil: the gate
	// is asked once the body is valid): true sends the Proceed behind it
	early func() bool
	// settling is the settlement begun early; decided once its receipt is
	// delivered, released or withdrawn
	settling *settlement
	decided  bool
	// digest is the submission's, held for this request only: the key
	// to its answer kept for redelivery (payment.Redeliverer); a shared
	// body is digested only when an answer is sealed or opened (shared
	// stays open until the handler returns)
	digest   redelivery.Digest
	shared   *sharedbody.Body
	digested bool
}

// settlement is one Settle call's outcome, filled by its goroutine
// before done closes.
type settlement struct {
	done    chan struct{}
	receipt *payment.Receipt
	demand  *payment.Demand
	err     error
	took    time.Duration
}

func (s *Server) newPaidCall(ctx context.Context, q *request) *paidCall {
	op := q.op
	pc := &paidCall{s: s, ctx: ctx, unmark: func() {},
		req: payment.Request{HTTP: q.r, Service: q.sv.Desc.GetService(), Op: op.GetName(),
			Price: payment.Price{USDCUnits: op.GetPriceUsdcUnits(), Label: op.GetPriceLabel(), Basis: op.GetPriceBasis()},
			Input: q.sv.inputs[op.GetName()]}}
	// with payments off nothing stands between validation and
	// measurement, and a gate that admits without leaving the host admits
	// while the family validates: the family is told to proceed right
	// behind the start, one round trip
	_, off := s.cfg.Payments.(payment.Off)
	la, local := s.cfg.Payments.(payment.LocalAdmitter)
	es, settles := s.cfg.Payments.(payment.EarlySettler)
	switch {
	case off:
		pc.early = func() bool { return true }
	case local && la.AdmitsLocally():
		settleEarly := settles && es.SettlesLocally()
		pc.early = func() bool {
			if pc.paid == nil { // once, though a restarted plugin is sent the start again
				pc.admit()
				if settleEarly && pc.measures() {
					pc.settleEarly()
				}
			}
			return pc.measures()
		}
	}
	return pc
}

// digestBody digests an in-memory submission when the gate keeps
// answers for redelivery (the key an issued answer is sealed and opened
// with), before the handler lets the body go; a shared one is kept to be
// digested when needed (bodyDigest), so a large body refused at
// validation is never read twice. The digest lives in this request's
// memory only, like the body.
func (pc *paidCall) digestBody(body []byte, shared *sharedbody.Body) {
	if _, ok := pc.s.cfg.Payments.(payment.Redeliverer); !ok {
		return
	}
	if shared != nil {
		pc.shared = shared
		return
	}
	pc.digest, pc.digested = redelivery.DigestOf(body), true
}

// bodyDigest is the submission's digest.
func (pc *paidCall) bodyDigest() (redelivery.Digest, error) {
	if pc.digested || pc.shared == nil {
		return pc.digest, nil
	}
	d, err := redelivery.DigestReader(io.NewSectionReader(pc.shared, 0, pc.shared.Len()))
	if err != nil {
		return d, err
	}
	pc.digest, pc.digested = d, true
	return d, nil
}

// admit asks the gate; an admitted request goes before pre-checks until
// it is answered.
func (pc *paidCall) admit() {
	pc.paid = pc.s.admit(pc.ctx, pc.req)
	if pc.admitted() {
		pc.unmark = pc.s.priority.Paid()
	}
}

// measures is true once the gate admitted the request for measuring: a
// payment whose report was issued is answered from the kept answer, and
// the family is not asked to measure it again.
func (pc *paidCall) measures() bool {
	return pc.admitted() && !pc.paid.adm.Issued
}

// admitted is true once the gate admitted the request (false on a nil
// paidCall: the pre-check).
func (pc *paidCall) admitted() bool {
	return pc != nil && pc.paid != nil && pc.paid.err == nil && pc.paid.demand == nil
}

func (pc *paidCall) settleEarly() {
	st := &settlement{done: make(chan struct{})}
	pc.settling = st
	adm := pc.paid.adm
	go func() {
		defer close(st.done)
		began := time.Now()
		ctx, cancel := pc.settleContext()
		defer cancel()
		st.receipt, st.demand, st.err = pc.s.cfg.Payments.Settle(ctx, pc.req, adm)
		st.took = time.Since(began)
	}()
}

// settleBound is the longest a settlement may run once begun: the
// remote facilitator's lease (40 s) with room.
const settleBound = time.Minute

// settleContext is a settlement's context: it keeps the request's values
// but not its cancellation. Once the host decides to settle, a client
// that goes away must not cut the settlement short: the money may have
// moved (on a chain, it has once the transfer confirms), and the report
// is issued and kept for the payer's re-send all the same. Before, the
// claim's settled write ran on the request's context and a client leaving
// at that moment left a transfer on the chain with its claim still
// settling and no line until the payer came back.
func (pc *paidCall) settleContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(pc.ctx), settleBound)
}

// settle is the settlement once the report is ready to issue: the one
// begun while the family measured, or one made now.
func (pc *paidCall) settle() *settlement {
	if st := pc.settling; st != nil {
		<-st.done
		return st
	}
	began := time.Now()
	st := &settlement{}
	ctx, cancel := pc.settleContext()
	defer cancel()
	st.receipt, st.demand, st.err = pc.s.cfg.Payments.Settle(ctx, pc.req, pc.paid.adm)
	st.took = time.Since(began)
	return st
}

// withdraw undoes an early settlement whose report is not issued, once
// it has ended: the payment is as it was (or, already taken before this
// request, stays redeemable). Nothing to do without one, or once decided.
func (pc *paidCall) withdraw() {
	if pc == nil || pc.settling == nil || pc.decided {
		return
	}
	<-pc.settling.done
	pc.decided = true
	if r := pc.settling.receipt; r != nil {
		pc.s.cfg.Payments.(payment.EarlySettler).Withdraw(context.Background(), pc.paid.adm, r)
	}
}

// end is the handler's last word on the payment: a settlement nobody
// took up is withdrawn, and the priority over pre-checks ends.
func (pc *paidCall) end() {
	pc.withdraw()
	pc.unmark()
}

// undelivered answers an admitted request whose report the family did
// not give: with the gate's delivery marker, after any early settlement
// is withdrawn (the marker then says what the payment is now).
func (s *Server) undelivered(q *request, pc *paidCall, err error) {
	pc.withdraw()
	facts, header := s.cfg.Payments.Undelivered(context.Background(), pc.req, pc.paid.adm)
	q.paidAs(payUndelivered)
	s.boundaryFailureWith(q, err, facts, header)
}

// deliver takes a validated paid request to its answer: admission (when
// not yet asked), the family's report, the self-check, settlement, the
// signed answer, its issue (the ledger line), then the answer. release
// gives the session and the working place back once the family has
// answered. A payment whose report was issued is answered again instead.
func (s *Server) deliver(q *request, pc *paidCall, sess Session, release func()) {
	if pc.paid == nil {
		pc.admit()
	}
	switch {
	case pc.paid.err != nil:
		s.limited.Warn("payment gate unavailable", "service", q.sv.Desc.GetService(), "error", pc.paid.err)
		q.paidAs(payUnavailable)
		s.hostRefusal(q, http.StatusServiceUnavailable, codePaymentDown, nil)
		return
	case pc.paid.demand != nil:
		q.paidAs(demandOutcome(pc.paid.demand.Code, false))
		s.sendDemand(q, pc.paid.demand)
		return
	case pc.paid.adm.Issued:
		release()
		s.redeliver(q, pc)
		return
	}
	rep, err := sess.Proceed()
	if err != nil {
		s.undelivered(q, pc, err)
		return
	}
	release()
	answer, err := s.assemble(q, envelope.KindReport, rep.GetBody(), rep.GetCheckEndUnixNano(), pc.paid.adm.Facts)
	if err != nil {
		pc.withdraw()
		s.selfCheckFailure(q, err)
		return
	}
	fields, err := q.sv.fields.Check(rep.GetLedger())
	if err != nil {
		// checked before the answer: a line that cannot be written is
		// never charged
		pc.withdraw()
		s.cfg.Metrics.LedgerLineRefused(q.sv.Desc.GetService())
		s.selfCheckFailure(q, err)
		return
	}
	receipt, ok := s.settled(q, pc)
	if !ok {
		return
	}
	pc.decided = true // issued or released from here on
	answer["payment"] = receipt.Facts
	signed, ok := s.sign(q, answer)
	if !ok {
		s.cfg.Payments.Release(context.Background(), receipt)
		q.paidAs(payUndelivered)
		return
	}
	// the report is issued (its line, the claim's move and the answer
	// kept for redelivery, one transaction) before it is written: a host
	// killed at any moment leaves either nothing charged or a charge with
	// its line, whose report a re-send of the payment has again
	if err := s.issue(q, pc, receipt, fields, signed); errors.Is(err, errIssuedElsewhere) {
		// nothing of this request was written: the re-send the client is
		// told to make is answered with the report the other one issued
		q.paidAs(payInProgress)
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeIssuedMeanwhile, nil,
			map[string]any{"mode": "x402", "examined": true, "charged": false}, map[string]string{"Retry-After": "1"})
		return
	} else if err != nil {
		s.cfg.Payments.Release(context.Background(), receipt)
		facts, header := s.cfg.Payments.Undelivered(context.Background(), pc.req, pc.paid.adm)
		q.paidAs(payUndelivered)
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeLedgerDown, nil, facts, header)
		return
	}
	if s.cfg.AfterIssue != nil {
		s.cfg.AfterIssue()
	}
	for k, v := range receipt.Header {
		q.w.Header().Set(k, v)
	}
	q.paidAs(paySettled)
	q.note.tx = receipt.TransactionID
	s.cfg.Metrics.Paid(q.sv.Desc.GetService())
	s.senderPaid(q)
	if err := s.write(q, http.StatusOK, signed); err != nil {
		// issued: the payer has it again by re-sending the same request
		s.cfg.Logger.Info("paid answer not received; it is kept for a re-send", "service", q.sv.Desc.GetService(), "tx", receipt.TransactionID)
	}
}

// redeliver answers a payment whose report was issued with the answer
// kept for it, when this is the submission it was issued for: nothing is
// measured, settled or written to the ledger.
func (s *Server) redeliver(q *request, pc *paidCall) {
	rd, ok := s.cfg.Payments.(payment.Redeliverer)
	if !ok {
		s.hostRefusal(q, http.StatusInternalServerError, codeInternal, nil)
		return
	}
	digest, err := pc.bodyDigest()
	var ans *redelivery.Answer
	var d *payment.Demand
	if err == nil {
		ans, d, err = rd.Redeliver(pc.ctx, pc.req, pc.paid.adm, digest)
	}
	switch {
	case err != nil:
		s.limited.Warn("payment gate unavailable", "service", q.sv.Desc.GetService(), "error", err)
		q.paidAs(payUnavailable)
		s.hostRefusal(q, http.StatusServiceUnavailable, codePaymentDown, nil)
		return
	case d != nil:
		q.paidAs(demandOutcome(d.Code, false))
		s.sendDemand(q, d)
		return
	}
	for k, v := range ans.Header {
		q.w.Header().Set(k, v)
	}
	q.paidAs(payRedelivered)
	s.cfg.Metrics.Redelivered(q.sv.Desc.GetService())
	if err := s.write(q, http.StatusOK, ans.Body); err != nil {
		s.cfg.Logger.Info("redelivered answer not received; it is kept for a re-send", "service", q.sv.Desc.GetService())
	}
}

// sealFor is the answer to keep for redelivery with its line (nil when
// the gate keeps none).
func (s *Server) sealFor(pc *paidCall, r *payment.Receipt, signed []byte) (*store.Issued, error) {
	rd, ok := s.cfg.Payments.(payment.Redeliverer)
	if !ok || r.Claim == nil {
		return nil, nil
	}
	digest, err := pc.bodyDigest()
	if err != nil {
		return nil, err
	}
	return rd.Seal(pc.paid.adm, r, digest, redelivery.Answer{Header: r.Header, Body: signed})
}

// settled is the payment's settlement, or the answer when there is none:
// ok is false when the request has been answered.
func (s *Server) settled(q *request, pc *paidCall) (*payment.Receipt, bool) {
	st := pc.settle()
	if _, off := s.cfg.Payments.(payment.Off); !off {
		outcome := "settled"
		if st.err != nil {
			outcome = "unknown"
		} else if st.demand != nil {
			outcome = "refused"
		}
		s.cfg.Metrics.Settlement(q.sv.Desc.GetService(), outcome, st.took)
	}
	switch {
	case st.err != nil:
		facts, header := s.cfg.Payments.Undelivered(context.Background(), pc.req, pc.paid.adm)
		s.cfg.Logger.Warn("settlement did not complete", "service", q.sv.Desc.GetService(), "error", st.err)
		q.paidAs(paySettleFailed)
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codePaymentDown, nil, facts, header)
		return nil, false
	case st.demand != nil:
		q.paidAs(demandOutcome(st.demand.Code, true))
		s.sendDemand(q, st.demand)
		return nil, false
	}
	return st.receipt, true
}
