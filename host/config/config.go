// Package config reads the host's optional HCL configuration file; command
// line flags override what it says.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/assay-audit/assay/host/admission"
	"github.com/assay-audit/assay/host/solana"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsimple"
)

// Config is the host's whole configuration.
type Config struct {
	Listen string `hcl:"listen,optional"`
	// MetricsListen, when set, is the address /metrics is served on, and
	// the public listener answers it 404: the operator's figures (load,
	// payment claims, stopped services) stay off the public address.
	MetricsListen string `hcl:"metrics_listen,optional"`
	DataDir       string `hcl:"data_dir,optional"`
	// Payments is off, house (the embedded facilitator, no chain: nothing
	// settles), local (the embedded facilitator on solana_rpc's chain) or
	// a remote facilitator URL.
	Payments string `hcl:"payments,optional"`
	// PluginDir is where plugin binaries live; relative plugin paths resolve
	// against it, and no plugin path may leave it. Relative to the config
	// file's folder.
	PluginDir   string `hcl:"plugin_dir,optional"`
	CallTimeout string `hcl:"call_timeout,optional"`
	// ShutdownGrace is how long a stopping host lets requests in flight
	// finish before it cuts them and exits (Grace).
	ShutdownGrace string `hcl:"shutdown_grace,optional"`
	// LogLevel is the least severe level the host logs: trace, debug,
	// info (the default), warn or error.
	LogLevel string `hcl:"log_level,optional"`
	// LogFormat is text (the default, for a terminal) or json (one
	// object per line, for a log shipper).
	LogFormat string `hcl:"log_format,optional"`
	// Store is "sqlite" (data_dir/assay.db, the default), "sqlite:PATH", or
	// a postgres:// URL shared by several hosts.
	Store string `hcl:"store,optional"`
	// HouseWallets are the operator's own wallets: their payments are house
	// proofs and never start Day-0.
	HouseWallets []string `hcl:"house_wallets,optional"`
	// Network is the Solana network payments use, in CAIP-2 form (default
	// devnet); the asset is that network's USDC mint.
	Network string `hcl:"network,optional"`
	// PayTo is the seller's wallet; empty means a seller keypair generated
	// into the data dir (the embedded default).
	PayTo string `hcl:"pay_to,optional"`
	// FeePayer overrides the fee payer a remote facilitator's /supported
	// names.
	FeePayer string `hcl:"fee_payer,optional"`
	// FeePayerKeyFile is the embedded local facilitator's fee-payer
	// keypair (default: generated into the data dir). Hosts that share a
	// store and take payments locally must share it: a payment names the
	// fee payer of the 402 it answers. Relative to the config's folder.
	FeePayerKeyFile string `hcl:"fee_payer_key_file,optional"`
	// PublicURL is the host's public base URL, for x402 resource.url.
	PublicURL string `hcl:"public_url,optional"`
	// SolanaRPC is a Solana JSON-RPC node: payments = "local" needs it and
	// settles on its chain; beside a remote facilitator it finds claims a
	// crash left settling. payments = "house" (checked, co-signed, never
	// broadcast) takes none.
	SolanaRPC string `hcl:"solana_rpc,optional"`
	// KeysSecretFile names the operator's key secret (at least 32 bytes;
	// `assay keys secret` makes one). Set, the signing keys live in the
	// store, sealed with it, and every host on the store signs with them;
	// unset, each host keeps its own in its data dir. Relative to the
	// config file's folder.
	KeysSecretFile string `hcl:"keys_secret_file,optional"`
	// TrustedProxies are the reverse proxies (addresses or CIDR prefixes)
	// whose X-Forwarded-For names the client.
	TrustedProxies []string `hcl:"trusted_proxies,optional"`
	// UnpaidPerMinute is each client's allowance of requests without a
	// payment on paid routes (each is adapted before its 402, free):
	// default 60 a minute; a paid report gives one back. Past it: 429
	// unpaid_rate with Retry-After.
	UnpaidPerMinute int `hcl:"unpaid_per_minute,optional"`
	// StrictPlugins makes a plugin that cannot start (a version
	// mismatch, a bad handshake, a crash in main, a checksum that does not
	// match its pin) stop the host, as before; unset, that plugin is left
	// out, loudly, and the host serves the rest.
	StrictPlugins bool `hcl:"strict_plugins,optional"`
	// FMV is the CAD fair-market-value source.
	FMV *FMV `hcl:"fmv,block"`
	// Admission bounds each service's concurrent work.
	Admission *Admission `hcl:"admission,block"`
	Plugins   []Plugin   `hcl:"plugin,block"`
}

// Admission is the admission block: per service, how many requests are
// in their plugin at once, how many more may wait, and for how long. An
// omitted value takes its default.
type Admission struct {
	Working *int    `hcl:"working,optional"`
	Waiting *int    `hcl:"waiting,optional"`
	Wait    *string `hcl:"wait,optional"`
	// SmallWorking is how many small requests (bodies under 64 KiB) may be
	// in their plugin at once, apart from the working places.
	SmallWorking *int `hcl:"small_working,optional"`
}

// DefaultWaitingBytes is how many bytes of bodies, at the service's cap,
// may wait per service when the config names no waiting count.
const DefaultWaitingBytes = 64 << 20

// SmallPerCore is the default of small working places per core: measured
// on 2 cores (docs/benchmarks.md, session 13), small requests fill the
// cores at about this many in flight, the rest of each one's time being
// the round trips to its plugin.
const SmallPerCore = 8

// AdmissionLimits are the admission bounds in effect: the block's values
// over the defaults (working: one per core; waiting: four per working
// place or 64 MiB of bodies at the service's cap, whichever is more;
// small_working: SmallPerCore per core, 0 for none; wait: 5 s). A waiting
// count in the block is exact.
func (c Config) AdmissionLimits(cores int) (admission.Limits, error) {
	l := admission.Limits{Working: max(cores, 1), Wait: 5 * time.Second, WaitingBytes: DefaultWaitingBytes,
		SmallWorking: SmallPerCore * max(cores, 1)}
	l.Waiting = 4 * l.Working
	a := c.Admission
	if a == nil {
		return l, nil
	}
	if a.Working != nil {
		w := *a.Working
		if w < 1 {
			return l, errors.New("admission.working: must be at least 1")
		}
		l.Working, l.Waiting = w, 4*w
	}
	if a.Waiting != nil {
		if *a.Waiting < 0 {
			return l, errors.New("admission.waiting: must not be negative")
		}
		l.Waiting, l.WaitingBytes = *a.Waiting, 0
	}
	if a.SmallWorking != nil {
		if *a.SmallWorking < 0 {
			return l, errors.New("admission.small_working: must not be negative")
		}
		l.SmallWorking = *a.SmallWorking
	}
	if a.Wait != nil {
		d, err := time.ParseDuration(*a.Wait)
		if err != nil || d < 0 {
			return l, errors.New("admission.wait: must be a duration of at least 0")
		}
		l.Wait = d
	}
	return l, nil
}

// Proxies parses TrustedProxies: each an address or a CIDR prefix.
func (c Config) Proxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range c.TrustedProxies {
		if pre, err := netip.ParsePrefix(p); err == nil {
			out = append(out, pre.Masked())
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			return nil, fmt.Errorf("trusted_proxies: %q is neither an address nor a CIDR prefix", p)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// FMV names the operator's USD/CAD rates file and the basis it states.
type FMV struct {
	RatesFile string `hcl:"rates_file"`
	Basis     string `hcl:"basis"`
}

// Plugin is one plugin block: plugin "<name>" { kind, path, sha256 }.
type Plugin struct {
	Name   string `hcl:"name,label"`
	Kind   string `hcl:"kind,optional"`
	Path   string `hcl:"path"`
	SHA256 string `hcl:"sha256"`
}

// Defaults are the embedded defaults `make run` relies on.
func Defaults() Config {
	return Config{
		Listen:      "127.0.0.1:8402",
		DataDir:     "./var",
		Payments:    "local",
		Network:     "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
		Store:       "sqlite",
		CallTimeout: "30s",
		// under the compose file's 90 s stop_grace_period with the plugins'
		// own stop (2 s each) after it
		ShutdownGrace: "60s",
		LogLevel:      "info",
		LogFormat:     "text",
	}
}

// Load reads path over the defaults. An empty path means the defaults alone.
func Load(path string) (Config, error) {
	c := Defaults()
	if path == "" {
		return c, nil
	}
	var f Config
	if err := hclsimple.DecodeFile(path, nil, &f); err != nil {
		var diags hcl.Diagnostics
		if errors.As(err, &diags) && len(diags) > 1 {
			// hcl's own message names the first and counts the rest: an
			// operator fixing a config wants every one at once
			lines := make([]string, 0, len(diags))
			for _, d := range diags {
				lines = append(lines, d.Error())
			}
			return c, fmt.Errorf("config %s: %d problems:\n  %s", path, len(diags), strings.Join(lines, "\n  "))
		}
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if f.Listen != "" {
		c.Listen = f.Listen
	}
	c.MetricsListen = f.MetricsListen
	if f.DataDir != "" {
		c.DataDir = f.DataDir
	}
	if f.Payments != "" {
		c.Payments = f.Payments
	}
	if f.CallTimeout != "" {
		c.CallTimeout = f.CallTimeout
	}
	if f.ShutdownGrace != "" {
		c.ShutdownGrace = f.ShutdownGrace
	}
	if f.LogLevel != "" {
		c.LogLevel = f.LogLevel
	}
	if f.LogFormat != "" {
		c.LogFormat = f.LogFormat
	}
	if f.Store != "" {
		c.Store = f.Store
	}
	c.HouseWallets = f.HouseWallets
	c.TrustedProxies = f.TrustedProxies
	if f.Network != "" {
		c.Network = f.Network
	}
	c.PayTo, c.FeePayer, c.PublicURL, c.SolanaRPC = f.PayTo, f.FeePayer, f.PublicURL, f.SolanaRPC
	if c.KeysSecretFile = f.KeysSecretFile; c.KeysSecretFile != "" && !filepath.IsAbs(c.KeysSecretFile) {
		c.KeysSecretFile = filepath.Join(filepath.Dir(path), c.KeysSecretFile)
	}
	if c.FeePayerKeyFile = f.FeePayerKeyFile; c.FeePayerKeyFile != "" && !filepath.IsAbs(c.FeePayerKeyFile) {
		c.FeePayerKeyFile = filepath.Join(filepath.Dir(path), c.FeePayerKeyFile)
	}
	if f.FMV != nil {
		fmv := *f.FMV
		if !filepath.IsAbs(fmv.RatesFile) {
			fmv.RatesFile = filepath.Join(filepath.Dir(path), fmv.RatesFile)
		}
		c.FMV = &fmv
	}
	c.Admission = f.Admission
	c.StrictPlugins = f.StrictPlugins
	if f.UnpaidPerMinute < 0 {
		return c, errors.New("unpaid_per_minute: a count of requests, 0 for the default (60)")
	}
	c.UnpaidPerMinute = f.UnpaidPerMinute
	c.PluginDir = filepath.Dir(path)
	if f.PluginDir != "" {
		c.PluginDir = f.PluginDir
		if !filepath.IsAbs(c.PluginDir) {
			c.PluginDir = filepath.Join(filepath.Dir(path), f.PluginDir)
		}
	}
	c.Plugins = f.Plugins
	for i, p := range c.Plugins {
		if p.Kind == "" {
			c.Plugins[i].Kind = "family"
		}
		if k := c.Plugins[i].Kind; k != "family" && k != "adapter" {
			return c, fmt.Errorf("config %s: plugin %q: kind must be family or adapter", path, p.Name)
		}
	}
	return c, nil
}

// Timeout parses CallTimeout.
func (c Config) Timeout() (time.Duration, error) {
	d, err := time.ParseDuration(c.CallTimeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("call_timeout %q: must be a positive duration", c.CallTimeout)
	}
	return d, nil
}

// Grace parses ShutdownGrace: after SIGTERM the host stops taking
// connections and lets the requests it has finish for at most this long,
// then cuts the rest (a paid one keeps its claim, redeemable by a re-send
// to any host) and exits. A slow client cannot hold a stopping host past
// it.
func (c Config) Grace() (time.Duration, error) {
	d, err := time.ParseDuration(c.ShutdownGrace)
	if err != nil || d <= 0 {
		return 0, errors.New("shutdown_grace: must be a positive duration")
	}
	return d, nil
}

// LoggerOptions are the host log's level and format from LogLevel and
// LogFormat (either in any case). A value outside them is refused rather
// than read as the default: a mistyped "jsn" would otherwise ship text to
// a parser that drops it.
func (c Config) LoggerOptions() (*hclog.LoggerOptions, error) {
	o := &hclog.LoggerOptions{}
	switch strings.ToLower(strings.TrimSpace(c.LogFormat)) {
	case "text", "":
	case "json":
		o.JSONFormat = true
	default:
		return nil, errors.New("log_format (--log-format): must be text or json")
	}
	switch l := strings.ToLower(strings.TrimSpace(c.LogLevel)); l {
	case "trace", "debug", "info", "warn", "error":
		o.Level = hclog.LevelFromString(l)
	case "":
		o.Level = hclog.Info
	default:
		return nil, errors.New("log_level (--log-level): must be trace, debug, info, warn or error")
	}
	return o, nil
}

// DefaultPath is the config `make build` writes beside the binary, used
// when no --config is given and it exists.
func DefaultPath() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), "assay.hcl")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return p
}

// Problems is every mistake in c that can be told without the network or
// the store, each one line naming its setting (and flag) and what it
// must be: an operator fixing a config sees them all at once, not one a
// start. cores sizes the admission defaults, as at serve.
func (c Config) Problems(cores int) []string {
	var out []string
	add := func(err error) {
		if err != nil {
			out = append(out, err.Error())
		}
	}
	_, err := c.LoggerOptions()
	if err != nil {
		// both of the logger's settings, not only the first
		add(err)
		if _, err2 := (Config{LogLevel: c.LogLevel}).LoggerOptions(); err2 != nil && err2.Error() != err.Error() {
			add(err2)
		}
	}
	_, err = c.Timeout()
	add(err)
	_, err = c.Grace()
	add(err)
	_, err = c.AdmissionLimits(cores)
	add(err)
	_, err = c.Proxies()
	add(err)
	switch p := c.Payments; {
	case p == "off":
	case p == "local" && c.SolanaRPC == "":
		out = append(out, "payments (--payments) local settles on a Solana chain and needs its node: set solana_rpc (--solana-rpc URL); "+
			"a host that takes no money names it: --payments house (payments checked, nothing settles) or --payments off")
	case p == "house" && c.SolanaRPC != "":
		out = append(out, "payments (--payments) house settles nothing, but solana_rpc is set: for payments settled on that chain use --payments local")
	case p == "local", p == "house":
	default:
		if u, err := url.Parse(p); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, fmt.Sprintf("payments (--payments) %q: expected off, house, local or a facilitator URL", p))
		}
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			out = append(out, fmt.Sprintf("metrics_listen (--metrics-listen) %q: expected host:port", c.MetricsListen))
		} else if c.MetricsListen == c.Listen {
			out = append(out, "metrics_listen (--metrics-listen) is the public listen address: give the metrics an address of their own")
		}
	}
	if b, err := solana.DecodeBase58(c.PayTo); c.PayTo != "" && (err != nil || len(b) != 32) {
		out = append(out, "pay_to (--pay-to): not a Solana address (base58 of 32 bytes)")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, "public_url (--public-url): must be an absolute http(s) URL")
		}
	}
	if c.SolanaRPC != "" {
		if u, err := url.Parse(c.SolanaRPC); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, "solana_rpc (--solana-rpc): must be an absolute http(s) URL")
		}
	}
	return out
}
