// Package readiness is a host's own state, seen from outside: whether it
// is ready to serve (its store answers, its keys are loaded, every service
// it should serve passed its launch self-test) for GET /readyz, and the
// same view written into the store every few seconds so `assay service
// status` lists what each host of a fleet serves and `assay service
// resume` knows which hosts took it. A service stopped on this host alone
// (its launch self-test failed) is tried again when a resume row newer
// than the stop appears in the store.
package readiness

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/preflight"
	"github.com/assay-audit/assay/host/ratelog"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
)

// Live is how recently a host must have written its row to count as
// running; a host writes it every HeartbeatEvery.
const (
	HeartbeatEvery = 2 * time.Second
	Live           = 10 * time.Second
)

// Relaunch runs a service's corpus again on this host: ok when it passed
// whole, else why not ("corpus failed …").
type Relaunch func(ctx context.Context, k servicestate.Key) (ok bool, reason string)

// Config is what a host's readiness is made of.
type Config struct {
	// Store is the host's store (nil: not checked, nothing written).
	Store *store.Store
	Board *servicestate.Board
	Keys  *signing.Keyring
	// Services are the service versions this host loaded.
	Services []servicestate.Key
	// HostID and Label name the host in its row; Version is its build.
	HostID, Label, Version string
	Relaunch               Relaunch
	// Adapters lists the format adapters' states (nil: none loaded).
	Adapters func() []pluginhost.AdapterStatus
	Log      hclog.Logger
	Now      func() time.Time
	// Preflight is the payment preflight (nil: none, the payments take no
	// chain and no remote facilitator); Run repeats it every PreflightEvery
	// (default a minute) and /readyz shows its latest findings.
	Preflight      func(context.Context) []preflight.Finding
	PreflightEvery time.Duration
	// Starting names what the host still does before it serves all it
	// should ("context-audit: corpus"); nil or empty: nothing.
	Starting func() []string
}

// Host tracks one host's readiness.
type Host struct {
	cfg     Config
	started time.Time
	errs    *ratelog.Limiter

	mu       sync.Mutex
	storeErr bool // the last ping failed
	pinged   bool // a ping has run
	// relaunching: services whose corpus runs again, with the resume row
	// that asked for it
	relaunching map[servicestate.Key]int64
	// withheld: answers the self-check withheld on this host, by service
	withheld map[string]*Withheld
	payments *Payments // the latest preflight (nil: not run)
	// nudge asks Run for a heartbeat now (Nudge)
	nudge chan struct{}
}

// Nudge writes the host's row at once instead of at the next heartbeat:
// the start is over, and the fleet's status should say so now.
func (h *Host) Nudge() {
	select {
	case h.nudge <- struct{}{}:
	default:
	}
}

// Payments is the payment preflight's latest findings. They are not part
// of ready: the node and the facilitator are the fleet's, so a node that
// stops answering would take every host out of rotation, and with them
// the free pre-checks and the redeliveries, while payers get a 503
// (nothing taken) anyway; the alert on assay_payment_preflight_problems
// tells the operator instead.
type Payments struct {
	OK        bool           `json:"ok"`
	CheckedAt string         `json:"checked_at"`
	Checks    []PaymentCheck `json:"checks"`
}

// PaymentCheck is one preflight check: static words and public values
// (addresses, a network id), never a node's or facilitator's URL or error
// text (the log has those).
type PaymentCheck struct {
	Check string `json:"check"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Fix   string `json:"fix,omitempty"`
	// RefusesStart: a host starting with this finding is refused (every
	// payer would fail); the rest only warn.
	RefusesStart bool `json:"refuses_start,omitempty"`
}

// Preflight runs the payment preflight now and keeps its findings for
// /readyz; it returns how many failed, refusing the start or not.
func (h *Host) Preflight(ctx context.Context) (fatal, warn int) {
	if h.cfg.Preflight == nil {
		return 0, 0
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p := &Payments{OK: true, Checks: []PaymentCheck{}}
	for _, f := range h.cfg.Preflight(ctx) {
		p.Checks = append(p.Checks, PaymentCheck{Check: f.What, OK: f.OK(), Error: f.Err, Fix: f.Fix, RefusesStart: f.Fatal && !f.OK()})
		switch {
		case f.OK():
		case f.Fatal:
			fatal++
		default:
			warn++
		}
	}
	p.OK = fatal+warn == 0
	p.CheckedAt = h.cfg.Now().UTC().Format(time.RFC3339)
	h.mu.Lock()
	was := h.payments
	h.payments = p
	h.mu.Unlock()
	if !p.OK && (was == nil || was.OK) {
		h.cfg.Log.Warn("payment preflight fails now (GET /readyz lists what and the fix)", "refusing_start", fatal, "warnings", warn)
	} else if p.OK && was != nil && !was.OK {
		h.cfg.Log.Info("payment preflight passes again")
	}
	return fatal, warn
}

// PaymentProblems is the latest preflight's failed checks (ok false: not
// run yet).
func (h *Host) PaymentProblems() (n int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.payments == nil {
		return 0, false
	}
	for _, c := range h.payments.Checks {
		if !c.OK {
			n++
		}
	}
	return n, true
}

// Withheld is what a service's answers withheld by the pre-signing
// self-check look like on this host since it started: an alarm for the
// operator, not unreadiness (the service serves on; stopping it is the
// operator's act, operators.md).
type Withheld struct {
	Count    int    `json:"count"`
	LastRule string `json:"last_rule"`
	Last     string `json:"last"`
}

// Withhold records an answer of service withheld by rule (a rule id:
// static words, never a value of the answer).
func (h *Host) Withhold(service, rule string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.withheld[service]
	if w == nil {
		w = &Withheld{}
		h.withheld[service] = w
	}
	w.Count++
	w.LastRule, w.Last = rule, h.cfg.Now().UTC().Format(time.RFC3339)
}

// New builds a host's readiness.
func New(cfg Config) *Host {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Host{cfg: cfg, started: cfg.Now(), errs: ratelog.New(cfg.Log, time.Minute, cfg.Now), relaunching: map[servicestate.Key]int64{}, withheld: map[string]*Withheld{},
		nudge: make(chan struct{}, 1)}
}

// Check is one part of a readiness report.
type Check struct {
	OK bool `json:"ok"`
	// Reason is why not: static words, never a store's error text (it can
	// name addresses and users); the log has the error.
	Reason string `json:"reason,omitempty"`
}

// ServiceCheck is one service version on this host.
type ServiceCheck struct {
	store.HostService
	// Ready: served, or stopped for the whole fleet by an operator (this
	// host does as it should); not ready: stopped on this host alone.
	Ready bool `json:"ready"`
	// Withheld: answers the self-check withheld here (nil: none).
	Withheld *Withheld `json:"withheld,omitempty"`
}

// Report is the body of GET /readyz.
type Report struct {
	Ready bool `json:"ready"`
	// Version is the host's build.
	Version string `json:"version,omitempty"`
	// Starting names what the host still does before it is ready (its
	// plugins' start, each unproven service's corpus or custody check);
	// absent once the start is over, whatever its outcome.
	Starting []string       `json:"starting,omitempty"`
	Store    Check          `json:"store"`
	Keys     Check          `json:"keys"`
	Services []ServiceCheck `json:"services"`
	// Adapters: a restarting or faulting adapter leaves the host ready
	// (its other formats and services serve; a restart ends by itself),
	// and shows here for the operator.
	Adapters []pluginhost.AdapterStatus `json:"adapters"`
	// Payments: the payment preflight's latest findings (absent when the
	// payments check nothing: off, house).
	Payments *Payments `json:"payments,omitempty"`
}

// Report is the host's readiness now.
func (h *Host) Report() Report {
	r := Report{Ready: true, Version: h.cfg.Version, Store: Check{OK: true}, Keys: Check{OK: true}}
	if h.cfg.Starting != nil {
		r.Starting = h.cfg.Starting()
	}
	h.mu.Lock()
	switch {
	case h.cfg.Store == nil:
	case !h.pinged:
		r.Store = Check{Reason: "not checked yet"}
	case h.storeErr:
		r.Store = Check{Reason: "the store does not answer"}
	}
	h.mu.Unlock()
	if h.cfg.Keys == nil || h.cfg.Keys.ActiveID() == "" {
		r.Keys = Check{Reason: "no signing key loaded"}
	}
	r.Ready = r.Store.OK && r.Keys.OK && len(r.Starting) == 0
	h.mu.Lock()
	if h.payments != nil {
		copied := *h.payments
		r.Payments = &copied
	}
	h.mu.Unlock()
	r.Adapters = []pluginhost.AdapterStatus{}
	if h.cfg.Adapters != nil {
		r.Adapters = h.cfg.Adapters()
	}
	for _, k := range h.cfg.Services {
		st := h.cfg.Board.State(k)
		c := ServiceCheck{HostService: store.HostService{Service: k.Service, CriteriaID: k.CriteriaID, CriteriaRevision: k.CriteriaRevision,
			State: "serving"}, Ready: !st.Local}
		switch {
		case st.Starting:
			c.State, c.Reason, c.Local = "starting", st.Reason, true
		case st.Stopped:
			c.State, c.Reason, c.Local = "stopped", st.Reason, st.Local
		}
		h.mu.Lock()
		if w := h.withheld[k.Service]; w != nil {
			copied := *w
			c.Withheld = &copied
		}
		h.mu.Unlock()
		r.Ready = r.Ready && c.Ready
		r.Services = append(r.Services, c)
	}
	return r
}

// Run pings the store, tries again every service a resume asks this host
// to, and writes the host's row, every HeartbeatEvery until ctx ends; then
// it deletes the row (the host is stopping) and waits for any relaunch it
// started.
func (h *Host) Run(ctx context.Context) {
	var relaunches sync.WaitGroup
	defer relaunches.Wait()
	if h.cfg.Preflight != nil {
		// its own loop: a node that takes its 15 s to not answer must not
		// hold the heartbeat
		relaunches.Add(1)
		go func() { defer relaunches.Done(); h.preflightLoop(ctx) }()
	}
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		h.tick(ctx, &relaunches)
		select {
		case <-ctx.Done():
			if h.cfg.Store != nil {
				dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = h.cfg.Store.DropHost(dctx, h.cfg.HostID, h.cfg.Now().Add(-7*24*time.Hour))
				cancel()
			}
			return
		case <-t.C:
		case <-h.nudge:
		}
	}
}

func (h *Host) preflightLoop(ctx context.Context) {
	every := h.cfg.PreflightEvery
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.Preflight(ctx)
		}
	}
}

const storeDown = "the store does not answer; pre-checks and paid calls are refused until it does, and /readyz says 503"

func (h *Host) tick(ctx context.Context, relaunches *sync.WaitGroup) {
	// the rows seen before looking for resumes: a resume among them is
	// found below, so the row never claims one this host has not acted on
	seen := h.cfg.Board.EventsSeen()
	for k, id := range h.cfg.Board.Resumed() {
		h.mu.Lock()
		busy := h.relaunching[k] != 0
		if !busy {
			h.relaunching[k] = id
		}
		h.mu.Unlock()
		if busy || h.cfg.Relaunch == nil {
			continue
		}
		relaunches.Add(1)
		go func() {
			defer relaunches.Done()
			h.relaunch(ctx, k)
		}()
	}
	if h.cfg.Store == nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := h.cfg.Store.Ping(pctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	h.mu.Lock()
	h.pinged, h.storeErr = true, err != nil
	for _, id := range h.relaunching {
		seen = min(seen, id-1)
	}
	h.mu.Unlock()
	if err != nil {
		h.errs.Warn(storeDown, "error", err)
		return
	}
	h.errs.Cleared(storeDown, "the store answers again")
	r := h.Report()
	row := store.HostStatus{HostID: h.cfg.HostID, Label: h.cfg.Label, Version: h.cfg.Version, Started: h.started, Seen: h.cfg.Now(), Ready: r.Ready, EventsSeen: seen}
	for _, s := range r.Services {
		row.Services = append(row.Services, s.HostService)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := h.cfg.Store.PutHost(wctx, row); err != nil && ctx.Err() == nil {
		h.errs.Warn("this host's status not written to the store", "error", err)
	}
}

// relaunch runs k's corpus again and serves k when it passes; when it
// does not, k stays stopped here with the new result, until the next
// resume.
func (h *Host) relaunch(ctx context.Context, k servicestate.Key) {
	defer func() {
		h.mu.Lock()
		delete(h.relaunching, k)
		h.mu.Unlock()
	}()
	h.cfg.Log.Info("resume asked in the store: the corpus runs again on this host", "service", k.Service, "criteria", k.CriteriaID)
	ok, reason := h.cfg.Relaunch(ctx, k)
	if ctx.Err() != nil {
		return
	}
	if ok {
		h.cfg.Board.ClearLocal(k)
		h.cfg.Log.Info("corpus passed on resume: served on this host", "service", k.Service, "criteria", k.CriteriaID)
		return
	}
	h.cfg.Board.StopLocal(k, reason, "resume self-test")
	h.cfg.Log.Error("corpus failed on resume: still not served on this host", "service", k.Service, "criteria", k.CriteriaID, "reason", reason)
}
