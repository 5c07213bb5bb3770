// Package metrics is the host's Prometheus surface. Every label value comes
// from a closed set the host owns (service names, route templates, status
// codes, criteria codes that pass a strict shape): never a wallet, an id, an
// address or anything submitted.
package metrics

import (
	"math"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// Metrics holds one registry (no global state).
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	calls      *prometheus.CounterVec
	refusals   *prometheus.CounterVec
	cnm        *prometheus.CounterVec
	freeRefuse *prometheus.CounterVec
	selfCheck  *prometheus.CounterVec
	ledgerFail *prometheus.CounterVec
	ledgerRef  *prometheus.CounterVec
	settled    *prometheus.CounterVec
	settleTime *prometheus.HistogramVec
	rpcErrors  *prometheus.CounterVec
	adapterBad *prometheus.CounterVec
}

// New builds the registry.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_requests_total",
		Help: "HTTP requests by service, route template and status."}, []string{"service", "route", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "assay_request_duration_seconds",
		Help: "Request latency by service and route template.", Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 12)},
		[]string{"service", "route"})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_calls_total",
		Help: "Answered calls by tier: free (admitted pre-checks), paid (issued reports) and redelivered (an issued report given again to a re-send of its payment)."}, []string{"service", "tier"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_refusals_total",
		Help: "Signed refusals by code."}, []string{"service", "code"})
	m.cnm = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_could_not_measure_total",
		Help: "Could-not-measure answers by kind."}, []string{"service", "kind"})
	m.freeRefuse = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_free_tier_refusals_total",
		Help: "Pre-checks the free tier refused: interval (429) or exhausted (402)."}, []string{"service", "reason"})
	m.selfCheck = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_self_check_failures_total",
		Help: "Answers withheld by the pre-signing self-check, by the rule that fired (an alarm for the operator: the service keeps serving)."}, []string{"service", "rule"})
	m.ledgerFail = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_ledger_write_failures_total",
		Help: "Ledger lines the store failed to write."}, []string{"service"})
	m.ledgerRef = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_ledger_refused_lines_total",
		Help: "Ledger lines refused for breaking the family's closed field list."}, []string{"service"})
	m.settled = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_settlements_total",
		Help: "Settlements by outcome: settled (the price taken, or found taken), refused (the facilitator or the chain said no; nothing taken), unknown (no answer: the claim stays settling)."},
		[]string{"service", "outcome"})
	m.settleTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "assay_settlement_duration_seconds",
		Help: "Time to settle a payment (with a chain: sent and confirmed), by outcome.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)},
		[]string{"service", "outcome"})
	m.rpcErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_solana_rpc_errors_total",
		Help: "Solana RPC calls that failed (unreachable, or an error answer), by method."}, []string{"method"})
	m.adapterBad = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assay_adapter_faults_total",
		Help: "Requests failed by their format adapter (a malformed answer, its own failure, a crash or a hang while it held the record), by format and cause."},
		[]string{"format", "cause"})
	m.reg.MustRegister(m.settled, m.settleTime, m.rpcErrors, m.adapterBad)
	m.reg.MustRegister(m.requests, m.latency, m.calls, m.refusals, m.cnm, m.freeRefuse, m.selfCheck, m.ledgerFail, m.ledgerRef,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// codeShape is what a criteria code looks like; anything else is "other".
var codeShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

func code(c string) string {
	if codeShape.MatchString(c) {
		return c
	}
	return "other"
}

// Request counts one answered request.
func (m *Metrics) Request(service, route string, status int, took time.Duration) {
	m.requests.WithLabelValues(service, route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(service, route).Observe(took.Seconds())
}

// Settlement counts one settlement and its time; outcome is settled,
// refused or unknown.
func (m *Metrics) Settlement(service, outcome string, took time.Duration) {
	m.settled.WithLabelValues(service, outcome).Inc()
	m.settleTime.WithLabelValues(service, outcome).Observe(took.Seconds())
}

// RPCError counts a failed Solana RPC call (method: the host's own call
// names, a closed set).
func (m *Metrics) RPCError(method string) { m.rpcErrors.WithLabelValues(code(method)).Inc() }

// ClaimFigures is a state's claim count and the creation time of its
// oldest claim (zero: none); ok is false when the store does not answer.
type ClaimFigures func(state string) (n int, oldest time.Time, ok bool)

// Claims publishes the payment claims in each state, read from the store
// at each scrape. Claims are the store's, not the host's: every host on a
// store publishes the same figures, labelled with the store's id, so
// max by (store, state) is the fleet's truth where a sum would count each
// claim once per host.
func (m *Metrics) Claims(storeID string, figures ClaimFigures, now func() time.Time) {
	for _, state := range []string{"settling", "settled", "issued"} {
		labels := prometheus.Labels{"state": state, "store": storeID}
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_payment_claims",
			Help:        "Payment claims in the store by state (settling: the outcome not yet known; settled: taken, its report not yet issued; issued: its ledger line committed and its answer kept for redelivery); every host on a store publishes the store's figure (max by (store, state) for a fleet); NaN when the store does not answer.",
			ConstLabels: labels}, func() float64 {
			if n, _, ok := figures(state); ok {
				return float64(n)
			}
			return math.NaN()
		}))
		if state == "issued" {
			continue // spent: kept for redelivery, its age says nothing
		}
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_payment_claim_oldest_seconds",
			Help:        "Age of the store's oldest payment claim in the state (0: none): a settling claim older than a settlement's deadline, or a settled one whose report is owed, is a payment to look at; NaN when the store does not answer.",
			ConstLabels: labels}, func() float64 {
			_, oldest, ok := figures(state)
			switch {
			case !ok:
				return math.NaN()
			case oldest.IsZero():
				return 0
			}
			return now().Sub(oldest).Seconds()
		}))
	}
}

// PaymentPreflight publishes how many of the payment preflight's checks
// failed at its latest run (readiness repeats it every minute; absent when
// the payments check nothing).
func (m *Metrics) PaymentPreflight(problems func() (int, bool)) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_payment_preflight_problems",
		Help: "Payment preflight checks failing at the latest run (the node, its network, pay_to's token account, the fee payer's SOL, the facilitator's /supported); GET /readyz names them and the fix; NaN before the first run."},
		func() float64 {
			if n, ok := problems(); ok {
				return float64(n)
			}
			return math.NaN()
		}))
}

// Ready publishes whether the host would answer /readyz with 200, so an
// alert needs no probe of its own.
func (m *Metrics) Ready(ready func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_ready",
		Help: "1 while this host is ready (its /readyz answers 200: store reachable, keys loaded, every service it should serve passed its launch self-test), else 0."},
		func() float64 {
			if ready() {
				return 1
			}
			return 0
		}))
}

// BuildInfo publishes assay_build_info{version,goversion} 1, Prometheus's
// convention for a build's identity: a fleet mid-upgrade shows which host
// runs which build, and joins onto any other series by instance. version
// is the host's version.String(); call it once per Metrics.
func (m *Metrics) BuildInfo(version string) {
	// the version is stamped at link time, not owned by the host like the
	// other labels: a label value must be UTF-8, or registering it panics
	labels := prometheus.Labels{"version": strings.ToValidUTF8(version, "?"), "goversion": runtime.Version()}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_build_info",
		Help: "Always 1: the build this host runs (version) and the Go it was built with (goversion), as labels.", ConstLabels: labels},
		func() float64 { return 1 }))
}

// FeePayerBalance publishes the embedded facilitator's fee payer's SOL
// balance in lamports, read at each scrape (NaN when the node does not
// answer), so an alert can fire before it runs dry.
func (m *Metrics) FeePayerBalance(lamports func() (uint64, bool)) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_fee_payer_lamports",
		Help: "The embedded facilitator's fee payer's SOL balance, in lamports."}, func() float64 {
		if n, ok := lamports(); ok {
			return float64(n)
		}
		return math.NaN()
	}))
}

// AdapterFault counts a request its format adapter failed (format: the
// adapter's described id; cause: pluginhost's closed set).
func (m *Metrics) AdapterFault(format, cause string) {
	m.adapterBad.WithLabelValues(code(format), code(cause)).Inc()
}

// Free counts an admitted free call.
func (m *Metrics) Free(service string) { m.calls.WithLabelValues(service, "free").Inc() }

// Paid counts a delivered paid report.
func (m *Metrics) Paid(service string) { m.calls.WithLabelValues(service, "paid").Inc() }

// Redelivered counts a paid answer given again to a re-send of its
// payment (nothing charged, no line).
func (m *Metrics) Redelivered(service string) { m.calls.WithLabelValues(service, "redelivered").Inc() }

// Refusal counts a signed refusal.
func (m *Metrics) Refusal(service, c string) { m.refusals.WithLabelValues(service, code(c)).Inc() }

// CouldNotMeasure counts a could-not-measure answer.
func (m *Metrics) CouldNotMeasure(service, kind string) {
	m.cnm.WithLabelValues(service, code(kind)).Inc()
}

// FreeRefused counts a free-tier refusal; reason is "interval" or "exhausted".
func (m *Metrics) FreeRefused(service, reason string) {
	m.freeRefuse.WithLabelValues(service, reason).Inc()
}

// SelfCheckFailed counts a withheld answer by the rule that fired (a
// rule id: static words and numbers, never a value of the answer).
func (m *Metrics) SelfCheckFailed(service, rule string) {
	m.selfCheck.WithLabelValues(service, code(rule)).Inc()
}

// LedgerWriteFailed counts a line the store did not take.
func (m *Metrics) LedgerWriteFailed(service string) { m.ledgerFail.WithLabelValues(service).Inc() }

// LedgerLineRefused counts a line refused for its fields.
func (m *Metrics) LedgerLineRefused(service string) { m.ledgerRef.WithLabelValues(service).Inc() }

// PluginRestarts exposes a plugin's restart count: kind is "family" (name
// its service) or "adapter" (name its format id).
func (m *Metrics) PluginRestarts(kind, name string, count func() int) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assay_plugin_restarts_total",
		Help: "Plugin process restarts after its process ended.", ConstLabels: prometheus.Labels{"kind": kind, "name": name}},
		func() float64 { return float64(count()) }))
}

// StoreGroups exposes the store's group commits (SQLite): how many
// transactions committed grouped writes, and how many writes they held;
// writes over commits is how many requests one fsync served.
func (m *Metrics) StoreGroups(stats func() (commits, writes uint64)) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assay_store_group_commits_total",
		Help: "Store transactions that committed the writes of the moment together (SQLite)."},
		func() float64 { c, _ := stats(); return float64(c) }))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assay_store_group_writes_total",
		Help: "Writes (ledger lines, claim moves, free-tier admissions) those transactions committed."},
		func() float64 { _, w := stats(); return float64(w) }))
}

// Admission exposes a service's requests of one kind ("precheck" or "op")
// holding a working place and waiting for one.
func (m *Metrics) Admission(service, kind string, working, waiting func() int) {
	labels := prometheus.Labels{"service": service, "kind": kind}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_requests_working",
		Help: "Requests holding a working place (in their plugin).", ConstLabels: labels},
		func() float64 { return float64(working()) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_requests_waiting",
		Help: "Requests waiting for a working place.", ConstLabels: labels},
		func() float64 { return float64(waiting()) }))
}

// Stopped exposes whether a service is stopped (1) or served (0) under
// its criteria version; the reason is in the catalog, never a label.
func (m *Metrics) Stopped(service, criteriaID, revision string, stopped func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assay_service_stopped",
		Help:        "1 while the service version is stopped (stop-serving), 0 while it is served.",
		ConstLabels: prometheus.Labels{"service": service, "criteria_id": criteriaID, "criteria_revision": revision}},
		func() float64 {
			if stopped() {
				return 1
			}
			return 0
		}))
}

// Handler serves every metric; with service set, only the samples labelled
// with that service.
func (m *Metrics) Handler(service string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		families, err := m.reg.Gather()
		if err != nil {
			http.Error(w, "metrics unavailable", http.StatusInternalServerError)
			return
		}
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, f := range families {
			if service != "" {
				kept := f.Metric[:0]
				for _, s := range f.Metric {
					for _, l := range s.GetLabel() {
						if l.GetName() == "service" && l.GetValue() == service {
							kept = append(kept, s)
							break
						}
					}
				}
				if len(kept) == 0 {
					continue
				}
				f.Metric = kept
			}
			if err := enc.Encode(f); err != nil {
				return
			}
		}
	})
}

// Mux serves every metric at /metrics and each service's at
// /<service>/metrics, the paths the public listener has when the metrics
// are not on a listener of their own; anything else is 404.
func (m *Metrics) Mux(services []string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler(""))
	for _, s := range services {
		mux.Handle("GET /"+s+"/metrics", m.Handler(s))
	}
	return mux
}
