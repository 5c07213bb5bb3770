package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/assay-audit/assay/host/config"
	"github.com/assay-audit/assay/host/freetier"
	"github.com/assay-audit/assay/host/metrics"
	"github.com/assay-audit/assay/host/payment"
	"github.com/assay-audit/assay/host/pluginhost"
	"github.com/assay-audit/assay/host/selftest"
	"github.com/assay-audit/assay/host/server"
	"github.com/assay-audit/assay/host/servicestate"
	"github.com/assay-audit/assay/host/signing"
	"github.com/assay-audit/assay/host/store"
	"github.com/assay-audit/assay/sdk"
)

// plugins are the configured plugins, started: adapters first (a family
// reaches them through the router as soon as it starts), then families.
type plugins struct {
	services []server.Service
	families []*pluginhost.Family
	closers  []func()
}

func (p *plugins) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}

// startPlugins starts the config's adapters and the families only names
// (every family when only is empty). The caller closes what it returns,
// also on error.
func startPlugins(ctx context.Context, cfg config.Config, log hclog.Logger, only string) (*plugins, error) {
	p := &plugins{}
	router := pluginhost.NewRouter()
	for _, pl := range cfg.Plugins {
		if pl.Kind != "adapter" {
			continue
		}
		a, err := pluginhost.StartAdapter(ctx, pluginhost.Spec{Name: pl.Name, Path: pl.Path, SHA256: pl.SHA256},
			pluginhost.Options{Logger: log, Dir: cfg.PluginDir, Env: pluginEnv()})
		if err != nil {
			return p, err
		}
		p.closers = append(p.closers, a.Close)
		if err := router.Add(a); err != nil {
			return p, err
		}
		log.Info("adapter loaded", "plugin", pl.Name, "format", a.Description().GetFormatId())
	}
	seen := map[string]bool{}
	for _, pl := range cfg.Plugins {
		if pl.Kind != "family" || only != "" && pl.Name != only {
			continue
		}
		f, err := pluginhost.StartFamily(ctx, pluginhost.Spec{Name: pl.Name, Path: pl.Path, SHA256: pl.SHA256},
			pluginhost.Options{Logger: log, Dir: cfg.PluginDir, Env: pluginEnv()}, router)
		if err != nil {
			return p, err
		}
		p.closers = append(p.closers, f.Close)
		p.families = append(p.families, f)
		d := f.Description()
		if seen[d.GetService()] {
			return p, fmt.Errorf("plugin %s: service %q is already loaded", pl.Name, d.GetService())
		}
		seen[d.GetService()] = true
		p.services = append(p.services, server.Service{Desc: d, Backend: server.FamilyBackend{Family: f}})
		log.Info("family loaded", "plugin", pl.Name, "service", d.GetService(), "criteria", d.GetCriteriaId())
	}
	return p, nil
}

func keyOf(svc server.Service) servicestate.Key {
	d := svc.Desc
	return servicestate.Key{Service: d.GetService(), CriteriaID: d.GetCriteriaId(), CriteriaRevision: d.GetCriteriaRevision()}
}

// runCorpus runs a family's own corpus (the one its criteria pin) against
// its plugin behind a host of its own: the same routes, payments off, a
// free tier in a temporary store (the corpus is synthetic: nothing
// submitted reaches that file), answers signed with keys and checked
// against them.
func runCorpus(ctx context.Context, svc server.Service, keys *signing.Keyring) (selftest.Result, error) {
	c, err := selftest.Parse(svc.Desc.GetCorpus(), svc.Desc.GetCorpusSha256())
	if err != nil {
		if len(svc.Desc.GetCorpus()) == 0 {
			return selftest.Result{}, errors.New("the family ships no corpus")
		}
		return selftest.Result{}, err
	}
	tmp, err := os.MkdirTemp("", "assay-selftest-")
	if err != nil {
		return selftest.Result{}, err
	}
	defer os.RemoveAll(tmp)
	st, err := store.OpenSQLite(ctx, filepath.Join(tmp, "selftest.db"))
	if err != nil {
		return selftest.Result{}, err
	}
	defer st.Close()
	free, err := freetier.New(ctx, st)
	if err != nil {
		return selftest.Result{}, err
	}
	h := server.New(server.Config{Services: []server.Service{svc}, Keys: keys, FreeTier: free, Payments: payment.Off{}, Metrics: metrics.New()})
	jwks, err := json.Marshal(keys.JWKS())
	if err != nil {
		return selftest.Result{}, err
	}
	return selftest.Run(ctx, h, jwks, c), nil
}

// launchSelfTests runs every family's corpus, the families side by side,
// before the listener opens; a family whose corpus does not pass whole is
// stopped on this host ("corpus failed at launch: N of M", N the cases
// that failed), the others are served.
func launchSelfTests(ctx context.Context, services []server.Service, keys *signing.Keyring, board *servicestate.Board, log hclog.Logger) {
	var wg sync.WaitGroup
	for _, svc := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := svc.Desc.GetService()
			r, err := runCorpus(ctx, svc, keys)
			switch {
			case err != nil:
				board.StopLocal(keyOf(svc), "corpus not run at launch: "+err.Error(), "launch self-test")
				log.Error("corpus not run at launch: not served", "service", name, "error", err)
			case !r.OK():
				board.StopLocal(keyOf(svc), fmt.Sprintf("corpus failed at launch: %d of %d", r.Cases-r.Passed, r.Cases), "launch self-test")
				for _, f := range r.Failures[:min(len(r.Failures), 5)] {
					log.Error("corpus case failed", "service", name, "case", f)
				}
				log.Error("corpus failed at launch: not served", "service", name, "cases", r.Cases, "passed", r.Passed, "ms", r.Elapsed.Milliseconds())
			default:
				log.Info("corpus passed at launch", "service", name, "cases", r.Cases, "passed", r.Passed, "ms", r.Elapsed.Milliseconds())
			}
		}()
	}
	wg.Wait()
}

// operator names who ran a service command.
func operator() string {
	who := "operator"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who += ":" + u.Username
	}
	if h, err := os.Hostname(); err == nil {
		who += "@" + h
	}
	return who
}

// serviceCmd is `assay service stop|resume|status`.
func serviceCmd(sub string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("service "+sub, flag.ContinueOnError)
	cfgPath := fs.String("config", "", "HCL config file (default: assay.hcl beside the binary, if present)")
	dataDir := fs.String("data-dir", "", "data directory (default ./var)")
	storeSpec := fs.String("store", "", "sqlite (default), sqlite:PATH, or a postgres:// URL")
	reason := fs.String("reason", "", "stop: why, as every refusal of the service will print it")
	asJSON := fs.Bool("json", false, "status: machine-readable JSON")
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		// the service may come before the flags (`stop NAME --reason …`)
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if name == "" && fs.NArg() == 1 {
		name = fs.Arg(0)
	}
	cfg, err := loadConfig(*cfgPath, func(c *config.Config) map[*string]*string {
		return map[*string]*string{dataDir: &c.DataDir, storeSpec: &c.Store}
	})
	if err != nil {
		return err
	}
	switch sub {
	case "stop", "resume":
		if name == "" || fs.NArg() > 1 || fs.NArg() == 1 && fs.Arg(0) != name {
			return fmt.Errorf("service %s: name one service\n%s", sub, usage)
		}
	case "status":
	default:
		return fmt.Errorf("service: stop, resume or status\n%s", usage)
	}
	if sub == "stop" {
		if err := servicestate.CheckReason(*reason); err != nil {
			return fmt.Errorf("service stop: --reason: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, cfg.Store, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	log := hclog.New(&hclog.LoggerOptions{Name: "assay", Level: hclog.Warn, Output: os.Stderr})
	ps, err := startPlugins(ctx, cfg, log, "")
	defer ps.Close()
	if err != nil {
		return err
	}
	board := servicestate.New(st, log, nil)
	if err := board.Refresh(ctx); err != nil {
		return err
	}
	if sub == "status" {
		return serviceStatus(ctx, st, board, ps.services, *asJSON, stdout)
	}
	var svc *server.Service
	for i := range ps.services {
		if ps.services[i].Desc.GetService() == name {
			svc = &ps.services[i]
		}
	}
	if svc == nil {
		return fmt.Errorf("service %s: %q is not a family in the config", sub, name)
	}
	k := keyOf(*svc)
	if sub == "stop" {
		if err := board.Stop(ctx, k, *reason, operator()); err != nil {
			return err
		}
		_, err := fmt.Fprintf(stdout, "stopped %s: every host on the store answers 503 service_stopped within a second\n", k)
		return err
	}
	// resume: the corpus the criteria pin, run against the plugin binary
	// every host runs (the config pins its SHA-256), must pass whole
	tmp, err := os.MkdirTemp("", "assay-resume-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	keys, err := signing.Open(tmp)
	if err != nil {
		return err
	}
	r, err := runCorpus(ctx, *svc, keys)
	if err != nil {
		return fmt.Errorf("service resume %s: the corpus did not run: %w", name, err)
	}
	fmt.Fprintf(stdout, "corpus %s: %d of %d cases passed (%d ms)\n", svc.Desc.GetCorpusId(), r.Passed, r.Cases, r.Elapsed.Milliseconds())
	if !r.OK() {
		for _, f := range r.Failures[:min(len(r.Failures), 10)] {
			fmt.Fprintf(stdout, "  failed: %s\n", f)
		}
		return fmt.Errorf("service resume %s: refused: the corpus must pass whole", name)
	}
	passed, cases := int64(r.Passed), int64(r.Cases)
	if _, err := st.AppendServiceEvent(ctx, store.ServiceEvent{At: time.Now(), Service: k.Service, CriteriaID: k.CriteriaID,
		CriteriaRevision: k.CriteriaRevision, Action: store.ServiceResume, Reason: "corpus passed", Actor: operator(),
		CorpusPassed: &passed, CorpusCases: &cases}); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "resumed %s: every host on the store serves it within a second\n", k)
	return err
}

type statusRow struct {
	Service          string `json:"service"`
	CriteriaID       string `json:"criteria_id"`
	CriteriaRevision string `json:"criteria_revision"`
	State            string `json:"state"`
	Reason           string `json:"reason,omitempty"`
	Since            string `json:"since,omitempty"`
	By               string `json:"by,omitempty"`
	Configured       bool   `json:"configured"`
}

// serviceStatus lists every configured service version and every one the
// store has rows for, with its state.
func serviceStatus(ctx context.Context, st *store.Store, board *servicestate.Board, services []server.Service, asJSON bool, stdout io.Writer) error {
	rows := map[servicestate.Key]*statusRow{}
	for _, svc := range services {
		k := keyOf(svc)
		rows[k] = &statusRow{Service: k.Service, CriteriaID: k.CriteriaID, CriteriaRevision: k.CriteriaRevision, Configured: true}
	}
	latest, err := st.LatestServiceEvents(ctx)
	if err != nil {
		return err
	}
	for _, e := range latest {
		k := servicestate.Key{Service: e.Service, CriteriaID: e.CriteriaID, CriteriaRevision: e.CriteriaRevision}
		if rows[k] == nil {
			rows[k] = &statusRow{Service: k.Service, CriteriaID: k.CriteriaID, CriteriaRevision: k.CriteriaRevision}
		}
		rows[k].Since, rows[k].By = sdk.Instant(e.At), e.Actor
		switch {
		case e.Action == store.ServiceStop:
			rows[k].Reason = e.Reason
		case e.CorpusPassed != nil && e.CorpusCases != nil:
			rows[k].Reason = fmt.Sprintf("resumed: corpus %d of %d passed", *e.CorpusPassed, *e.CorpusCases)
		}
	}
	out := []statusRow{}
	for k, r := range rows {
		r.State = "serving"
		if board.State(k).Stopped {
			r.State = "stopped"
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Service+"\x00"+out[i].CriteriaID+"\x00"+out[i].CriteriaRevision < out[j].Service+"\x00"+out[j].CriteriaID+"\x00"+out[j].CriteriaRevision
	})
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tCRITERIA\tSTATE\tSINCE\tBY\tREASON")
	for _, r := range out {
		since, by := r.Since, r.By
		if since == "" {
			since, by = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\t%s\n", r.Service, r.CriteriaID, r.CriteriaRevision, r.State, since, by, r.Reason)
	}
	return tw.Flush()
}
