// Package server is the host's HTTP surface: per-service routes, the body
// pre-gate, the request's life across the family plugin, the payment gate,
// the pre-signing self-check and signing. It never interprets a record.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/assay-audit/assay/host/bodyschema"
	"github.com/assay-audit/assay/host/viewer"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/admission"
	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/ratelog"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/senderlimit"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/sdk/envelope"
	pb "github.com/assay-audit/assay/sdk/proto/pluginv1"
	"github.com/assay-audit/assay/sdk/selfcheck"
	"github.com/assay-audit/assay/sdk/sharedbody"
)

// Session is one request's conversation with a family.
type Session interface {
	Start(*pb.Start) (*pb.Validated, error)
	Proceed() (*pb.Report, error)
	Close()
}

// earlyProceeder is a session that can send Proceed right behind Start
// (pluginhost.Session).
type earlyProceeder interface{ ProceedIf(ok func() bool) }

// freeYield bounds how long a pre-check waits for paid requests in hand
// (admission.Priority): paid traffic that never pauses slows the free
// tier by this much at most, never stops it.
const freeYield = 100 * time.Millisecond

// admitted is the payment gate's answer to one request.
type admitted struct {
	adm    *payment.Admission
	demand *payment.Demand
	err    error
}

func (s *Server) admit(ctx context.Context, req payment.Request) *admitted {
	adm, demand, err := s.cfg.Payments.Admit(ctx, req)
	return &admitted{adm: adm, demand: demand, err: err}
}

// Backend opens sessions with one family; pluginhost.Family is one.
type Backend interface {
	Open(ctx context.Context) (Session, error)
}

// sharedBackend is a backend whose family takes request bodies as sealed
// shared files (pluginhost.Family on Linux): the host then reads a body
// straight from the connection into one and never holds it in its heap.
type sharedBackend interface {
	TakesSharedBodies() bool
}

// sharedStarter is a session that starts from such a file.
type sharedStarter interface {
	StartShared(*pb.Start, *sharedbody.Body) (*pb.Validated, error)
}

// FamilyBackend adapts a supervised plugin to Backend.
type FamilyBackend struct{ *pluginhost.Family }

// Open opens a stream to the plugin.
func (b FamilyBackend) Open(ctx context.Context) (Session, error) {
	s, err := b.Family.Open(ctx)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Service is one loaded family.
type Service struct {
	Desc    *pb.FamilyDescription
	Backend Backend
	// Build, when set, names the plugin binaries behind the service: the
	// "build" member of its answers.
	Build *Build
}

// Config is everything the server needs.
type Config struct {
	Services []Service
	Keys     *signing.Keyring
	Payments payment.Gate
	FreeTier *freetier.Gate
	Ledger   *ledger.Writer
	Metrics  *metrics.Metrics
	// Adapters, when set, are the loaded format adapters the catalog
	// lists with their state.
	Adapters *pluginhost.Router
	Logger   hclog.Logger
	// ExplainWithheld names the self-check's rule in a withheld answer
	// (error.rule): for the launch self-test's own server, whose answers
	// only the host reads. A public host never sets it: which rule fired
	// is the operator's (the log, /metrics), not a caller's to probe.
	ExplainWithheld bool
	// CallTimeout bounds one request's time inside its plugin (from the
	// moment it has a working place).
	CallTimeout time.Duration
	// Admission bounds each service's concurrent work; the zero value
	// bounds nothing.
	Admission admission.Limits
	// Now is the host's clock.
	Now func() time.Time
	// States says which services are stopped (nil: every one is served).
	States *servicestate.Board
	// AfterIssue, when set, runs after a paid report is issued (its line
	// committed) and before it is written: the fault tests' window for a
	// host killed between the two (EnvPauseAfterIssue in assay serve).
	AfterIssue func()
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (the free tier counts callers without a wallet by
	// address; behind a proxy every connection is the proxy's).
	TrustedProxies []netip.Prefix
	// Senders, when set, makes a client's costly unpaid work cost that
	// client: its unpaid requests on paid routes, and a hold once its
	// records keep crashing or hanging a plugin (senders.go).
	Senders *senderlimit.Limiter
	// Readiness answers GET /readyz (nil: the services' states and the
	// keys alone, no store checked).
	Readiness *readiness.Host
	// MetricsElsewhere leaves /metrics and /<service>/metrics off this
	// handler (404): the operator serves them on a listener of its own
	// (assay serve --metrics-listen), not to the public.
	MetricsElsewhere bool
}

// Server is the HTTP handler.
type Server struct {
	cfg      Config
	mux      *http.ServeMux
	services map[string]*service
	routes   []string // every pattern mounted, but the catch-all
	// the OpenAPI document, built at its first request
	openAPIOnce  sync.Once
	openAPIBytes []byte
	// limited logs the failures every request meets while the store is
	// down once a minute, not once a request
	limited *ratelog.Limiter
	// priority holds pre-checks back while an admitted paid request is
	// in hand: both kinds share the host's and the plugins' cores
	priority *admission.Priority
}

type service struct {
	Service
	check *selfcheck.Checker
	// fields checks each paid answer's ledger line (patterns compiled once)
	fields *ledger.Fields
	ops    map[string]*pb.Op
	// entry is the fixed part of its catalog entry, made once
	entryOnce sync.Once
	entry     catalogService
	// schema is the request body's published JSON Schema: the family's,
	// its record described per format by the adapters (bodyschema)
	schema []byte
	// inputs describe each op's request body for discovery
	inputs map[string]payment.Input
	// places for pre-checks and for paid ops, apart: a flood of free
	// pre-checks cannot keep paying callers out
	prechecks, paid *admission.Gate
	// smallPrechecks and smallPaid are the places of small requests
	// (bodies sent inline), nil when they share the ones above
	smallPrechecks, smallPaid *admission.Gate
}

// bodySchema is the request schema published for d: its record member
// described, per accepted format, by the loaded adapter's record schema.
func (s *Server) bodySchema(d *pb.FamilyDescription) []byte {
	own := familySchema(d)
	if s.cfg.Adapters == nil || d.GetRecordMember() == "" {
		return own
	}
	formats := map[string][]byte{}
	for _, id := range d.GetFormats() {
		if raw := s.cfg.Adapters.RecordSchema(id); len(raw) > 0 {
			formats[id] = raw
		}
	}
	out, skipped, err := bodyschema.Compose(own, bodyschema.Record{FormatMember: d.GetFormatMember(), RecordMember: d.GetRecordMember()}, formats)
	if err != nil {
		s.cfg.Logger.Warn("the request schema keeps the family's own description of the record", "service", d.GetService(), "error", err)
		return own
	}
	for _, id := range skipped {
		s.cfg.Logger.Warn("an adapter's record schema refers outside itself: its format keeps the family's description", "service", d.GetService(), "format", id)
	}
	return out
}

// familySchema is the family's own request schema with its format
// member's enum the criteria's accepted formats (bodyschema.FormatEnum).
func familySchema(d *pb.FamilyDescription) []byte {
	return bodyschema.FormatEnum(d.GetRequestSchema(), d.GetFormatMember(), d.GetFormats())
}

// corpusExample is the smallest JSON object body among the corpus cases
// that a route answers 200: an example of a request it measures (the
// corpus is synthetic, never a submission); nil when there is none.
func corpusExample(corpus []byte, path string) []byte {
	var doc struct {
		Cases []struct {
			Request struct {
				Path     string          `json:"path"`
				Body     json.RawMessage `json:"body"`
				BodyText *string         `json:"body_text"`
			} `json:"request"`
			Expect struct {
				Status int `json:"status"`
			} `json:"expect"`
		} `json:"cases"`
	}
	if json.Unmarshal(corpus, &doc) != nil {
		return nil
	}
	var best []byte
	for _, c := range doc.Cases {
		raw := []byte(c.Request.Body)
		if c.Request.BodyText != nil {
			// a case sent as exact bytes is as good an example when those
			// bytes are a JSON object
			raw = []byte(*c.Request.BodyText)
		}
		if c.Request.Path != path || c.Expect.Status != http.StatusOK || len(raw) == 0 {
			continue
		}
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
			continue
		}
		if best == nil || b.Len() < len(best) {
			best = b.Bytes()
		}
	}
	return best
}

// key names the service under its criteria version.
func (sv *service) key() servicestate.Key {
	return servicestate.Key{Service: sv.Desc.GetService(), CriteriaID: sv.Desc.GetCriteriaId(), CriteriaRevision: sv.Desc.GetCriteriaRevision()}
}

// gate is the admission gate of a request to op (nil: the pre-check),
// small when its body goes to the plugin inline.
func (sv *service) gate(op *pb.Op, small bool) *admission.Gate {
	switch {
	case op == nil && small && sv.smallPrechecks != nil:
		return sv.smallPrechecks
	case op == nil:
		return sv.prechecks
	case small && sv.smallPaid != nil:
		return sv.smallPaid
	}
	return sv.paid
}

// New builds the handler.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.Payments == nil {
		cfg.Payments = payment.Off{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Readiness == nil {
		var keys []servicestate.Key
		for _, svc := range cfg.Services {
			keys = append(keys, servicestate.Key{Service: svc.Desc.GetService(), CriteriaID: svc.Desc.GetCriteriaId(), CriteriaRevision: svc.Desc.GetCriteriaRevision()})
		}
		var adapters func() []pluginhost.AdapterStatus
		if cfg.Adapters != nil {
			adapters = cfg.Adapters.Status
		}
		cfg.Readiness = readiness.New(readiness.Config{Board: cfg.States, Keys: cfg.Keys, Services: keys, Adapters: adapters})
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), services: map[string]*service{}, limited: ratelog.New(cfg.Logger, time.Minute, cfg.Now),
		// while paid traffic is recent, one pre-check at work per core: a
		// paid request arriving finds at most that many ahead of it (two
		// per core served 60 % more pre-checks beside a paid caller, and
		// left the paid p99 12 % higher: docs/benchmarks.md, session 15)
		priority: admission.NewPriority(freeYield, runtime.GOMAXPROCS(0))}
	for _, svc := range cfg.Services {
		limits := cfg.Admission.ForBodyCap(svc.Desc.GetBodyBytes())
		sv := &service{Service: svc, check: selfcheck.New(svc.Desc.GetTripwires()), fields: ledger.NewFields(svc.Desc.GetLedgerFields()), ops: map[string]*pb.Op{},
			prechecks: admission.New(limits), paid: admission.New(limits)}
		if sv.paid != nil {
			cfg.Metrics.Admission(svc.Desc.GetService(), "precheck", sv.prechecks.Working, sv.prechecks.Waiting)
			cfg.Metrics.Admission(svc.Desc.GetService(), "op", sv.paid.Working, sv.paid.Waiting)
		}
		if small, ok := cfg.Admission.Small(min(svc.Desc.GetBodyBytes(), pluginhost.SharedBodyMin)); ok {
			sv.smallPrechecks, sv.smallPaid = admission.New(small), admission.New(small)
			cfg.Metrics.Admission(svc.Desc.GetService(), "precheck_small", sv.smallPrechecks.Working, sv.smallPrechecks.Waiting)
			cfg.Metrics.Admission(svc.Desc.GetService(), "op_small", sv.smallPaid.Working, sv.smallPaid.Waiting)
		}
		sv.schema = s.bodySchema(svc.Desc)
		sv.inputs = map[string]payment.Input{}
		for _, op := range svc.Desc.GetOps() {
			sv.ops[op.GetName()] = op
			// the family's own schema, not the composed one: the 402's
			// PAYMENT-REQUIRED header carries it, and every format's record
			// schema would take it past what clients read (node's fetch
			// refuses response headers over 16 KiB); /openapi.json has all
			example := corpusExample(svc.Desc.GetCorpus(), "/"+svc.Desc.GetService()+"/"+op.GetName())
			if example == nil {
				// said once, at start: the author's to fix with a corpus case
				cfg.Logger.Warn("the family's corpus has no case answered 200 on this paid route: the catalog and the 402's discovery metadata show no example body",
					"service", svc.Desc.GetService(), "op", op.GetName())
			}
			sv.inputs[op.GetName()] = payment.Input{Schema: familySchema(svc.Desc), Example: example}
		}
		cfg.Metrics.Stopped(svc.Desc.GetService(), svc.Desc.GetCriteriaId(), svc.Desc.GetCriteriaRevision(),
			func() bool { st := cfg.States.State(sv.key()); return st.Stopped && !st.Starting })
		s.services[svc.Desc.GetService()] = sv
		s.mount("/"+svc.Desc.GetService(), sv)
		if len(cfg.Services) == 1 {
			s.mount("", sv) // a one-service host answers at the root too
		}
	}
	s.route("GET /healthz", "", "healthz", s.healthz)
	s.route("GET /readyz", "", "readyz", s.readyz)
	s.route("GET /keys", "", "keys", s.keys)
	s.route("GET /{$}", "", "catalog", s.catalog)
	if !cfg.MetricsElsewhere {
		s.route("GET /metrics", "", "metrics", cfg.Metrics.Handler("").ServeHTTP)
	}
	s.route("GET /openapi.json", "", "openapi", s.openAPIDoc)
	s.route("GET "+manifestPath, "", "x402_manifest", s.x402ManifestDoc)
	s.route("GET "+apiCatalogPath, "", "api_catalog", s.apiCatalogDoc)
	s.route("GET /view", "", "view", viewer.New().ServeHTTP)
	s.route("/", "", "unmatched", notCovered)
	return s
}

// route registers a handler and counts its requests under a label set the
// host owns: the service and the route template, never the path.
func (s *Server) route(pattern, service, label string, h http.HandlerFunc) {
	if label != "unmatched" {
		s.routes = append(s.routes, pattern)
	}
	level := hclog.Info
	if label == "healthz" || label == "readyz" || label == "metrics" {
		// probes and scrapers ask every few seconds: at info their lines
		// would bury the requests an operator looks for
		level = hclog.Debug
	}
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		h(rec, r)
		took := time.Since(start)
		s.cfg.Metrics.Request(service, label, rec.status, took)
		s.logRequest(level, pattern, service, r.Method, rec, took)
	})
}

func (s *Server) mount(prefix string, sv *service) {
	name := sv.Desc.GetService()
	s.route("GET "+prefix+"/criteria", name, "criteria", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(sv.Desc.GetCriteriaDocument())
	})
	if prefix != "" && !s.cfg.MetricsElsewhere {
		s.route("GET "+prefix+"/metrics", name, "metrics", s.cfg.Metrics.Handler(name).ServeHTTP)
	}
	if prefix != "" {
		s.route("GET "+prefix, name, "page", s.servicePage(name, sv))
	}
	s.route("POST "+prefix+"/precheck", name, "precheck", func(w http.ResponseWriter, r *http.Request) {
		s.handle(w, r, sv, nil)
	})
	for _, op := range sv.Desc.GetOps() {
		s.route("POST "+prefix+"/"+op.GetName(), name, op.GetName(), func(w http.ResponseWriter, r *http.Request) {
			s.handle(w, r, sv, op)
		})
	}
}

// statusClientGone is what the request counter records for a request whose
// caller went away before it was answered (nginx's 499): net/http would
// otherwise count the answer it never sent as a 200.
const statusClientGone = 499

// clientGone marks w's request as never answered.
func clientGone(w http.ResponseWriter) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.status = statusClientGone
	}
}

// ServeHTTP serves the mux.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// notCovered is every path the host does not serve: a static body, nothing
// echoed.
func notCovered(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, envelope.NotCovered)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"status":"ok"}`)
}

// readyz is 200 when this host serves all it should: its store answers,
// its keys are loaded, and no service is stopped on it alone (a failed
// launch self-test); 503 otherwise. The body says which part is not.
// /healthz stays liveness: a host that is not ready is still alive, and
// restarting it would not bring its store back.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	r := s.cfg.Readiness.Report()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !r.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(r)
}

func (s *Server) keys(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_ = json.NewEncoder(w).Encode(s.cfg.Keys.JWKS())
}

// Host-side refusal codes (the families' own codes come from their criteria).
const (
	codeBodyCap     = envelope.BodyCapCode
	codeUnavailable = "plugin_unavailable"
	codeDeadline    = "deadline_exceeded"
	codeInternal    = "internal_error"
	codeSelfCheck   = "self_check_failed"
	codeCaller      = "caller_invalid"
	codeInterval    = "free_interval"
	codeSpent       = "free_allowance_spent"
	codeFreeDown    = "free_tier_unavailable"
	codePaymentDown = "payment_unavailable"
	codeBusy        = "service_busy"
	codeStopped     = "service_stopped"
	// codeStarting: the service's launch proof (its corpus and custody
	// check) runs on this host; it is served once it passes
	codeStarting    = "service_starting"
	codeBodyTimeout = "body_read_timeout"
	codeBodyBroken  = "body_incomplete"
	// codeAdapterFault: the record's format adapter answered it wrongly or
	// failed on it; the same record fails the same way again
	codeAdapterFault = "adapter_failed"
	// codeAdapterRestarting: the record's format adapter is restarting and
	// the request never reached it; the same request after Retry-After is
	// served
	codeAdapterRestarting = "adapter_restarting"
	// codeLedgerDown: the report could not be issued (its ledger line not
	// committed), so it was not written; the payment stays redeemable
	codeLedgerDown = "ledger_unavailable"
	// codeIssuedMeanwhile: another request with the same payment issued
	// its report first (the gate's payment_in_progress, seen at issue)
	codeIssuedMeanwhile = "payment_in_progress"
)

var hostMessages = map[string]string{
	codeBodyCap:           envelope.BodyCapMessage,
	codeUnavailable:       "the service stopped while handling this request; nothing was charged; send it again",
	codeDeadline:          "the check did not finish within the host's deadline; nothing was charged",
	codeInternal:          "the service failed to handle this request; nothing was charged",
	codeSelfCheck:         "the answer failed the host's pre-signing checks and was not issued; nothing was charged",
	codeCaller:            "caller must be a Solana address (base58, 32 bytes)",
	codeInterval:          "free pre-checks from one caller must be at least the published interval apart",
	codeSpent:             "the caller's free pre-checks for this UTC day are spent: a pre-check cannot be bought; the paid route (paid_route) measures the same body",
	codeFreeDown:          "the free tier's store is unavailable; try again",
	codePaymentDown:       "the payment could not be completed; nothing was charged; try again",
	codeBusy:              "the service is at capacity; nothing was charged; send it again after Retry-After",
	codeStopped:           "this service is stopped under its criteria version (stop-serving); nothing was read or charged; the reason is the operator's or the host's",
	codeStarting:          "this host is proving this service (its corpus and custody check) before it serves it; nothing was read or charged; send it again after Retry-After",
	codeBodyTimeout:       "the request body did not arrive within the host's read timeout; nothing was read as a request",
	codeBodyBroken:        "the request body ended before its declared length or its stream broke; nothing was read as a request",
	codeIssuedMeanwhile:   "another request with this payment issued its report first; nothing more was charged; send it again after Retry-After to have that report",
	codeLedgerDown:        "the report could not be recorded, so it was not issued; the payment was taken once and a re-send of the same request delivers it with no second charge",
	codeAdapterFault:      "the format adapter for this record's format failed on it (cause says how); nothing was charged; the host's operator is told which adapter and why",
	codeAdapterRestarting: "the format adapter for this record's format is restarting and the record was not sent to it; nothing was charged; send it again after Retry-After",
}

// chargedClause replaces "nothing was charged" in a host refusal's
// message when the answer's payment member says the payment was taken:
// one answer says one thing about the payer's money.
const chargedClause = "the payment was taken, once: the delivery marker (payment.delivery_marker) or a re-send of the same payment delivers the report without a second charge"

// payerMessage is code's message, true to the payment facts sent with it.
func payerMessage(code string, paymentFacts map[string]any) string {
	msg := hostMessages[code]
	if charged, _ := paymentFacts["charged"].(bool); charged {
		msg = strings.Replace(msg, "nothing was charged", chargedClause, 1)
	}
	return msg
}

// readBody reads at most limit+1 bytes of the body (one more than the cap,
// so an oversized body is told apart). With a declared length it reads
// into one buffer of exactly that size: io.ReadAll's doubling would leave
// about as much garbage again as a 5 MiB body, in the host's peak memory.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength < 0 || r.ContentLength > limit {
		return io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	// the declared length is only the client's word: the buffer grows with
	// the bytes that arrive (doubling toward it), so a client that declares
	// 5 MiB and sends a byte holds 64 KiB of the host, not 5 MiB, for as
	// long as it waits
	want := int(r.ContentLength)
	body := make([]byte, 0, min(want, 64<<10))
	for len(body) < want {
		if len(body) == cap(body) {
			body = slices.Grow(body, min(cap(body), want-len(body)))
		}
		n, err := r.Body.Read(body[len(body):min(cap(body), want)])
		body = body[:len(body)+n]
		if err == io.EOF && len(body) < want {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("request body: %w", err)
		}
	}
	return body, nil
}

// bodyReadFailure answers a body that did not arrive whole: never a 200
// (net/http would send one for a handler that writes nothing). A read that
// ran into the server's read timeout is a 408; any other broken stream a
// 400. Both close the connection, whose request stream is now unusable; a
// client already gone sees neither.
func (s *Server) bodyReadFailure(q *request, err error) {
	code, status := codeBodyBroken, http.StatusBadRequest
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		code, status = codeBodyTimeout, http.StatusRequestTimeout
	}
	s.cfg.Logger.Warn("request body read failed", "service", q.sv.Desc.GetService(), "status", status)
	q.w.Header().Set("Connection", "close")
	s.hostRefusal(q, status, code, nil)
}

// request is one request's state as the handler moves it along.
type request struct {
	w     http.ResponseWriter
	r     *http.Request
	sv    *service
	op    *pb.Op    // nil on the pre-check
	start time.Time // the host clock's (injectable) instant of arrival
	began time.Time // wall clock, for the log's duration
	note  *requestNote
	// allowance is the caller's free pre-checks once the free tier has
	// counted this one (nil: not a pre-check, or no free tier): every
	// answer then says it, in its body and its RateLimit fields
	allowance *allowance
}

// paidAs records a paid route's payment outcome for the request line;
// with payments off, or on the pre-check, it stays as it is.
func (q *request) paidAs(outcome string) {
	if q.note.payment != "" && q.note.payment != payOff {
		q.note.payment = outcome
	}
}

func (q *request) opName() string {
	if q.op == nil {
		return "precheck"
	}
	return q.op.GetName()
}

// sendDemand answers with the payment gate's own refusal.
func (s *Server) sendDemand(q *request, d *payment.Demand) {
	if d.Status == http.StatusPaymentRequired {
		s.senderPaymentRefused(q)
	}
	answer := s.common(q, envelope.KindRefusal, s.cfg.Now())
	inner := map[string]any{"code": d.Code, "message": d.Message}
	for k, v := range d.Facts {
		inner[k] = v
	}
	answer["error"] = inner
	answer["payment"] = s.cfg.Payments.UnchargedFacts()
	for k, v := range d.Members {
		answer[k] = v
	}
	for k, v := range d.Header {
		q.w.Header().Set(k, v)
	}
	q.note.code = d.Code
	if r, ok := d.Facts["reason"].(string); ok {
		q.note.reason = r
	}
	s.cfg.Metrics.Refusal(q.sv.Desc.GetService(), d.Code)
	s.send(q, d.Status, answer)
}

// clientAddr is the client's address without its port: the connection's,
// or, when the connection comes from a trusted proxy, the last address in
// X-Forwarded-For that is not itself a trusted proxy (the entries to its
// left are the client's word and could be anything).
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !isTrusted(host, trusted) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if _, err := netip.ParseAddr(hop); err != nil {
			break // not an address: trust nothing further left
		}
		if !isTrusted(hop, trusted) {
			return hop
		}
		host = hop
	}
	return host
}

func isTrusted(addr string, trusted []netip.Prefix) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// assemble is the answer of a family's body (envelope.Assemble: the
// host's common members around it, the self-check over both); a paid
// route's adds its payment member.
func (s *Server) assemble(q *request, kind string, familyBody []byte, checkEnd int64, paymentFacts map[string]any) (map[string]any, error) {
	issued := q.start
	if checkEnd != 0 {
		issued = time.Unix(0, checkEnd)
	}
	common := s.common(q, kind, issued)
	if q.op != nil {
		if paymentFacts == nil {
			paymentFacts = s.cfg.Payments.UnchargedFacts()
		}
		common["payment"] = paymentFacts
	}
	return envelope.Assemble(q.sv.check, familyBody, common)
}

func (s *Server) common(q *request, kind string, issued time.Time) map[string]any {
	c := envelope.Common(q.sv.Desc, q.opName(), kind, issued)
	if q.sv.Build != nil {
		c["build"] = q.sv.Build.member()
	}
	return c
}

func (s *Server) familyAnswer(q *request, status int, kind string, body []byte, checkEnd int64, paymentFacts map[string]any) {
	answer, err := s.assemble(q, kind, body, checkEnd, paymentFacts)
	if err != nil {
		s.selfCheckFailure(q, err)
		return
	}
	s.send(q, status, answer)
}

func (s *Server) hostRefusal(q *request, status int, code string, facts map[string]any) {
	s.hostRefusalWith(q, status, code, facts, nil, nil)
}

// hostRefusalMembers is a host refusal with extra top-level members and
// headers.
func (s *Server) hostRefusalMembers(q *request, status int, code string, facts, members map[string]any, header map[string]string) {
	s.hostRefusalAnswer(q, status, code, facts, nil, members, header)
}

// hostRefusalWith is a host refusal whose payment member (on a paid route)
// is paymentFacts when given, and which sets extra headers.
func (s *Server) hostRefusalWith(q *request, status int, code string, facts, paymentFacts map[string]any, header map[string]string) {
	s.hostRefusalAnswer(q, status, code, facts, paymentFacts, nil, header)
}

func (s *Server) hostRefusalAnswer(q *request, status int, code string, facts, paymentFacts, members map[string]any, header map[string]string) {
	inner := map[string]any{"code": code, "message": payerMessage(code, paymentFacts)}
	for k, v := range facts {
		inner[k] = v
	}
	answer := s.common(q, envelope.KindRefusal, s.cfg.Now())
	answer["error"] = inner
	if q.op != nil {
		if paymentFacts == nil {
			paymentFacts = s.cfg.Payments.UnchargedFacts()
		}
		answer["payment"] = paymentFacts
	}
	for k, v := range members {
		answer[k] = v
	}
	for k, v := range header {
		q.w.Header().Set(k, v)
	}
	if status == http.StatusServiceUnavailable && q.w.Header().Get("Retry-After") == "" {
		q.w.Header().Set("Retry-After", "1")
	}
	q.note.code = code
	s.cfg.Metrics.Refusal(q.sv.Desc.GetService(), code)
	s.send(q, status, answer)
}

func (s *Server) boundaryFailure(q *request, err error) { s.boundaryFailureWith(q, err, nil, nil) }

// boundaryFailureWith answers a request the plugin boundary failed; on a
// paid route after payment, paymentFacts and header carry the gate's
// delivery marker.
func (s *Server) boundaryFailureWith(q *request, err error, paymentFacts map[string]any, header map[string]string) {
	var fe *pluginhost.FaultError
	switch {
	case errors.As(err, &fe) && fe.Fault.Restarting():
		// the request never reached the adapter: a re-send after the
		// restart is served
		f := fe.Fault
		s.cfg.Logger.Warn("format adapter restarting: the request was answered at once", "service", q.sv.Desc.GetService(), "op", q.opName(),
			"format", f.Format, "adapter", f.Plugin, "retry_after_ms", f.RetryAfter.Milliseconds())
		after := strconv.Itoa(max(1, int((f.RetryAfter+time.Second-1)/time.Second)))
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeAdapterRestarting, map[string]any{"format": f.Format}, paymentFacts,
			withHeader(header, "Retry-After", after))
	case errors.As(err, &fe):
		// the adapter's defect, never the family's nor the criteria's: no
		// stop-serving, no retry, and no Retry-After (a record that
		// crashed or hung its adapter, or that it answered wrongly, does
		// so again): 502, the answer of a gateway whose upstream failed
		f := fe.Fault
		s.cfg.Metrics.AdapterFault(f.Format, f.Cause)
		s.senderFault(q, f)
		s.cfg.Logger.Error("format adapter fault: the request failed", "service", q.sv.Desc.GetService(), "op", q.opName(),
			"format", f.Format, "adapter", f.Plugin, "binary", f.Binary, "version", f.Version, "cause", f.Cause, "detail", f.Detail)
		s.hostRefusalWith(q, http.StatusBadGateway, codeAdapterFault, map[string]any{"format": f.Format, "cause": f.Cause}, paymentFacts, header)
	case errors.Is(err, pluginhost.ErrDeadline):
		s.cfg.Logger.Warn("plugin call deadline exceeded", "service", q.sv.Desc.GetService(), "op", q.opName(),
			"ms", time.Since(q.began).Milliseconds())
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeDeadline, nil, paymentFacts, header)
	case q.r.Context().Err() != nil && (errors.Is(err, pluginhost.ErrUnavailable) || errors.Is(err, pluginhost.ErrClosed)):
		// the client went away and its request's end reached the plugin:
		// no fault of the plugin's, and nobody reads this answer
		s.cfg.Logger.Info("the client went away before its answer", "service", q.sv.Desc.GetService(), "op", q.opName())
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeUnavailable, nil, paymentFacts, header)
	case errors.Is(err, pluginhost.ErrUnavailable), errors.Is(err, pluginhost.ErrClosed):
		s.cfg.Logger.Warn("plugin unavailable during request", "service", q.sv.Desc.GetService(), "op", q.opName())
		s.hostRefusalWith(q, http.StatusServiceUnavailable, codeUnavailable, nil, paymentFacts, header)
	default:
		s.cfg.Logger.Error("plugin failed a request", "service", q.sv.Desc.GetService(), "op", q.opName())
		s.hostRefusalWith(q, http.StatusInternalServerError, codeInternal, nil, paymentFacts, header)
	}
}

// withHeader is header with one more member (header is left as it was).
func withHeader(header map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range header {
		out[hk] = hv
	}
	return out
}

// selfCheckFailure withholds an answer the pre-signing self-check
// refused: the caller gets 500 self_check_failed (nothing charged), and
// the operator an alarm: the count by rule (/metrics), the log line, and
// /readyz's service entry. The service keeps serving. A withheld answer
// reached no surface, and whether one is withheld can depend on what a
// caller sent (a string a family prints), so stopping the service here
// would let one caller stop it for everyone; stopping stays the
// operator's act (assay service stop).
func (s *Server) selfCheckFailure(q *request, err error) {
	rule := ruleID(err)
	s.cfg.Metrics.SelfCheckFailed(q.sv.Desc.GetService(), rule)
	if s.cfg.Readiness != nil {
		s.cfg.Readiness.Withhold(q.sv.Desc.GetService(), rule)
	}
	// err names the rule only (selfcheck never quotes a value)
	s.cfg.Logger.Error("answer withheld by self-check; the service keeps serving (assay service stop stops it)",
		"service", q.sv.Desc.GetService(), "op", q.opName(), "rule", err.Error())
	var facts map[string]any
	if s.cfg.ExplainWithheld {
		facts = map[string]any{"rule": rule}
	}
	s.hostRefusal(q, http.StatusInternalServerError, codeSelfCheck, facts)
}

// ruleID is a withheld answer's rule as a label: the check's static words
// and numbers, lower case, joined by underscores (at most 64 bytes).
func ruleID(err error) string {
	msg := err.Error()
	for _, prefix := range []string{selfcheck.ErrTripped.Error() + ": ", ledger.ErrRefusedLine.Error() + ": "} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			if prefix != selfcheck.ErrTripped.Error()+": " {
				rest = "ledger_line " + rest
			}
			msg = rest
			break
		}
	}
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(msg) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			gap = false
		} else {
			gap = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "other"
	}
	return b.String()[:min(b.Len(), 64)]
}

func (s *Server) send(q *request, status int, answer map[string]any) {
	if q.allowance != nil {
		q.allowance.state(q.w.Header(), answer)
	}
	if signed, ok := s.sign(q, answer); ok {
		_ = s.write(q, status, signed)
	}
}

func (s *Server) sign(q *request, answer map[string]any) ([]byte, bool) {
	signed, err := s.cfg.Keys.Sign(answer)
	if err != nil {
		s.cfg.Logger.Error("signing failed", "service", q.sv.Desc.GetService())
		http.Error(q.w, "internal error", http.StatusInternalServerError)
		return nil, false
	}
	return signed, true
}

// write sends a signed answer and pushes it to the connection: an error
// means the answer did not leave the host.
func (s *Server) write(q *request, status int, signed []byte) error {
	h := q.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(signed)))
	h.Set("Cache-Control", "no-store")
	q.w.WriteHeader(status)
	_, err := q.w.Write(signed)
	if err == nil {
		err = http.NewResponseController(q.w).Flush()
	}
	return err
}
