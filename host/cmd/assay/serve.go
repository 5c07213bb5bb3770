package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/admission"
	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/dirlock"
	"github.com/assay-audit/assay/host/launchproof"
	"github.com/assay-audit/assay/host/version"
	"github.com/assay-audit/assay/sdk"
)

// serveFlags are assay serve's own flags (the rest override the config).
type serveFlags struct {
	check, proof bool
}

// serveConfig reads assay serve's flags and config.
func serveConfig(args []string) (config.Config, serveFlags, error) {
	fs := newFlags("serve")
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	listen := fs.String("listen", "", "listen address (default 127.0.0.1:8402)")
	metricsListen := fs.String("metrics-listen", "", "serve /metrics on this address of its own, and not on the public listener (config metrics_listen)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	payments := fs.String("payments", "", "house (no chain: nothing settles, no money taken) | local (settles on --solana-rpc's chain; the default, refused without a node) | off | <facilitator URL>")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	keysSecret := fs.String("keys-secret", "", "key secret file: sign with the keys every host on the store shares")
	payTo := fs.String("pay-to", "", "the seller's wallet (default: the config's pay_to, else one generated into the data dir)")
	feePayerKey := fs.String("fee-payer-key", "", "the local facilitator's fee-payer keypair (hosts on one store share it)")
	publicURL := fs.String("public-url", "", "the public base URL behind a proxy, for x402 resource.url")
	solanaRPC := fs.String("solana-rpc", "", "a Solana JSON-RPC node: the local facilitator settles on the chain for real")
	strict := fs.Bool("strict-plugins", false, "a plugin that cannot start stops the host (default: it is left out and the rest served; config strict_plugins)")
	proof := fs.Bool("canary-proof", false, "also prove every surface (log, store, data dir, temp dir, metrics, MCP) of each new plugin set before serving it; a service that leaves a trace is not served")
	trusted := fs.String("trusted-proxies", "", "comma-separated addresses or CIDR prefixes of reverse proxies whose X-Forwarded-For names the client")
	logFormat := fs.String("log-format", "", "text (default) or json: one JSON object per log line (config log_format)")
	logLevel := fs.String("log-level", "", "trace, debug, info (default), warn or error (config log_level)")
	check := fs.Bool("check", false, "validate the config, store, key files and plugins (pins included), print what was checked, and exit without serving")
	grace := fs.String("shutdown-grace", "", "how long a stopping host lets requests finish before it cuts them (default 60s; config shutdown_grace)")
	if err := parse(fs, args); err != nil {
		return config.Config{}, serveFlags{}, err
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{listen: &c.Listen, metricsListen: &c.MetricsListen, dataDir: &c.DataDir, payments: &c.Payments, storeSpec: &c.Store,
			keysSecret: &c.KeysSecretFile, payTo: &c.PayTo, feePayerKey: &c.FeePayerKeyFile, publicURL: &c.PublicURL, solanaRPC: &c.SolanaRPC,
			logFormat: &c.LogFormat, logLevel: &c.LogLevel, grace: &c.ShutdownGrace}
	})
	if err != nil {
		return cfg, serveFlags{}, err
	}
	cfg.StrictPlugins = cfg.StrictPlugins || *strict
	if *trusted != "" {
		cfg.TrustedProxies = strings.Split(*trusted, ",")
	}
	return cfg, serveFlags{check: *check, proof: *proof}, nil
}

// serving is what assay serve's settings come to once checked.
type serving struct {
	cfg           config.Config
	flags         serveFlags
	log           hclog.Logger
	tap           *launchproof.Tap
	timeout       time.Duration
	shutdownGrace time.Duration
	limits        admission.Limits
}

func serve(args []string, stderr io.Writer) (err error) {
	started := time.Now()
	cfg, flags, err := serveConfig(args)
	if err != nil {
		return err
	}
	tap := launchproof.NewTap(stderr)
	// the logger first, where its own settings allow one, so that a JSON
	// log reader gets the refusal below as a line of its own
	if log, lerr := hostLogger(cfg, tap); lerr == nil {
		if o, _ := cfg.LoggerOptions(); o.JSONFormat {
			defer func() { err = logStop(log, err) }()
		}
	}
	// every mistake at once, before anything starts
	if p := cfg.Problems(runtime.GOMAXPROCS(0)); len(p) == 1 {
		return errors.New(p[0])
	} else if len(p) > 1 {
		return fmt.Errorf("%d problems in the config and flags:\n  %s", len(p), strings.Join(p, "\n  "))
	}
	s := serving{cfg: cfg, flags: flags, tap: tap}
	if s.log, err = hostLogger(cfg, tap); err != nil {
		return err
	}
	if s.timeout, err = cfg.Timeout(); err != nil {
		return err
	}
	if s.shutdownGrace, err = cfg.Grace(); err != nil {
		return err
	}
	if s.limits, err = cfg.AdmissionLimits(runtime.GOMAXPROCS(0)); err != nil {
		return err
	}
	proxies, err := cfg.Proxies()
	if err != nil {
		return err
	}
	if flags.check {
		return dryRun(context.Background(), cfg, s.log, stderr)
	}
	s.log.Info("assay serve starting", "version", version.String(), "pid", os.Getpid())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// the data dir is this host's alone: its host id names the claim
	// leases this host releases when it starts
	lock, err := dirlock.Acquire(cfg.DataDir, "listening on "+cfg.Listen+", started "+sdk.Instant(time.Now()))
	if err != nil {
		return err
	}
	defer lock.Release()
	id, err := hostID(cfg.DataDir)
	if err != nil {
		return err
	}
	// bind first: the port is this host's from its first instant (nothing
	// can take it while the host starts), /healthz answers at once, and the
	// front door says what the start is doing until the host's own handler
	// takes over
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	front := newFrontDoor(version.String())
	srv := s.httpServer(front)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer srv.Close() // an error below: the listener goes with the host
	s.log.Info("listening", "url", "http://"+ln.Addr().String(), "host_id", id, "data_dir", cfg.DataDir, "version", version.String(),
		"ms_since_exec", time.Since(started).Milliseconds())
	h, err := s.assemble(ctx, id, front, proxies)
	defer h.close()
	if err != nil {
		return err
	}
	front.open(h.handler)
	s.log.Info("serving", "store", h.store.Where(), "payments", cfg.Payments, "working_per_service", s.limits.Working, "wait", s.limits.Wait,
		"proving", len(h.unproven), "ms_since_exec", time.Since(started).Milliseconds())
	h.owned.Add(1)
	go func() {
		defer h.owned.Done()
		h.prove(h.ctx)
		h.ready.Nudge()
		if h.ctx.Err() == nil {
			r := h.ready.Report()
			s.log.Info("start over", "ready", r.Ready, "services", len(r.Services), "proven_now", len(h.unproven), "ms_since_exec", time.Since(started).Milliseconds())
		}
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case err := <-served:
			return fmt.Errorf("serve: %w", err)
		case <-hup:
			if err := h.keys.Reload(); err != nil {
				s.log.Error("signing keys not reloaded", "error", err)
			} else {
				s.log.Info("signing keys reloaded", "active", h.keys.ActiveID())
			}
		case <-ctx.Done():
			s.log.Info("shutting down", "grace", s.shutdownGrace)
			return drain(srv, s.shutdownGrace, s.log)
		}
	}
}

// httpServer is the public listener's server, its timeouts bounding what
// a request may take.
func (s serving) httpServer(h http.Handler) *http.Server {
	// the longest a read request takes to answer: a wait for a place, then
	// the call (settlement included, under the same deadline), the ledger
	// line and the write, with room
	answering := s.limits.Wait + s.timeout + 30*time.Second
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute + answering, // the body's read (ReadTimeout), then the answer
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}
