// Package testhost builds plugin binaries and runs a real host in process
// for the host's integration tests, fuzzers and benchmarks.
package testhost

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/admission"
	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/ledger"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/senderlimit"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk"
)

var (
	buildMu  sync.Mutex
	built    = map[string]string{}
	buildDir string
	// baseTemp is TMPDIR as the process started: tests that point TMPDIR
	// at a scratch dir they inspect must not find (or delete) the builds.
	baseTemp = os.TempDir()
)

// Plugin returns the path of a plugin binary built from pkg (a module-
// relative package path such as "plugins/stream-divergence"). With
// ASSAY_BIN set (make test), the binary make build put there is used.
func Plugin(tb testing.TB, pkg string) string {
	tb.Helper()
	return Binary(tb, pkg, "assay-"+filepath.Base(pkg))
}

// Binary returns the path of the binary name built from pkg, taken from
// ASSAY_BIN when make build put it there.
func Binary(tb testing.TB, pkg, name string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[pkg]; ok {
		return p
	}
	if dir := os.Getenv("ASSAY_BIN"); dir != "" {
		if p := filepath.Join(dir, name); fileExists(p) {
			built[pkg] = p
			return p
		}
	}
	if buildDir == "" {
		d, err := os.MkdirTemp(baseTemp, "assay-plugins-")
		if err != nil {
			tb.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, name)
	// stamped as make build stamps (host/version): a test build names
	// itself, where -buildvcs=false or a tree without .git would say
	// "unknown" like any other unstamped build
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/assay-audit/assay/host/version.stamped=test-build", "-o", out, "./"+pkg)
	cmd.Dir = moduleRoot(tb)
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s", pkg, err, msg)
	}
	built[pkg] = out
	return out
}

// Cleanup removes the plugins this process built; a package's TestMain
// calls it after m.Run.
func Cleanup() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir = ""
		built = map[string]string{}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func moduleRoot(tb testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// Log is a goroutine-safe buffer the host logs into.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is everything logged so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Host is a running host over real plugin processes.
type Host struct {
	URL      string
	DataDir  string
	Log      *Log
	Keys     *signing.Keyring
	Store    *store.Store
	Metrics  *metrics.Metrics
	Families map[string]*pluginhost.Family
	Adapters []*pluginhost.Adapter
	Server   *server.Server
	Board    *servicestate.Board
}

// Options tune Start.
type Options struct {
	CallTimeout time.Duration
	// Env is added to each plugin's environment.
	Env []string
	// Store is a store spec; empty means SQLite in the data dir.
	Store string
	// Now is the host's clock; nil means the wall clock.
	Now func() time.Time
	// NoFreeTier turns the free tier off (benchmarks of the bare path).
	NoFreeTier bool
	// Adapters are adapter plugin packages to load and route formats to.
	Adapters []string
	// ExplainWithheld is server.Config's: a withheld answer names its rule.
	ExplainWithheld bool
	// AdapterBackoff is the adapters' first restart delay (default 20 ms):
	// long enough, a test sees a restarting adapter.
	AdapterBackoff time.Duration
	// InlineFamilies and InlineAdapters send those plugins every body on
	// the gRPC stream (pluginhost.Options.InlineBodies).
	InlineFamilies, InlineAdapters bool
	// LocalAdapters are adapters InProcess runs in the test's process.
	LocalAdapters []sdk.Adapter
	// Gate builds the payment gate over the host's store; nil means
	// payments off.
	Gate func(tb testing.TB, st *store.Store) payment.Gate
	// Admission bounds each service's concurrent work (zero: no bound).
	Admission admission.Limits
	// Board gives the host a stop-serving board over its store (Host.Board).
	Board bool
	// Senders limits each client's costly unpaid work (nil: no limit).
	Senders *senderlimit.Limiter
	// TrustedProxies are server.Config's.
	TrustedProxies []netip.Prefix
}

// memory opens the store, free tier and ledger writer for a test host.
func (h *Host) memory(tb testing.TB, opts Options) (*freetier.Gate, *ledger.Writer) {
	tb.Helper()
	st, err := store.Open(context.Background(), opts.Store, h.DataDir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	h.Store = st
	h.Metrics = metrics.New()
	writer := &ledger.Writer{Store: st}
	if opts.NoFreeTier {
		return nil, writer
	}
	free, err := freetier.New(context.Background(), st)
	if err != nil {
		tb.Fatal(err)
	}
	return free, writer
}

// Start runs a host with the given plugin packages loaded.
func Start(tb testing.TB, opts Options, pkgs ...string) *Host {
	tb.Helper()
	h := &Host{DataDir: tb.TempDir(), Log: &Log{}, Families: map[string]*pluginhost.Family{}}
	log := hclog.New(&hclog.LoggerOptions{Name: "assay", Level: hclog.Trace, Output: h.Log, JSONFormat: true})
	keys, err := signing.Open(h.DataDir)
	if err != nil {
		tb.Fatal(err)
	}
	h.Keys = keys
	router := pluginhost.NewRouter()
	for _, pkg := range opts.Adapters {
		path := Plugin(tb, pkg)
		sum, err := pluginhost.PinOf(path)
		if err != nil {
			tb.Fatal(err)
		}
		a, err := pluginhost.StartAdapter(context.Background(), pluginhost.Spec{Name: filepath.Base(pkg), Path: path, SHA256: sum},
			pluginhost.Options{Logger: log, Env: append([]string{"PATH=" + os.Getenv("PATH")}, opts.Env...), MinBackoff: cmp.Or(opts.AdapterBackoff, 20*time.Millisecond), InlineBodies: opts.InlineAdapters})
		if err != nil {
			tb.Fatalf("start adapter %s: %v", pkg, err)
		}
		tb.Cleanup(a.Close)
		if err := router.Add(a); err != nil {
			tb.Fatal(err)
		}
		h.Adapters = append(h.Adapters, a)
	}
	var services []server.Service
	for _, pkg := range pkgs {
		path := Plugin(tb, pkg)
		sum, err := pluginhost.PinOf(path)
		if err != nil {
			tb.Fatal(err)
		}
		f, err := pluginhost.StartFamily(context.Background(), pluginhost.Spec{Name: filepath.Base(pkg), Path: path, SHA256: sum},
			pluginhost.Options{Logger: log, Env: append([]string{"PATH=" + os.Getenv("PATH")}, opts.Env...), MinBackoff: 20 * time.Millisecond, InlineBodies: opts.InlineFamilies}, router)
		if err != nil {
			tb.Fatalf("start %s: %v", pkg, err)
		}
		tb.Cleanup(f.Close)
		h.Families[f.Description().GetService()] = f
		services = append(services, server.Service{Desc: f.Description(), Backend: server.FamilyBackend{Family: f}})
	}
	free, writer := h.memory(tb, opts)
	for name, f := range h.Families {
		h.Metrics.PluginRestarts("family", name, f.Restarts)
	}
	for _, a := range h.Adapters {
		h.Metrics.PluginRestarts("adapter", a.Description().GetFormatId(), a.Restarts)
	}
	var gate payment.Gate
	if opts.Gate != nil {
		gate = opts.Gate(tb, h.Store)
	}
	if opts.Board {
		h.Board = servicestate.New(h.Store, log, opts.Now)
	}
	h.Server = server.New(server.Config{Services: services, Keys: keys, Logger: log, CallTimeout: opts.CallTimeout,
		FreeTier: free, Ledger: writer, Metrics: h.Metrics, Now: opts.Now, Payments: gate, Admission: opts.Admission, ExplainWithheld: opts.ExplainWithheld,
		States: h.Board, Adapters: router, Senders: opts.Senders, TrustedProxies: opts.TrustedProxies})
	ts := httptest.NewServer(h.Server)
	tb.Cleanup(ts.Close)
	h.URL = ts.URL
	return h
}

// String names the host for failure messages.
func (h *Host) String() string { return fmt.Sprintf("host at %s", h.URL) }

type localBackend struct {
	f        sdk.Family
	adapters sdk.AdapterCaller
}

func (b localBackend) Open(ctx context.Context) (server.Session, error) {
	return &sdk.LocalSession{Family: b.f, Ctx: ctx, Adapters: b.adapters}, nil
}

// InProcess is a host whose families run in the test's own process, behind
// the same server: the baseline for the plugin boundary's cost.
func InProcess(tb testing.TB, opts Options, fams ...sdk.Family) *Host {
	tb.Helper()
	h := &Host{DataDir: tb.TempDir(), Log: &Log{}}
	keys, err := signing.Open(h.DataDir)
	if err != nil {
		tb.Fatal(err)
	}
	h.Keys = keys
	var services []server.Service
	local := sdk.LocalAdapters{}
	for _, a := range opts.LocalAdapters {
		local[a.Describe().GetFormatId()] = a
	}
	for _, f := range fams {
		services = append(services, server.Service{Desc: f.Describe(), Backend: localBackend{f, local}})
	}
	free, writer := h.memory(tb, opts)
	h.Server = server.New(server.Config{Services: services, Keys: keys, FreeTier: free, Ledger: writer, Metrics: h.Metrics, Now: opts.Now})
	return h
}

// Lines waits until the store holds at least n ledger lines and returns
// them all: the server commits a paid answer's line just after the answer
// is written, so a client may read the answer before the line exists.
func (h *Host) Lines(tb testing.TB, n int) []store.Line {
	tb.Helper()
	for i := 0; ; i++ {
		lines, err := h.Store.Lines(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if len(lines) >= n || i == 500 {
			return lines
		}
		time.Sleep(10 * time.Millisecond)
	}
}
