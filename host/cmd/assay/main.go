// Command assay is the Assay host: `assay serve` runs it; `assay keys
// rotate`, `assay verify` and `assay plugins pin` are the operator's tools.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/dirlock"
	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/jsonlog"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/mcptools"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/ratelog"
	"github.com/assay-audit/assay/host/readiness"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/version"
	"github.com/assay-audit/assay/host/x402"
	"github.com/assay-audit/assay/sdk"
	"github.com/assay-audit/assay/sdk/wire"
)

const usage = `usage:
  assay serve [--config FILE] [--listen ADDR] [--data-dir DIR] [--store sqlite|postgres://...] [--payments house|local|off|<facilitator URL>]
              [--keys-secret FILE] [--pay-to WALLET] [--fee-payer-key FILE] [--solana-rpc URL] [--public-url URL] [--trusted-proxies CIDR,...] [--canary-proof]
              [--log-format text|json] [--log-level trace|debug|info|warn|error] [--metrics-listen ADDR] [--check]
  assay wallet new [--out FILE]
  assay call --wallet FILE | --marker TOKEN | --payment FILE [--out FILE] [--keys JWKS-URL] [--solana-rpc URL] <url> <body.json|->
  assay keys rotate [--config FILE] [--data-dir DIR] [--store SPEC] [--keys-secret FILE]
  assay keys secret --out FILE
  assay service stop <service> --reason TEXT [--config FILE] [--data-dir DIR] [--store SPEC]
  assay service resume <service> [--config FILE] [--data-dir DIR] [--store SPEC]
  assay service status [--json] [--config FILE] [--data-dir DIR] [--store SPEC]
  assay ledger report [--json] [--config FILE] [--data-dir DIR] [--store SPEC]
  assay ledger fill-fmv [--basis TEXT] [--rebasis] [--config FILE] [--data-dir DIR] [--store SPEC] <rates-file>
  assay ledger refund [--reason TEXT] [--force] [--config FILE] [--data-dir DIR] [--store SPEC] <tx-id>
  assay ledger export [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--format csv|json] [--config FILE] [--data-dir DIR] [--store SPEC]
  assay ledger reconcile [--json] [--solana-rpc URL] [--pay-to WALLET] [--config FILE] [--data-dir DIR] [--store SPEC]
  assay mcp <host URL> --wallet FILE [--max-per-call USD] [--max-session USD] [--solana-rpc URL]
  assay store backup --out DIR [--config FILE] [--data-dir DIR] [--store SPEC]
  assay store restore --from DIR --data-dir NEW-DIR
  assay verify [--keys JWKS-FILE-OR-URL] <answer.json|->
  assay plugins pin [--dir DIR]
  assay corpus pin|check [--corpus FILE] [--criteria FILE]
  assay probe [--timeout DURATION] <url>
`

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return // the command printed its flags: asking for them is no failure
	}
	var logged loggedError
	if errors.As(err, &logged) {
		os.Exit(1) // already a line of the host's JSON log
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "assay:", err)
		// assay call's status says what was paid (callUsageText); every
		// other command's failure is 1
		os.Exit(exitStatus(err))
	}
}

// loggedError is an error the host's logger has already written.
type loggedError struct{ error }

func (e loggedError) Unwrap() error { return e.error }

// logStop writes the error serve stops on as a log line, for a log whose
// reader takes every line of standard error as JSON.
func logStop(log hclog.Logger, err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	log.Error("assay serve stopped", "error", err.Error())
	return loggedError{err}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("no command\n" + usage)
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "keys":
		if len(args) < 2 {
			return errors.New("keys: rotate or secret\n" + usage)
		}
		return keysCmd(args[1], args[2:], stdout)
	case "verify":
		return verify(args[1:], stdout)
	case "wallet":
		if len(args) < 2 || args[1] != "new" {
			return errors.New("wallet: only `assay wallet new`\n" + usage)
		}
		return walletNew(args[2:], stdout)
	case "call":
		return call(args[1:], stdout)
	case "ledger":
		if len(args) < 2 {
			return errors.New("ledger: report, export, fill-fmv, refund or reconcile\n" + usage)
		}
		return ledgerCmd(args[1], args[2:], stdout, stderr)
	case "service":
		if len(args) < 2 {
			return errors.New("service: stop, resume or status\n" + usage)
		}
		return serviceCmd(args[1], args[2:], stdout, stderr)
	case "mcp":
		return mcpCmd(args[1:])
	case "store":
		if len(args) < 2 {
			return errors.New("store: backup or restore\n" + usage)
		}
		return storeCmd(args[1], args[2:], stdout)
	case "probe":
		return probe(args[1:], stderr)
	case "plugins":
		if len(args) < 2 || args[1] != "pin" {
			return errors.New("plugins: only `assay plugins pin`\n" + usage)
		}
		return pin(args[2:], stdout, stderr)
	case "corpus":
		if len(args) < 2 {
			return errors.New("corpus: pin or check\n" + usage)
		}
		return corpusCmd(args[1], args[2:], stdout)
	case "-h", "--help", "help":
		_, err := io.WriteString(stdout, usage)
		return err
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

func serve(args []string, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
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
	proof := fs.Bool("canary-proof", false, "before serving, send a canary through every service and route and refuse to serve if any surface keeps a trace")
	trusted := fs.String("trusted-proxies", "", "comma-separated addresses or CIDR prefixes of reverse proxies whose X-Forwarded-For names the client")
	logFormat := fs.String("log-format", "", "text (default) or json: one JSON object per log line (config log_format)")
	logLevel := fs.String("log-level", "", "trace, debug, info (default), warn or error (config log_level)")
	check := fs.Bool("check", false, "validate the config, store, key files and plugins (pins included), print what was checked, and exit without serving")
	grace := fs.String("shutdown-grace", "", "how long a stopping host lets requests finish before it cuts them (default 60s; config shutdown_grace)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{listen: &c.Listen, metricsListen: &c.MetricsListen, dataDir: &c.DataDir, payments: &c.Payments, storeSpec: &c.Store,
			keysSecret: &c.KeysSecretFile, payTo: &c.PayTo, feePayerKey: &c.FeePayerKeyFile, publicURL: &c.PublicURL, solanaRPC: &c.SolanaRPC,
			logFormat: &c.LogFormat, logLevel: &c.LogLevel, grace: &c.ShutdownGrace}
	})
	if err != nil {
		return err
	}
	cfg.StrictPlugins = cfg.StrictPlugins || *strict
	if *trusted != "" {
		cfg.TrustedProxies = strings.Split(*trusted, ",")
	}
	capture := &logCapture{out: stderr}
	if *proof {
		capture.buf = &bytes.Buffer{}
	}
	// the logger first, where its own settings allow one, so that a JSON
	// log reader gets the refusal below as a line of its own
	if log, lerr := hostLogger(cfg, capture); lerr == nil {
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
	log, err := hostLogger(cfg, capture)
	if err != nil {
		return err
	}
	timeout, err := cfg.Timeout()
	if err != nil {
		return err
	}
	shutdownGrace, err := cfg.Grace()
	if err != nil {
		return err
	}
	limits, err := cfg.AdmissionLimits(runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	proxies, err := cfg.Proxies()
	if err != nil {
		return err
	}
	if *check {
		return dryRun(context.Background(), cfg, log, stderr)
	}
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
	st, err := store.Open(ctx, cfg.Store, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
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
	keys, shared, err := openKeys(ctx, cfg, st)
	if err != nil {
		return err
	}
	free, err := freetier.New(ctx, st)
	if err != nil {
		return err
	}
	writer := &ledger.Writer{Store: st, House: map[string]bool{}}
	for _, w := range cfg.HouseWallets {
		writer.House[w] = true
	}
	if cfg.FMV != nil {
		if writer.Rates, err = ledger.LoadRates(cfg.FMV.RatesFile, cfg.FMV.Basis); err != nil {
			return err
		}
	}
	met := metrics.New()
	met.StoreGroups(st.GroupStats)
	gate, preflights, err := paymentGate(ctx, cfg, st, id, met, log)
	if err != nil {
		return err
	}
	if _, ok := gate.(*x402.Gate); ok {
		storeID, err := st.ID(ctx)
		if err != nil {
			return err
		}
		met.Claims(storeID, func(state string) (int, time.Time, bool) {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			n, oldest, err := st.ClaimFigures(cctx, state)
			return n, oldest, err == nil
		}, time.Now)
	}
	if g, ok := gate.(*x402.Gate); ok && g.Resolved != (x402.Resolved{}) {
		log.Info("payment claims left settling, looked up on the chain", "landed_now_settled", g.Resolved.Settled,
			"never_landed_released", g.Resolved.Dropped, "still_unknown", g.Resolved.Unknown)
	}
	if g, ok := gate.(*x402.Gate); ok && g.Unspent > 0 {
		// a crash (of this host or another on the store) left payments
		// whose reports are owed: each is delivered when its payer re-sends
		log.Warn("paid claims whose report is not yet issued; a re-send of each payment issues it (assay ledger report lists them)", "count", g.Unspent)
	}

	ps, err := startPlugins(ctx, cfg, log, "")
	defer ps.Close()
	if err != nil {
		return err
	}
	services := ps.services
	if len(services) == 0 {
		return errors.New("no family plugin configured: run `make build` (it writes bin/assay.hcl) or pass --config")
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
		return err
	}
	var owned sync.WaitGroup
	boardCtx, stopBoard := context.WithCancel(ctx)
	owned.Add(1)
	go func() { defer owned.Done(); board.Run(boardCtx, time.Second) }()
	if shared {
		// a rotation on any host reaches this one within a second
		owned.Add(1)
		go func() { defer owned.Done(); reloadKeys(boardCtx, keys, time.Second, log) }()
	}
	if g, ok := gate.(*x402.Gate); ok {
		// answers kept for redelivery leave the store once their window ends
		owned.Add(1)
		sweepErrs := ratelog.New(log, time.Hour, nil)
		go func() {
			defer owned.Done()
			g.SweepIssued(boardCtx, 10*time.Minute, func(err error) {
				sweepErrs.Warn("expired redelivery answers not swept; they are tried again later", "error", err)
			})
		}()
	}
	defer func() { stopBoard(); owned.Wait() }()
	// each family's corpus before the listener opens: one that fails is
	// not served by this host
	launchSelfTests(ctx, services, keys, board, log)
	ready := readiness.New(readiness.Config{Store: st, Board: board, Keys: keys, Services: serviceKeys(services),
		HostID: id, Label: hostLabel(cfg.Listen), Version: version.String(), Log: log, Adapters: ps.router.Status,
		Relaunch:  func(ctx context.Context, k servicestate.Key) (bool, string) { return relaunch(ctx, services, keys, k) },
		Preflight: preflights})
	met.Ready(func() bool { return ready.Report().Ready })
	if preflights != nil {
		ready.Preflight(ctx)
		met.PaymentPreflight(ready.PaymentProblems)
	}
	owned.Add(1)
	go func() { defer owned.Done(); ready.Run(boardCtx) }()
	handler := server.New(server.Config{Services: services, Keys: keys, Payments: gate, FreeTier: free,
		Ledger: writer, Metrics: met, Logger: log, CallTimeout: timeout,
		Admission: limits, States: board, TrustedProxies: proxies, Readiness: ready, Adapters: ps.router,
		AfterIssue: pauseAfterIssue(os.Getenv(EnvPauseAfterIssue), log), MetricsElsewhere: cfg.MetricsListen != ""})
	if *proof {
		if err := canaryProof(ctx, services, board, handler, keys, st, cfg.DataDir, capture, log); err != nil {
			return err
		}
	}
	if cfg.MetricsListen != "" {
		stopMetrics, err := metricsListener(cfg.MetricsListen, met, services, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// the longest a read request takes to answer: a wait for a place, then
	// the call (settlement included, under the same deadline), the ledger
	// line and the write, with room
	answering := limits.Wait + timeout + 30*time.Second
	srv := &http.Server{
		Handler:           mcptools.Mount(handler, mcptools.New(mcptools.Config{Host: handler, Version: version.String(), MaxBody: mcpBody(services)})),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute + answering, // the body's read (ReadTimeout), then the answer
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", "url", "http://"+ln.Addr().String(), "host_id", id, "data_dir", cfg.DataDir, "store", st.Where(), "payments", cfg.Payments,
		"working_per_service", limits.Working, "wait", limits.Wait)
	for {
		select {
		case err := <-served:
			return fmt.Errorf("serve: %w", err)
		case <-hup:
			if err := keys.Reload(); err != nil {
				log.Error("signing keys not reloaded", "error", err)
			} else {
				log.Info("signing keys reloaded", "active", keys.ActiveID())
			}
		case <-ctx.Done():
			log.Info("shutting down", "grace", shutdownGrace)
			return drain(srv, shutdownGrace, log)
		}
	}
}

// mcpBody bounds an MCP request: the largest service's body and room for
// the JSON-RPC envelope and the payment in _meta.
func mcpBody(services []server.Service) int64 {
	var most int64
	for _, s := range services {
		most = max(most, s.Desc.GetBodyBytes())
	}
	return most + 256<<10
}

// hostLogger is the one logger serve makes: every other (the plugins'
// through go-plugin, the HTTP server's error log, the payment gate's) is
// derived from it, so all follow its format and level.
func hostLogger(cfg config.Config, out io.Writer) (hclog.Logger, error) {
	opts, err := cfg.LoggerOptions()
	if err != nil {
		return nil, err
	}
	opts.Name, opts.Output = "assay", out
	if opts.JSONFormat {
		// a log pipeline reads durations as seconds, not Go's nanoseconds
		return jsonlog.Seconds(hclog.New(opts)), nil
	}
	return hclog.New(opts), nil
}

// drain stops srv: no new connections, the requests in flight given
// grace to finish; past it the rest are cut (their contexts end: a paid
// one's claim stays undelivered, for a re-send to redeem) and the host
// exits all the same.
func drain(srv *http.Server, grace time.Duration, log hclog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("shutdown grace ran out: the requests still open are cut", "grace", grace)
		return srv.Close()
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// EnvPauseAfterIssue names a file: when set, a paid request, once its
// report is issued and before it is written, creates the file and waits
// there for good. The fault tests kill the host in that window
// (host/cmd/assay/killstage_test.go); no deployment sets it.
const EnvPauseAfterIssue = "ASSAY_TEST_PAUSE_AFTER_ISSUE"

// pauseAfterIssue is the AfterIssue hook EnvPauseAfterIssue asks for (nil
// when it is unset).
func pauseAfterIssue(path string, log hclog.Logger) func() {
	if path == "" {
		return nil
	}
	log.Warn("fault test hook set: paid answers are issued and never written", "env", EnvPauseAfterIssue)
	return func() {
		_ = os.WriteFile(path, nil, 0o600)
		select {} // until the test kills the process
	}
}

// The environment's names for the store and the key secret file.
const (
	EnvStore      = "ASSAY_STORE"
	EnvKeysSecret = "ASSAY_KEYS_SECRET_FILE"
	// EnvSolanaRPCFile names a file holding the Solana RPC node's URL: the
	// URL often carries an API key, so it belongs in a secret, never on a
	// command line (ps, docker inspect) or in a config in a repository.
	EnvSolanaRPCFile = "ASSAY_SOLANA_RPC_FILE"
	// EnvNetwork is the CAIP-2 network payments are taken on (the
	// config's network): a deployment picks mainnet or devnet here, with
	// no config or pin to rewrite.
	EnvNetwork = "ASSAY_NETWORK"
)

// loadConfig reads the config (path, or assay.hcl beside the binary), then
// the environment (ASSAY_STORE, ASSAY_KEYS_SECRET_FILE), and lets the flags
// a command was given override both: overrides maps each flag's value to
// the field it replaces when set. ASSAY_STORE_PASSWORD_FILE then sets the
// password of the postgres:// store chosen.
func loadConfig(path string, overrides func(*config.Config) map[*string]*string) (config.Config, error) {
	if path == "" {
		path = config.DefaultPath()
	}
	cfg, err := config.Load(path)
	if err != nil {
		return cfg, err
	}
	// the store and the key secret, which every command of a fleet needs,
	// also come from the environment: set once, not retyped per command
	for env, field := range map[string]*string{EnvStore: &cfg.Store, EnvKeysSecret: &cfg.KeysSecretFile} {
		if v := os.Getenv(env); v != "" {
			*field = v
		}
	}
	if err := chainFromEnv(&cfg); err != nil {
		return cfg, err
	}
	for flagValue, field := range overrides(&cfg) {
		if *flagValue != "" {
			*field = *flagValue
		}
	}
	// last: the password goes on whichever store the flags, the
	// environment or the config named, and a mismatch is refused here,
	// before any command connects
	spec, err := storeWithPassword(cfg.Store, os.Getenv(EnvStorePasswordFile))
	if err != nil {
		return cfg, err
	}
	cfg.Store = spec
	return cfg, nil
}

// chainFromEnv reads the chain's node and network from the environment:
// the URL from the file EnvSolanaRPCFile names (its first line), the
// network from EnvNetwork. A flag still wins over either.
func chainFromEnv(cfg *config.Config) error {
	if path := os.Getenv(EnvSolanaRPCFile); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: %w", EnvSolanaRPCFile, err)
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
		if line = strings.TrimSpace(line); line == "" {
			return fmt.Errorf("%s: the file %s is empty: it holds the Solana RPC node's URL", EnvSolanaRPCFile, path)
		}
		cfg.SolanaRPC = line
	}
	if n := os.Getenv(EnvNetwork); n != "" {
		// mainnet and devnet by name, or a CAIP-2 id
		if id, ok := map[string]string{"mainnet": x402.SolanaMainnet, "devnet": x402.SolanaDevnet, "testnet": x402.SolanaTestnet}[n]; ok {
			n = id
		}
		cfg.Network = n
	}
	return nil
}

// pluginEnv is the little a plugin needs from the host's environment.
func pluginEnv() []string {
	var env []string
	// the Go runtime's own knobs pass through, so an operator can trade
	// memory for time in the plugins as in the host
	for _, k := range []string{"PATH", "TMPDIR", "GORACE", "GOCOVERDIR", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", wire.OverrunEnv} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// openKeys opens the keyring the config names: shared through the store
// (sealed with the operator's key secret) when keys_secret_file is set,
// else the data dir's own.
func openKeys(ctx context.Context, cfg config.Config, st *store.Store) (k *signing.Keyring, shared bool, err error) {
	if cfg.KeysSecretFile == "" {
		k, err = signing.Open(cfg.DataDir)
		return k, false, err
	}
	secret, err := os.ReadFile(cfg.KeysSecretFile)
	if err != nil {
		return nil, false, fmt.Errorf("keys_secret_file: %w", err)
	}
	k, err = signing.OpenShared(ctx, st, bytes.TrimSpace(secret), cfg.DataDir)
	return k, true, err
}

// reloadKeys re-reads a shared keyring every interval until ctx ends.
func reloadKeys(ctx context.Context, k *signing.Keyring, every time.Duration, log hclog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := k.ActiveID()
	const failed = "signing keys not reloaded; the last ones read stay in force"
	errs := ratelog.New(log, time.Minute, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := k.Reload(); err != nil {
				if ctx.Err() == nil {
					errs.Warn(failed, "error", err)
				}
				continue
			}
			errs.Cleared(failed, "signing keys read from the store again")
			if id := k.ActiveID(); id != last {
				log.Info("signing key rotated in the store", "active", id)
				last = id
			}
		}
	}
}

// keysCmd is `assay keys rotate` and `assay keys secret`.
func keysCmd(sub string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("keys "+sub, flag.ContinueOnError)
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	secretFile := fs.String("keys-secret", "", "the key secret file (default: the config's keys_secret_file)")
	out := fs.String("out", "", "secret: the file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if sub == "secret" {
		if *out == "" {
			return errors.New("keys secret: --out FILE")
		}
		if err := signing.NewSecret(*out); err != nil {
			return err
		}
		_, err := fmt.Fprintf(stdout, "wrote %s (mode 0600): give every host on the store the same file as keys_secret_file, and keep it out of the store's backups\n", *out)
		return err
	}
	if sub != "rotate" {
		return errors.New("keys: rotate or secret\n" + usage)
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{dataDir: &c.DataDir, storeSpec: &c.Store, secretFile: &c.KeysSecretFile}
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	st, err := openStore(ctx, cfg, false, stdout, stdout)
	if err != nil {
		return err
	}
	defer st.Close()
	kid, shared, err := rotateKeys(ctx, cfg, st, stdout)
	if err != nil {
		return fmt.Errorf("keys rotate: %w; nothing was changed", err)
	}
	if shared {
		_, err = fmt.Fprintf(stdout, "active signing key: %s (every host on the store signs with it within a second)\n", kid)
		return err
	}
	_, err = fmt.Fprintf(stdout, "active signing key: %s (a running host picks it up on SIGHUP or restart)\n", kid)
	return err
}

// openStore opens the store an operator's command names, one a host has
// already made (a mistyped store is refused, never made), and says which:
// on stdout, or on stderr when stdout carries JSON.
func openStore(ctx context.Context, cfg config.Config, asJSON bool, stdout, stderr io.Writer) (*store.Store, error) {
	st, err := store.OpenExisting(ctx, cfg.Store, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	out := stdout
	if asJSON {
		out = stderr
	}
	fmt.Fprintf(out, "store: %s\n", st.Where())
	return st, nil
}

// rotateKeys makes a new signing key active: in the store, when the
// command has the key secret, else in the data dir's keyring. A store
// holding shared keys refuses a rotation without the secret (it would
// rotate a data dir's keys no host of the store signs with); neither
// keyring is made where none exists.
func rotateKeys(ctx context.Context, cfg config.Config, st *store.Store, out io.Writer) (kid string, shared bool, err error) {
	sealed, _, err := st.SigningKeys(ctx)
	if err != nil {
		return "", false, err
	}
	if cfg.KeysSecretFile == "" {
		if len(sealed) > 0 {
			return "", false, fmt.Errorf("the store holds %d signing keys sealed with the fleet's key secret: give it (--keys-secret, %s or the config's keys_secret_file)", len(sealed), EnvKeysSecret)
		}
		path := filepath.Join(cfg.DataDir, signing.FileName)
		if _, err := os.Stat(path); err != nil {
			return "", false, fmt.Errorf("no keyring at %s (a host keeps its own keys in its data dir): check --data-dir", absPath(path))
		}
		k, err := signing.Open(cfg.DataDir)
		if err != nil {
			return "", false, err
		}
		fmt.Fprintf(out, "keyring: %s\n", absPath(path))
		kid, err = k.Rotate()
		return kid, false, err
	}
	if len(sealed) == 0 {
		return "", true, errors.New("the store holds no shared signing key yet: a host started with the key secret makes the first")
	}
	secret, err := os.ReadFile(cfg.KeysSecretFile)
	if err != nil {
		return "", true, fmt.Errorf("keys_secret_file: %w", err)
	}
	k, err := signing.OpenShared(ctx, st, bytes.TrimSpace(secret), "")
	if err != nil {
		return "", true, err
	}
	kid, err = k.Rotate()
	return kid, true, err
}

// urlHost is a URL's host, for a log line (its path and query can hold
// credentials).
func urlHost(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "(unparsable URL)"
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func verify(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	keysRef := fs.String("keys", "http://127.0.0.1:8402/keys", "JWKS file or URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("verify: name one answer file, or - for standard input")
	}
	var answer []byte
	var err error
	if fs.Arg(0) == "-" {
		answer, err = io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	} else {
		answer, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		return fmt.Errorf("verify: read answer: %w", err)
	}
	jwks, err := readKeys(*keysRef)
	if err != nil {
		return err
	}
	kid, err := signing.Verify(answer, jwks)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "signature valid: key %s\n", kid)
	return err
}

func readKeys(ref string) ([]byte, error) {
	if strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Get(ref)
		if err != nil {
			return nil, fmt.Errorf("verify: fetch keys: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("verify: fetch keys: status %d", resp.StatusCode)
		}
		return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	raw, err := os.ReadFile(ref)
	if err != nil {
		return nil, fmt.Errorf("verify: read keys: %w", err)
	}
	return raw, nil
}

// pin writes the config that pins every plugin binary in dir: make build
// runs it so the default config always matches the binaries just built.
func pin(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plugins pin", flag.ContinueOnError)
	dir := fs.String("dir", "bin", "plugin directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	entries, err := os.ReadDir(*dir)
	if err != nil {
		return fmt.Errorf("plugins pin: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		// the host itself and its configs are expected beside the plugins
		why := ""
		switch {
		case n == "assay" || filepath.Ext(n) == ".hcl":
			continue
		case e.IsDir():
			why = "a directory"
		case !strings.HasPrefix(n, "assay-"):
			why = "not named assay-<name> (assay-<family> or assay-adapter-<format>)"
		case filepath.Ext(n) != "":
			why = "its name has an extension (" + filepath.Ext(n) + ")"
		}
		if why != "" {
			// stderr: stdout is the config being written
			fmt.Fprintf(stderr, "plugins pin: skipped %s: %s\n", n, why)
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# Written by `assay plugins pin`: every plugin beside the host, pinned by SHA-256.\n")
	for _, n := range names {
		sum, err := pluginhost.PinOf(filepath.Join(*dir, n))
		if err != nil {
			return err
		}
		kind, name := "family", strings.TrimPrefix(n, "assay-")
		if strings.HasPrefix(name, "adapter-") {
			kind, name = "adapter", strings.TrimPrefix(name, "adapter-")
		}
		fmt.Fprintf(&b, "\nplugin %q {\n  kind   = %q\n  path   = %q\n  sha256 = %q\n}\n", name, kind, n, sum)
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}
