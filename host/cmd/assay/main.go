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
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/jsonlog"
	"github.com/assay-audit/assay/host/ratelog"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/host/x402"
	"github.com/assay-audit/assay/sdk/wire"
)

const usage = `usage:
  assay serve [--config FILE] [--listen ADDR] [--data-dir DIR] [--store sqlite|postgres://...] [--payments house|local|off|<facilitator URL>]
              [--keys-secret FILE] [--pay-to WALLET] [--fee-payer-key FILE] [--solana-rpc URL] [--public-url URL] [--trusted-proxies CIDR,...] [--canary-proof]
              [--log-format text|json] [--log-level trace|debug|info|warn|error] [--metrics-listen ADDR] [--strict-plugins] [--shutdown-grace DURATION] [--check]
  assay wallet new [--out FILE]
  assay call --wallet FILE | --payment FILE | --marker TOKEN [--out FILE] [--keys JWKS-URL] [--solana-rpc URL] <url> <body.json|->
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
  assay verify [--keys JWKS-FILE-OR-URL] [--submission BODY --plugins DIR] <answer.json|->
  assay plugins pin [--dir DIR] [--choose FORMAT=BINARY ...]
  assay plugins reprove [--config FILE] [--data-dir DIR] [--store SPEC]
  assay corpus pin|check [--corpus FILE] [--criteria FILE]
  assay probe [--timeout DURATION] <url>
  assay version [--json]
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
		return usageError{errors.New("no command\n" + usage)}
	}
	if answered, err := commandHelp(args); answered {
		return err
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "keys":
		return keysCmd(args[1], args[2:], stdout)
	case "verify":
		return verify(args[1:], stdout)
	case "wallet":
		return walletNew(args[2:], stdout)
	case "call":
		return call(args[1:], stdout)
	case "ledger":
		return ledgerCmd(args[1], args[2:], stdout, stderr)
	case "service":
		return serviceCmd(args[1], args[2:], stdout, stderr)
	case "mcp":
		return mcpCmd(args[1:])
	case "store":
		return storeCmd(args[1], args[2:], stdout)
	case "probe":
		return probe(args[1:], stderr)
	case "plugins":
		if args[1] == "pin" {
			return pin(args[2:], stdout, stderr)
		}
		return reprove(args[2:], stdout)
	case "corpus":
		return corpusCmd(args[1], args[2:], stdout)
	case "version":
		return versionCmd(args[1:], stdout)
	case "-h", "--help", "-help", "help":
		_, err := io.WriteString(stdout, usage)
		return err
	}
	return usageError{fmt.Errorf("unknown command %q\n%s", args[0], usage)}
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
	fs := newFlags("keys " + sub)
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	secretFile := fs.String("keys-secret", "", "the key secret file (default: the config's keys_secret_file)")
	out := fs.String("out", "", "secret: the file to write")
	if err := parse(fs, args); err != nil {
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
