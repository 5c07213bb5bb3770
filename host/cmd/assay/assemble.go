package main

import (
	"context"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/launchproof"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/preflight"
	"github.com/assay-audit/assay/host/ratelog"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/senderlimit"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/version"
	"github.com/assay-audit/assay/host/x402"
)

// runningHost is a started host: its handler, what it owns, and the
// proofs still to run before it serves every service.
type runningHost struct {
	// ctx is the host's background work's; close ends it
	ctx    context.Context
	cancel context.CancelFunc
	owned  sync.WaitGroup
	// closers run in reverse on close (plugins, store, metrics listener)
	closers []func()

	handler  http.Handler
	store    *store.Store
	keys     *signing.Keyring
	ready    *readiness.Host
	unproven []launchproof.Target
	// prove runs the proofs still owed, then serves what passed
	prove func(ctx context.Context)
}

// close ends the host's background work, then what it owns.
func (h *runningHost) close() {
	if h.cancel != nil {
		h.cancel()
	}
	h.owned.Wait()
	for i := len(h.closers) - 1; i >= 0; i-- {
		h.closers[i]()
	}
}

// assemble opens the store and the keys, builds the payments, starts the
// plugins and the host's handler, while the front door answers; the
// caller closes what it returns, also on error.
func (s serving) assemble(ctx context.Context, id string, front *frontDoor, proxies []netip.Prefix) (*runningHost, error) {
	cfg, log := s.cfg, s.log
	h := &runningHost{}
	h.ctx, h.cancel = context.WithCancel(ctx)
	st, err := store.Open(ctx, cfg.Store, cfg.DataDir)
	if err != nil {
		return h, err
	}
	h.store = st
	h.closers = append(h.closers, func() { st.Close() })
	if n := st.SchemaAhead(); n > 0 {
		// a rolling upgrade: a newer Assay migrated the store; this host
		// serves on as the previous version (every migration is additive)
		log.Warn("a newer Assay has migrated the store: this host runs on it as the previous version; upgrade it", "versions_ahead", n, "this_build", version.String())
	}
	if st.Dialect() == "postgres" && !st.HasSchema() {
		// legal, and rarely meant: a database shared with other software
		// then holds Assay's tables among its own
		log.Warn("the store URL names no search_path: Assay's tables are in the database's public schema", "store", st.Where())
	}
	front.at("keys")
	keys, shared, err := openKeys(ctx, cfg, st)
	if err != nil {
		return h, err
	}
	h.keys = keys
	front.withKeys(keys)
	free, err := freetier.New(ctx, st, freetier.PublicURL(cfg.PublicURL))
	if err != nil {
		return h, err
	}
	writer := &ledger.Writer{Store: st, House: map[string]bool{}}
	for _, w := range cfg.HouseWallets {
		writer.House[w] = true
	}
	if cfg.FMV != nil {
		if writer.Rates, err = ledger.LoadRates(cfg.FMV.RatesFile, cfg.FMV.Basis); err != nil {
			return h, err
		}
	}
	met := metrics.New()
	met.BuildInfo(version.String())
	met.StoreGroups(st.GroupStats)
	front.at("payments and plugins")
	// the plugins start, and the host's build is hashed (every proof's key
	// names it), while the payment path is built and checked: a node slow
	// to answer holds neither
	type started struct {
		ps    *plugins
		err   error
		build string
	}
	starting := make(chan started, 1)
	go func() {
		var r started
		d, err := launchproof.BuildDigest()
		if err != nil {
			log.Warn("the host binary could not be read: its launch proofs are neither read nor recorded", "error", err)
		}
		r.build = d
		r.ps, r.err = startPlugins(ctx, cfg, log, "")
		starting <- r
	}()
	gate, preflights, err := s.payments(h.ctx, st, id, met)
	r := <-starting // always: what started is closed with the host
	ps, hostBuild := r.ps, r.build
	h.closers = append(h.closers, ps.Close)
	if err != nil {
		return h, err
	}
	if r.err != nil {
		return h, r.err
	}
	services := ps.services
	if len(services) == 0 {
		return h, noFamily(ps)
	}
	for i, f := range ps.families {
		met.PluginRestarts("family", services[i].Desc.GetService(), f.Restarts)
	}
	for _, a := range ps.router.Adapters() {
		met.PluginRestarts("adapter", a.Description().GetFormatId(), a.Restarts)
	}
	// stop-serving and resume live in the store: every host on it reads
	// them each second
	board := servicestate.New(st, log, nil)
	if err := board.Refresh(ctx); err != nil {
		return h, err
	}
	s.background(h, board, keys, shared, gate)
	proofStore := st
	if hostBuild == "" {
		proofStore = nil // an unknown build proves every start
	}
	prover := launchproof.New(launchproof.Config{Store: proofStore, Board: board, Keys: keys, Tap: s.tap, Log: log, HostID: id, Version: version.String()})
	targets := proofTargets(ps, hostBuild, launchproof.KindLaunch)
	// held back before the handler exists: no request reaches an
	// unproven service
	h.unproven = prover.Unproven(ctx, targets)
	canary := s.canaryProofs(ctx, proofStore, board, ps, id, hostBuild)
	ready := readiness.New(readiness.Config{Store: st, Board: board, Keys: keys, Services: serviceKeys(services),
		HostID: id, Label: hostLabel(cfg.Listen), Version: version.String(), Log: log, Adapters: ps.router.Status,
		Relaunch: func(ctx context.Context, k servicestate.Key) (bool, string) {
			for _, t := range targets {
				if keyOf(t.Service) == k {
					return prover.Relaunch(ctx, t)
				}
			}
			return false, "the service is not loaded on this host"
		},
		Preflight: preflights, Starting: func() []string { return append(prover.Running(), canary.running()...) }})
	h.ready = ready
	met.Ready(func() bool { return ready.Report().Ready })
	if preflights != nil {
		met.PaymentPreflight(ready.PaymentProblems)
		// its first run in the background: a node that takes its 15 s to
		// not answer holds nothing
		h.owned.Add(1)
		go func() { defer h.owned.Done(); ready.Preflight(h.ctx) }()
	}
	h.owned.Add(1)
	go func() { defer h.owned.Done(); ready.Run(h.ctx) }()
	handler := server.New(server.Config{Services: services, Keys: keys, Payments: gate, FreeTier: free,
		Ledger: writer, Metrics: met, Logger: log, CallTimeout: s.timeout,
		Admission: s.limits, States: board, TrustedProxies: proxies, Readiness: ready, Adapters: ps.router,
		Senders:    senderlimit.New(senderlimit.Config{UnpaidPerMinute: cfg.UnpaidPerMinute}),
		AfterIssue: pauseAfterIssue(os.Getenv(EnvPauseAfterIssue), log), MetricsElsewhere: cfg.MetricsListen != ""})
	if cfg.MetricsListen != "" {
		stopMetrics, err := metricsListener(cfg.MetricsListen, met, services, log)
		if err != nil {
			return h, err
		}
		h.closers = append(h.closers, stopMetrics)
	}
	h.handler = mcptools.Mount(handler, mcptools.New(mcptools.Config{Host: handler, Version: version.String(), MaxBody: mcpBody(services)}))
	h.prove = func(ctx context.Context) {
		prover.Prove(ctx, h.unproven, canary.holds)
		canary.run(ctx, handler, keys, st, cfg.DataDir, s.tap, log)
	}
	return h, nil
}

// payments builds the payment gate and, for a gate on a chain, its
// figures and start-up lines.
func (s serving) payments(ctx context.Context, st *store.Store, id string, met *metrics.Metrics) (payment.Gate, func(context.Context) []preflight.Finding, error) {
	gate, preflights, err := paymentGate(ctx, s.cfg, st, id, met, s.log)
	if err != nil {
		return nil, nil, err
	}
	g, ok := gate.(*x402.Gate)
	if !ok {
		return gate, preflights, nil
	}
	storeID, err := st.ID(ctx)
	if err != nil {
		return nil, nil, err
	}
	met.Claims(storeID, func(state string) (int, time.Time, bool) {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		n, oldest, err := st.ClaimFigures(cctx, state)
		return n, oldest, err == nil
	}, time.Now)
	if g.Resolved != (x402.Resolved{}) {
		s.log.Info("payment claims left settling, looked up on the chain", "landed_now_settled", g.Resolved.Settled,
			"never_landed_released", g.Resolved.Dropped, "still_unknown", g.Resolved.Unknown)
	}
	if g.Unspent > 0 {
		// a crash (of this host or another on the store) left payments
		// whose reports are owed: each is delivered when its payer re-sends
		s.log.Warn("paid claims whose report is not yet issued; a re-send of each payment issues it (assay ledger report lists them)", "count", g.Unspent)
	}
	return gate, preflights, nil
}

// background starts the host's own loops, owned by h: the service states
// read from the store, a shared keyring's reloads, and the sweep of
// expired redelivery answers.
func (s serving) background(h *runningHost, board *servicestate.Board, keys *signing.Keyring, shared bool, gate payment.Gate) {
	h.owned.Add(1)
	go func() { defer h.owned.Done(); board.Run(h.ctx, time.Second) }()
	if shared {
		// a rotation on any host reaches this one within a second
		h.owned.Add(1)
		go func() { defer h.owned.Done(); reloadKeys(h.ctx, keys, time.Second, s.log) }()
	}
	if g, ok := gate.(*x402.Gate); ok {
		// answers kept for redelivery leave the store once their window ends
		h.owned.Add(1)
		sweepErrs := ratelog.New(s.log, time.Hour, nil)
		go func() {
			defer h.owned.Done()
			g.SweepIssued(h.ctx, 10*time.Minute, func(err error) {
				sweepErrs.Warn("expired redelivery answers not swept; they are tried again later", "error", err)
			})
		}()
	}
}
