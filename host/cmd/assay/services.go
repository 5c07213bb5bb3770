package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sync"
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
	"github.com/assay-audit/assay/sdk/canary"
)

// plugins are the configured plugins, started: adapters first (a family
// reaches them through the router as soon as it starts), then families.
type plugins struct {
	services []server.Service
	families []*pluginhost.Family
	router   *pluginhost.Router
	closers  []func()
	// leftOut are the plugins that could not start (not strict_plugins)
	leftOut []string
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
	router := pluginhost.NewRouter()
	p := &plugins{router: router}
	for _, pl := range cfg.Plugins {
		if pl.Kind != "adapter" {
			continue
		}
		a, err := pluginhost.StartAdapter(ctx, pluginhost.Spec{Name: pl.Name, Path: pl.Path, SHA256: pl.SHA256},
			pluginhost.Options{Logger: log, Dir: cfg.PluginDir, Env: pluginEnv()})
		if err != nil {
			if err := p.leaveOut(cfg, log, pl, err); err != nil {
				return p, err
			}
			continue
		}
		p.closers = append(p.closers, a.Close)
		if err := router.Add(a); err != nil {
			// a second adapter for one format is this plugin's problem, not
			// the host's: the first stays, this one is left out and named
			if err := p.leaveOut(cfg, log, pl, err); err != nil {
				return p, err
			}
			continue
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
			if err := p.leaveOut(cfg, log, pl, err); err != nil {
				return p, err
			}
			continue
		}
		p.closers = append(p.closers, f.Close)
		d := f.Description()
		if seen[d.GetService()] {
			if err := p.leaveOut(cfg, log, pl, fmt.Errorf("plugin %s: service %q is already loaded from another plugin", pl.Name, d.GetService())); err != nil {
				return p, err
			}
			continue
		}
		seen[d.GetService()] = true
		p.families = append(p.families, f)
		p.services = append(p.services, server.Service{Desc: d, Backend: server.FamilyBackend{Family: f}})
		log.Info("family loaded", "plugin", pl.Name, "service", d.GetService(), "criteria", d.GetCriteriaId())
	}
	if only == "" {
		warnIdleAdapters(log, router.Status(), p.services)
	}
	return p, nil
}

// warnIdleAdapters names each adapter no loaded criteria will ever call:
// its format is in no loaded family's accepted formats, or the family it
// names is not loaded. It is served by nobody, silently, otherwise.
func warnIdleAdapters(log hclog.Logger, adapters []pluginhost.AdapterStatus, services []server.Service) {
	for _, a := range adapters {
		accepted, known := false, false
		for _, svc := range services {
			accepted = accepted || slices.Contains(svc.Desc.GetFormats(), a.Format)
			known = known || svc.Desc.GetCriteriaId() == a.Family
		}
		// routing is by format id: whether requests reach an adapter is
		// whether a loaded family accepts its format, whatever family it
		// names (the catalog's accepted_by_loaded_criteria says the same)
		switch {
		case !accepted && !known:
			log.Warn("adapter names a family whose criteria are not loaded; no request will reach it", "format", a.Format, "family", a.Family)
		case !accepted:
			log.Warn("adapter's format is not one the loaded criteria accept (a new format needs a criteria revision); no request will reach it",
				"format", a.Format, "family", a.Family)
		case !known:
			log.Warn("adapter names a family whose criteria are not loaded, but loaded criteria accept its format: requests of that format reach it",
				"format", a.Format, "family", a.Family)
		}
	}
}

// leaveOut takes a plugin that could not start out of this host's run
// (one plugin's defect never stops the others), or, with strict_plugins,
// fails the start as before.
func (p *plugins) leaveOut(cfg config.Config, log hclog.Logger, pl config.Plugin, err error) error {
	if cfg.StrictPlugins {
		return err
	}
	log.Error("plugin could not start and is left out of this host; the others are served (strict_plugins makes this stop the host)",
		"plugin", pl.Name, "kind", pl.Kind, "path", pl.Path, "error", err)
	p.leftOut = append(p.leftOut, pl.Name)
	return nil
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
	h, c, done, err := selfTestHost(ctx, svc, keys)
	if err != nil {
		return selftest.Result{}, err
	}
	defer done()
	current := func() []byte {
		jwks, _ := json.Marshal(keys.JWKS())
		return jwks
	}
	return selftest.Run(ctx, h, current, c), nil
}

// selfTestHost is a family's corpus, parsed and pinned, and a host of its
// own to send it to; done removes the host's temporary store.
func selfTestHost(ctx context.Context, svc server.Service, keys *signing.Keyring) (http.Handler, *selftest.Corpus, func(), error) {
	c, err := selftest.Parse(svc.Desc.GetCorpus(), svc.Desc.GetCorpusSha256())
	if err != nil {
		if len(svc.Desc.GetCorpus()) == 0 {
			return nil, nil, nil, errors.New("the family ships no corpus")
		}
		return nil, nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "assay-selftest-")
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(tmp, "selftest.db"))
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, nil, err
	}
	done := func() { st.Close(); os.RemoveAll(tmp) }
	free, err := freetier.New(ctx, st)
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	h := server.New(server.Config{Services: []server.Service{svc}, Keys: keys, FreeTier: free, Payments: payment.Off{}, Metrics: metrics.New(),
		ExplainWithheld: true})
	return h, c, done, nil
}

// launchCustody runs the canary check (selftest.Custody) on each family
// that passed its corpus at launch, before the listener opens (its
// requests reach the plugin outside the public host's admission): about
// 0.2 s for stream-divergence, 1.2 s for context-audit, the families side
// by side. It only warns.
func launchCustody(ctx context.Context, services []server.Service, keys *signing.Keyring, log hclog.Logger) {
	for _, svc := range services {
		if ctx.Err() != nil {
			return
		}
		h, c, done, err := selfTestHost(ctx, svc, keys)
		if err != nil {
			continue // the launch self-test logged it
		}
		started := time.Now()
		r, err := selftest.Custody(ctx, h, c, svc.Desc.GetTripwires())
		done()
		if err != nil || ctx.Err() != nil {
			continue
		}
		warnCustody(log, svc.Desc.GetService(), r, time.Since(started))
	}
}

// failuresLogged bounds the failing cases a launch logs one by one: a
// corpus that fails whole (a family that cannot answer) would otherwise
// bury the rest of the log.
const failuresLogged = 50

// launchSelfTests runs every family's corpus, the families side by side,
// before the listener opens; a family whose corpus does not pass whole is
// stopped on this host ("corpus failed at launch: N of M cases failed"),
// the others are served.
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
				board.StopLocal(keyOf(svc), fmt.Sprintf("corpus failed at launch: %d of %d cases failed", r.Cases-r.Passed, r.Cases), "launch self-test")
				for _, f := range r.Failures[:min(len(r.Failures), failuresLogged)] {
					log.Error("corpus case failed", "service", name, "case", f)
				}
				if n := len(r.Failures) - failuresLogged; n > 0 {
					log.Error("more corpus cases failed than are logged", "service", name, "not_logged", n, "logged", failuresLogged)
				}
				log.Error("corpus failed at launch: not served", "service", name, "cases", r.Cases, "passed", r.Passed, "ms", r.Elapsed.Milliseconds())
			default:
				log.Info("corpus passed at launch", "service", name, "cases", r.Cases, "passed", r.Passed, "ms", r.Elapsed.Milliseconds())
				// then whether what a caller sends comes back: before the
				// listener too, since its requests reach the plugin past
				// the public host's admission
				launchCustody(ctx, []server.Service{svc}, keys, log)
			}
		}()
	}
	wg.Wait()
}

// warnCustody logs what the launch's canary check found: answers that
// print a planted string outside the family's exempt members, and
// accepted cases a caller's string can have withheld. Warnings, not a
// stop: the family passed its corpus, and `assay serve --canary-proof`
// is the operator's refusal to launch on a leak. Each names the case,
// how it was planted and the member's path (a planted name shown as
// <caller>): synthetic text, never a submission.
func warnCustody(log hclog.Logger, service string, c canary.Result, took time.Duration) {
	for _, l := range c.Leaks[:min(len(c.Leaks), failuresLogged)] {
		log.Warn("family answers print caller-chosen strings (docs/self-check.md; assay serve --canary-proof refuses them)", "service", service, "case", l)
	}
	for _, w := range c.Withheld[:min(len(c.Withheld), failuresLogged)] {
		log.Warn("a caller can have this family's answers withheld (docs/self-check.md)", "service", service, "case", w)
	}
	// one line a family, always: sdk/plugintest waits for it
	level := hclog.Info
	if len(c.Leaks)+len(c.Withheld) > 0 {
		level = hclog.Warn
	}
	log.Log(level, "custody check at launch", "service", service, "planted_requests", c.Sent, "leaks", len(c.Leaks), "withheld", len(c.Withheld),
		"ms", took.Milliseconds())
}

// serviceKeys are the service versions of services.
func serviceKeys(services []server.Service) []servicestate.Key {
	out := make([]servicestate.Key, 0, len(services))
	for _, svc := range services {
		out = append(out, keyOf(svc))
	}
	return out
}

// relaunch runs k's corpus again on this host, as at launch: a resume in
// the store asked for it.
func relaunch(ctx context.Context, services []server.Service, keys *signing.Keyring, k servicestate.Key) (bool, string) {
	for _, svc := range services {
		if keyOf(svc) != k {
			continue
		}
		r, err := runCorpus(ctx, svc, keys)
		switch {
		case err != nil:
			return false, "corpus not run on resume: " + err.Error()
		case !r.OK():
			return false, fmt.Sprintf("corpus failed on resume: %d of %d cases failed", r.Cases-r.Passed, r.Cases)
		}
		return true, ""
	}
	return false, "the service is not loaded on this host"
}

// hostLabel names this host in the store's host rows: its machine name
// and the address it listens on.
func hostLabel(listen string) string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "host"
	}
	return name + " " + listen
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
