// Package payment is the contract between the server and whatever takes
// payment for a paid route. The family never sees it; the server asks it
// whether a validated request may be measured, and to settle once the
// report is ready to issue.
package payment

import (
	"context"
	"net/http"

	"github.com/assay-audit/assay/host/redelivery"
	"github.com/assay-audit/assay/host/store"
)

// Price is what one op costs, from the family's criteria.
type Price struct {
	USDCUnits int64
	Label     string
	Basis     string
}

// Request is a validated paid request as the gate sees it.
type Request struct {
	HTTP    *http.Request
	Service string
	Op      string
	Price   Price
	// Input describes the route's request body for discovery (x402
	// clients and discovery services list the route from the 402).
	Input Input
}

// Input is a route's request body: its JSON Schema and an example (from
// the family's corpus, never a submission). Either may be nil.
type Input struct {
	Schema  []byte
	Example []byte
}

// Admission is a gate's leave to measure one request.
type Admission struct {
	// Facts are the payment members an answer carries before settlement.
	Facts map[string]any
	// State is the gate's own (the server never reads it).
	State any
	// Issued is set when this payment's report was already issued (the
	// same payment, or the payer's payment identifier, sent again): the
	// server measures nothing and asks the gate's Redeliverer for the
	// answer instead.
	Issued bool
}

// Demand is the gate answering the client itself: a signed refusal with
// this status, code and facts, extra top-level members and headers.
type Demand struct {
	Status  int
	Code    string
	Message string
	Facts   map[string]any
	Members map[string]any
	Header  map[string]string
}

// Receipt is a settled payment, as the ledger and the answer record it.
type Receipt struct {
	Payer         string
	TransactionID string
	USDCUnits     int64
	// FeeLamports is nil when the fee is not known.
	FeeLamports *int64
	House       bool
	// Facts are the answer's payment members; Header the response headers.
	Facts  map[string]any
	Header map[string]string
	// Claim is the store's hold on this payment until its report is
	// issued (nil when nothing was paid): the server commits the ledger
	// line, the claim's move to issued and the sealed answer in one
	// transaction, then writes the answer.
	Claim *Claim
}

// Claim names a payment's claim and the lease holder that may move it.
type Claim struct {
	PaymentID string
	Owner     string
	// Pending, when set, is a claim not yet written: a settlement that
	// never left the host (the embedded facilitator without a chain) is
	// recorded with its report's issue, in the same transaction.
	Pending *store.Claim
}

// Gate takes payment for paid routes.
type Gate interface {
	// Admit decides whether a validated request may be measured. A Demand
	// means the gate answers instead (402, a refused marker, ...); an
	// error means the gate could not decide (nothing is charged).
	Admit(ctx context.Context, req Request) (*Admission, *Demand, error)
	// Settle is called when the report is ready to issue; a gate that is
	// an EarlySettler is settled while the family measures instead, and
	// withdrawn when no report follows.
	Settle(ctx context.Context, req Request, a *Admission) (*Receipt, *Demand, error)
	// Undelivered is called when a report could not be delivered after
	// Admit: its facts and headers go into the 503 (a delivery marker).
	Undelivered(ctx context.Context, req Request, a *Admission) (facts map[string]any, header map[string]string)
	// Release is called when a settled report could not be issued (its
	// line not committed): the claim stays settled and its lease ends, so
	// a re-send of the same payment issues it.
	Release(ctx context.Context, r *Receipt)
	// UnchargedFacts are the payment members of an answer refused before
	// the payment was looked at.
	UnchargedFacts() map[string]any
}

// Terms are what a gate asks of every paid request apart from its price:
// the OpenAPI document publishes them beside each paid route's price, so a
// client plans its spending before any 402 (which stays authoritative).
type Terms struct {
	// Protocol is the payment protocol ("x402"), Scheme its scheme.
	Protocol, Scheme string
	// Network, Asset and PayTo are as the protocol writes them (for x402
	// on Solana: a CAIP-2 network, the USDC mint, the seller's wallet).
	Network, Asset, PayTo string
	MaxTimeoutSeconds     int64
	// Note is what the gate says of itself to every payer ("" for
	// nothing), e.g. that this host moves no money.
	Note string
	// PayerNeedsNode is true when the host's payment requirements carry
	// no recent blockhash (a remote facilitator with no node of the
	// host's): a payer's client must read one from a Solana node of its
	// own before it can sign.
	PayerNeedsNode bool
}

// Presenter is a Gate that tells from a request's headers alone whether
// it presents a payment (or a redemption of one) to examine: the server
// counts a paid route's requests that present none against the client's
// unpaid allowance before it reads their bodies.
type Presenter interface {
	Presented(h http.Header) bool
}

// Publisher is a Gate whose terms can be published.
type Publisher interface {
	Terms() Terms
	// Offer is what a payer would pay for req (a paid route), for an
	// answer elsewhere that points at it: the response headers and
	// top-level members of the protocol's payment requirement, its error
	// saying reason. Nothing is admitted or held.
	Offer(req Request, reason string) (header map[string]string, members map[string]any)
}

// LocalAdmitter is a Gate whose Admit may answer without leaving the
// host (the embedded facilitator without a chain): the server then runs
// it while the family validates, which it may do for any request, since
// Admit charges nothing and holds nothing. A gate whose Admit calls out
// (a remote facilitator, a chain's simulation) is asked only once the
// request is valid.
type LocalAdmitter interface {
	AdmitsLocally() bool
}

// EarlySettler is a Gate whose settlement, too, never leaves the host
// (the embedded facilitator without a chain): the server then settles
// while the family measures, and withdraws the settlement when no report
// is issued after all. A new payment's claim is then written with the
// report's issue (Claim.Pending), one commit for the paid request.
type EarlySettler interface {
	SettlesLocally() bool
	// Withdraw undoes a settlement whose report was not issued (refused,
	// could not be measured, failed, withheld by the self-check): the
	// payment is as it was before the request, or, where it was already
	// taken, stays redeemable.
	Withdraw(ctx context.Context, a *Admission, r *Receipt)
}

// Redeliverer is a Gate that keeps each issued answer, sealed, so that a
// re-send of the same paid request is answered again with no second
// charge and no second ledger line (docs/payers.md, "Redelivery").
type Redeliverer interface {
	// Seal is the answer to keep with a receipt's ledger line, sealed for
	// the submission digest d (nil when this receipt keeps none).
	Seal(a *Admission, r *Receipt, d redelivery.Digest, answer redelivery.Answer) (*store.Issued, error)
	// Redeliver is the kept answer of an Issued admission, for the
	// submission digest d; a Demand when it is not to be had (another
	// submission's, or its window ended).
	Redeliver(ctx context.Context, req Request, a *Admission, d redelivery.Digest) (*redelivery.Answer, *Demand, error)
}

// Off serves paid routes without payment, for private deployments: every
// answer is a house answer at price 0.
type Off struct{}

// Admit always admits.
func (Off) Admit(context.Context, Request) (*Admission, *Demand, error) {
	return &Admission{Facts: map[string]any{"mode": "off"}}, nil, nil
}

// Settle records nothing to charge.
func (Off) Settle(context.Context, Request, *Admission) (*Receipt, *Demand, error) {
	return &Receipt{House: true, Facts: map[string]any{"mode": "off"}}, nil, nil
}

// Undelivered has nothing to keep: nothing was paid.
func (Off) Undelivered(context.Context, Request, *Admission) (map[string]any, map[string]string) {
	return map[string]any{"mode": "off"}, nil
}

// Release has nothing to release.
func (Off) Release(context.Context, *Receipt) {}

// UnchargedFacts says payments are off.
func (Off) UnchargedFacts() map[string]any { return map[string]any{"mode": "off"} }
